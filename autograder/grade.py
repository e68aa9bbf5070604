"""``python -m autograder grade``: a whole class, in parallel, resumable.

The stages, and where each runs:

1. collect (main): every submission, one per student (:mod:`autograder.collect`);
2. skip (main): students whose file is unchanged since a finished run
   (content hash in ``DIR/.state/``), unless ``--force``;
3. grade (worker processes, ``--jobs`` of them, each with its own sandbox):
   read, inspect, sanitise, execute, score (:mod:`autograder.worker`);
4. record (main, one student at a time, after that student's process is gone):
   autograded notebook, gradebook, feedback page, state (:mod:`autograder.record`);
5. report (main): ``grades.csv`` and the summary (:mod:`autograder.report`).
"""

import contextlib
import io
import json
import logging
import multiprocessing
import os
import resource
import shutil
import signal
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import alembic.config
import alembic.script
import nbgrader.api
import nbgrader.dbutil
from nbgrader.converters import GenerateAssignment, NbGraderException
from nbgrader.coursedir import CourseDirectory
from tqdm import tqdm

from . import collect, course, notebook, record, report, worker
from .sandbox import Limits


def ensure_gradebook(root, config):
    """The course gradebook's URL, after recording the assignment in it if needed.

    Runs nbgrader's own ``GenerateAssignment`` (as ``nbgrader generate_assignment``
    does) with the release written to a scratch folder, so only the gradebook
    changes.
    """
    coursedir = CourseDirectory(config=config, root=str(root))
    if not record.gradebook_has_assignment(coursedir.db_url):
        with tempfile.TemporaryDirectory(prefix="release-") as scratch:
            coursedir.release_directory = scratch
            coursedir.assignment_id = course.ASSIGNMENT
            converter = GenerateAssignment(coursedir=coursedir, config=config)
            converter.force = True
            log = io.StringIO()
            converter.log.addHandler(logging.StreamHandler(log))
            converter.log.setLevel(logging.WARNING)
            try:
                with _alembic_in_process():
                    converter.start()
            except NbGraderException:
                raise RuntimeError(f"could not set up the gradebook:\n{log.getvalue()}") from None
    return coursedir.db_url


@contextlib.contextmanager
def _alembic_in_process():
    """Have nbgrader learn its schema version without starting ``alembic heads``.

    A new gradebook is stamped with the newest revision of nbgrader's migration
    scripts, which nbgrader finds by running the ``alembic`` command: a second
    Python process importing nbgrader again, seconds before grading can start.
    Alembic's own API reads the same scripts in this process.
    """
    scripts = alembic.config.Config()
    scripts.set_main_option("script_location", nbgrader.dbutil.ALEMBIC_DIR)
    head = alembic.script.ScriptDirectory.from_config(scripts).get_current_head()
    original = nbgrader.api.get_alembic_version
    nbgrader.api.get_alembic_version = lambda: head
    try:
        yield
    finally:
        nbgrader.api.get_alembic_version = original


def snapshot(db_url, into):
    """A read-only copy of the gradebook for the workers, who only look up source cells."""
    source = db_url[len("sqlite:///") :]
    target = Path(into) / "gradebook.db"
    shutil.copy(source, target)
    return f"sqlite:///{target}"


class State:
    """``DIR/.state/<student>.json``: finished students, so a rerun can skip them."""

    def __init__(self, out):
        self.folder = Path(out) / ".state"

    def load(self, student_id):
        path = self.folder / f"{student_id}.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def save(self, student_id, sha256, row):
        record.write_atomic(
            self.folder / f"{student_id}.json",
            json.dumps({"sha256": sha256, "row": row.__dict__}, sort_keys=True),
        )


def _row(result, possible):
    points = dict.fromkeys(possible)
    if result.notebook is None:
        points.update(dict.fromkeys(possible, 0.0))
    else:
        points.update(result.points)
    return report.Row(
        result.student_id, points, sum(possible.values()), result.status, result.detail,
        result.messages,
    )  # fmt: skip


def _grader_error(submission, error):
    return worker.Result(
        submission.student_id, submission.sha256, "grader_error",
        f"the grader failed on this submission ({type(error).__name__}: {error})", {}, {}, None,
    )  # fmt: skip


def _pending(submissions, state, force):
    """``(rows already graded and unchanged, submissions still to grade)``."""
    rows, todo = {}, []
    for sub in submissions:
        saved = state.load(sub.student_id)
        if saved and saved.get("sha256") == sub.sha256 and not force:
            rows[sub.student_id] = report.Row(**saved["row"])
        else:
            todo.append(sub)
    return rows, todo


def run(args):
    """Grade ``args.submissions``; returns the exit status (0 when every student got a row)."""
    root, out = Path(args.course).resolve(), Path(args.out).resolve()
    config = worker.load_config(root)
    if args.timeout is None:
        args.timeout = float(config.Execute.get("timeout", 30))
    submissions = collect.collect(args.submissions, args.pattern)
    possible = notebook.points(notebook.read(root / course.SOURCE))
    state = State(out)
    rows, todo = _pending(submissions, state, args.force)
    print(
        f"{len(submissions)} submission(s): {len(todo)} to grade, "
        f"{len(submissions) - len(todo)} unchanged since the last run",
        file=sys.stderr,
    )
    with tempfile.TemporaryDirectory(prefix="grading-") as scratch:
        # Workers read a copy of the gradebook, made while they start up.
        settings = worker.Settings(
            course_root=str(root),
            db_url=f"sqlite:///{Path(scratch) / 'gradebook.db'}",
            cell_timeout=args.timeout,
            wall_timeout=args.wall,
            limits=Limits(memory=args.memory * 2**20),
            use_bwrap=not args.no_sandbox,
        )
        # A scheduler's or a `timeout` command's SIGTERM stops grading as Ctrl-C does.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        peaks = [0]  # the largest worker's peak memory, KiB
        try:
            _grade_all(
                todo,
                settings,
                args.jobs,
                (root, config, out, scratch),
                state,
                rows,
                possible,
                peaks,
            )
        except KeyboardInterrupt:
            print(
                f"\ninterrupted: {len(rows)} of {len(submissions)} submission(s) graded and kept; "
                "run the same command again to grade the rest",
                file=sys.stderr,
            )
            return 130
        finally:
            signal.signal(signal.SIGTERM, previous)
    ordered = [rows[sub.student_id] for sub in submissions]
    report.write_csv(ordered, list(possible), out / "grades.csv")
    tests = {k: v for k, v in possible.items() if k.startswith("test_")}
    print(report.table(ordered))
    print()
    print(report.summary(ordered, tests))
    main_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"grader peak memory: main {main_kib // 1024} MiB, largest worker {peaks[0] // 1024} MiB")
    print(f"\nwrote {out / 'grades.csv'} and {len(ordered)} feedback page(s) in {out / 'feedback'}")
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _grade_all(todo, settings, jobs, where, state, rows, possible, peaks):
    """Grade ``todo`` in worker processes, recording each result into ``rows`` as it arrives.

    where: ``(course root, nbgrader config, output folder, scratch folder)``;
    peaks: a one-item list that ends up holding the largest worker peak memory (KiB).
    """
    root, config, out, scratch = where
    remaining = {sub.student_id: sub for sub in todo}
    recorder, warned = None, False
    progress = Progress(
        total=len(todo), unit="nb", desc="grading", file=sys.stderr, disable=not todo
    )

    def record_one(sub, result):
        nonlocal warned
        if result.unprotected and not warned:
            warned = True
            _warn(result.unprotected)
        recorder.save(result, sub.modified)
        peaks[0] = max(peaks[0], result.peak_kib)
        rows[sub.student_id] = _row(result, possible)
        if result.status != "grader_error":  # a rerun tries those again
            state.save(sub.student_id, sub.sha256, rows[sub.student_id])
        del remaining[sub.student_id]
        progress.update()

    for _attempt in range(3):
        if not remaining:
            break
        workers = max(1, min(jobs, len(remaining)))
        # Forked, not spawned: a worker starts with this process's imports (over a
        # second of nbgrader and nbconvert) already done. This process runs no
        # threads when it forks (see Progress), and every student process comes
        # from a zygote started afresh, so nothing of ours reaches student code.
        context = multiprocessing.get_context("fork")
        try:
            with ProcessPoolExecutor(workers, context, worker.start, (settings,)) as pool:
                for _ in range(workers):  # start the workers now, while the gradebook is set up
                    pool.submit(worker.ready)
                if recorder is None:
                    db_url = ensure_gradebook(root, config)
                    snapshot(db_url, scratch)
                    recorder = record.Recorder(root, db_url, out, config)
                futures = {pool.submit(worker.grade, sub): sub for sub in remaining.values()}
                try:
                    for future in as_completed(futures):
                        record_one(futures[future], _outcome(future, futures[future]))
                except KeyboardInterrupt:
                    pool.shutdown(wait=False, cancel_futures=True)  # grade nothing more
                    for child in multiprocessing.active_children():
                        child.kill()  # a worker holds nothing unsaved: only this process records
                    raise
        except BrokenProcessPool:
            continue  # a worker died: start a fresh pool for those not yet graded
    progress.close()
    if recorder is None:  # nothing to grade; the gradebook must still exist for formgrader
        recorder = record.Recorder(root, ensure_gradebook(root, config), out, config)
    for sub in list(remaining.values()):  # the pool kept dying: still, everyone gets a row
        record_one(sub, _grader_error(sub, RuntimeError("worker processes kept dying")))
    recorder.close()


def _outcome(future, sub):
    """The worker's :class:`~autograder.worker.Result`, or a ``grader_error`` one."""
    try:
        return future.result()
    except BrokenProcessPool:
        raise
    except Exception as error:
        return _grader_error(sub, error)


class Progress(tqdm):
    """tqdm's progress bar without its monitor thread, which forking must not copy."""

    monitor_interval = 0


def _warn(unprotected):
    lines = "\n".join(f"  - {item}" for item in unprotected)
    print(
        f"\nWARNING: grading WITHOUT these protections:\n{lines}\n"
        "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) and allow user "
        "namespaces to grade untrusted code safely.\n",
        file=sys.stderr,
    )


def default_jobs():
    """All the cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
