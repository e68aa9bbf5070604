"""Grading a whole class of one assignment, in parallel, resumable.

The stages, and where each runs:

1. collect (main): every submission, one per student (:mod:`.collect`);
2. skip (main): students whose files are unchanged since a finished run
   (content hash in ``DIR/.state/``), unless ``force``;
3. grade (worker processes, each with its own sandbox: ``jobs`` local ones, or
   a Dask cluster's, :mod:`.executors`): read, inspect, sanitise, execute,
   score, render feedback (:mod:`.worker`);
4. record (main, one student at a time, after that student's process is gone):
   autograded notebooks and gradebook, then what the gradebook holds read back
   as the student's outcome, their feedback page and rerun state
   (:mod:`.results`); students not regraded are read back too, so a TA's grade,
   comment or a changed due date since the last run shows everywhere;
5. report (main): ``grades.csv``, the class report and the summary, all from
   the outcomes (:mod:`.results`, :mod:`.report`, :mod:`.class_report`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbgrader.preprocessors import Execute
from tqdm import tqdm

from .. import log
from ..sandbox import Limits
from . import (
    class_report,
    collect,
    executors,
    feedback,
    notebook,
    report,
    results,
    worker,
)
from .collect import Submission
from .course import Assignment, course_directory, find_assignment
from .errors import Status, UserError
from .gradebook import ensure_gradebook, sources_hash, stamp_path
from .results import NOT_FINISHED, Outcome, Store, StoredRows

_log = logging.getLogger(__name__)


def dry_run_gradebook(assignment: Assignment, into: Path) -> str:
    """A scratch copy of the course gradebook (or a new one), for a run that must not touch it."""
    coursedir = course_directory(assignment.root, assignment.config)
    course_db = str(coursedir.db_url)
    target = Path(into) / "dry-run.db"
    if course_db.startswith("sqlite:///") and Path(course_db[len("sqlite:///") :]).exists():
        shutil.copy(course_db[len("sqlite:///") :], target)
        stamp = stamp_path(course_db, assignment)
        copied = stamp_path(f"sqlite:///{target}", assignment)
        if stamp is not None and copied is not None and stamp.is_file():
            shutil.copy(stamp, copied)  # what the copy holds is recorded already
    return ensure_gradebook(assignment, f"sqlite:///{target}")


def snapshot(db_url: str, into: Path) -> str:
    """A copy of the gradebook for the workers, who only look up source cells."""
    source = db_url[len("sqlite:///") :]
    target = Path(into) / "gradebook.db"
    shutil.copy(source, target)
    return f"sqlite:///{target}"


def _graded(result: worker.Result, columns: notebook.Columns) -> Outcome:
    """What the worker's grading alone says: a notebook not graded scores 0 in every column."""
    points: dict[str, float | None] = dict.fromkeys(columns.possible)
    for (name, _grade_id), column in columns.of.items():
        if result.notebooks.get(name) is None:
            points[column] = 0.0
    points.update(result.points)
    return Outcome(
        result.student_id,
        points,
        sum(columns.possible.values()),
        str(result.status),
        result.detail,
        result.messages,
        not_attempted=list(result.not_attempted),
    )


def _pending(
    submissions: list[Submission],
    state: Store,
    force: bool,
    settings_key: str,
    ledger: Store | None,
) -> tuple[list[Submission], list[Submission]]:
    """``(submissions unchanged and graded with the same settings, submissions to grade)``.

    ledger: what the course gradebook last recorded for each student (None for a
    dry run); a student is skipped only when the gradebook holds this same grading
    too, so ``grades.csv`` and the gradebook never disagree after a run.
    """
    unchanged, todo = [], []
    for sub in submissions:
        saved = state.load(sub.student_id)
        key = f"{sub.sha256}:{settings_key}"
        recorded = ledger is None or (ledger.load(sub.student_id) or {}).get("sha256") == key
        if saved and saved.get("sha256") == key and recorded and not force:
            unchanged.append(sub)
        else:
            todo.append(sub)
    return unchanged, todo


#: in the course folder: what the gradebook last recorded of each student, per assignment
LEDGER = ".autograder"
WALL = 300.0  #: seconds per notebook, unless the run says otherwise
MEMORY = 2048  #: MiB per student's process, unless the run says otherwise


@dataclass(frozen=True)
class Request:
    """One grading run, as asked for: what to grade, where, and within which limits.

    submissions: a folder (nbgrader's layout or LMS files) or a ``.zip``;
    out: the output folder (``grades.csv``, ``feedback/``, ``report.html``);
    jobs: local worker processes; timeout: seconds per cell; wall: seconds per
    notebook; memory: MiB per student's process; force: regrade students whose
    files did not change; pattern: a regex naming students in LMS file names;
    sandbox: run student code in bubblewrap; dry_run: grade into ``out`` only,
    the course's gradebook and folders untouched; scheduler: a Dask
    scheduler's address, whose workers grade instead of ``jobs`` local
    processes (this process still records everything); students: grade only
    these students of ``submissions``, every other row, page and gradebook
    entry in ``out`` left as it was (empty: the whole class).
    """

    submissions: Path
    assignment: Assignment
    out: Path
    jobs: int
    timeout: float
    wall: float = WALL
    memory: int = MEMORY
    force: bool = False
    pattern: str | None = None
    sandbox: bool = True
    dry_run: bool = False
    scheduler: str | None = None
    students: tuple[str, ...] = ()

    @property
    def settings_key(self) -> str:
        """What a student was graded with: other limits, tests, points or config grade them again.

        The course's side is :func:`~autograder.pipeline.gradebook.sources_hash`:
        the source folder (tests, points, helper files) and the course config.
        """
        limits = f"{self.timeout:g}:{self.wall:g}:{self.memory}:{self.sandbox}"
        return f"{limits}:{sources_hash(self.assignment)[:16]}"


def course_timeout(assignment: Assignment) -> float:
    """The course's seconds per cell: ``c.Execute.timeout``, else nbgrader's own default."""
    configured = assignment.config.Execute.get("timeout")
    return float(configured if configured is not None else Execute.timeout.default_value)


def grade(
    submissions: Path | str,
    *,
    assignment: str | None = None,
    course: Path | str | None = None,
    jobs: int | None = None,
    timeout: float | None = None,
    wall: float = WALL,
    memory: int = MEMORY,
    out: Path | str = "grades",
    force: bool = False,
    pattern: str | None = None,
    sandbox: bool = True,
    dry_run: bool = False,
    scheduler: str | None = None,
    student: list[str] | None = None,
) -> int:
    """Grade every submission at ``submissions``; the exit status (0: every student got a row).

    The options are :class:`Request`'s; jobs defaults to every core this
    process may use, timeout to the course's (:func:`course_timeout`).
    Two runs at once on the same course (or the same ``out``) take turns.
    """
    chosen = find_assignment(course, assignment)
    request = Request(
        Path(submissions),
        chosen,
        Path(out).resolve(),
        default_jobs() if jobs is None else jobs,
        course_timeout(chosen) if timeout is None else timeout,
        wall,
        memory,
        force,
        pattern,
        sandbox,
        dry_run,
        scheduler,
        tuple(dict.fromkeys(student or ())),
    )
    for name in ("jobs", "timeout", "wall", "memory"):
        value = getattr(request, name)
        if value <= 0:
            raise UserError(f"--{name} must be positive, not {value:g}")
    return run(request).status


@dataclass(frozen=True)
class ClassResult:
    """What a grading run gave: its exit status and each student's outcome.

    status: 0 when every student got a row, 130 when interrupted. The
    outcomes stay on disk (:class:`~.results.Store`) and are read one at a
    time when asked for.
    """

    status: int
    out: Path
    student_ids: tuple[str, ...]

    def outcomes(self) -> StoredRows:
        """Every student's outcome, in student order."""
        return StoredRows(Store(self.out), list(self.student_ids))

    def outcome(self, student_id: str) -> Outcome | None:
        """One student's outcome; None if the run did not finish grading them."""
        saved = Store(self.out).load(student_id)
        if saved is None or saved.get("sha256") == NOT_FINISHED:
            return None
        return Outcome(**saved["row"])


def run(request: Request) -> ClassResult:
    """Carry out one grading run (see :func:`grade`)."""
    chosen, out = request.assignment, request.out
    with contextlib.ExitStack() as locks:
        locks.enter_context(results.exclusive(out / ".lock", str(out)))
        if not request.dry_run:
            locks.enter_context(
                results.exclusive(chosen.root / ".grading.lock", f"the course {chosen.root}")
            )
        return _run_locked(request)


def _run_locked(request: Request) -> ClassResult:
    chosen, out, submissions = request.assignment, request.out, request.submissions
    found = collect.collect(submissions, chosen, request.pattern)
    if not found:
        raise UserError(f"no submission of {chosen.id} found in {submissions}")
    columns = notebook.Columns({n: notebook.read(chosen.source(n)) for n in chosen.notebooks})
    state = Store(out)
    # The class DIR holds: this run's students, or with --student everyone it held too.
    found, kept = _chosen(found, request.students, state, submissions)
    ledger = None if request.dry_run else Store(chosen.root / LEDGER, chosen.id)
    settings_key = request.settings_key
    unchanged, todo = _pending(found, state, request.force, settings_key, ledger)
    _log.info(
        f"{len(found)} submission(s): {len(todo)} to grade, "
        f"{len(found) - len(todo)} unchanged since the last run",
        extra=log.TO_STDERR,
    )
    with tempfile.TemporaryDirectory(prefix="grading-") as scratch:
        # Workers read a copy of the gradebook, made while they start up.
        settings = worker.Settings(
            course_root=str(chosen.root),
            assignment_id=chosen.id,
            db_url=f"sqlite:///{Path(scratch) / 'gradebook.db'}",
            cell_timeout=request.timeout,
            wall_timeout=request.wall,
            limits=Limits(memory=request.memory * 2**20),
            use_bwrap=request.sandbox,
            owner_pid=os.getpid(),
        )
        # A scheduler's or a `timeout` command's SIGTERM stops grading as Ctrl-C does.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        recording = Run(chosen, settings, out, Path(scratch), state, columns, settings_key)
        recording.dry_run, recording.ledger = request.dry_run, ledger
        executor = executors.make(settings, request.jobs, request.scheduler, sources_hash(chosen))
        try:
            recording.grade_all(todo, executor)
            recording.refresh_unchanged(unchanged)
            recording.close()
        except KeyboardInterrupt:
            _log.warning(
                f"\ninterrupted: {len(unchanged) + recording.recorded} of {len(found)} "
                "submission(s) graded and kept; run the same command again to grade the rest"
            )
            return ClassResult(130, out, tuple(sub.student_id for sub in found))
        finally:
            signal.signal(signal.SIGTERM, previous)
            executors.close(executor)
    # Read back from disk one at a time, in student order: nothing of the class is held.
    everyone = [sub.student_id for sub in found]
    if kept:  # --student: the class as DIR held it, with these students graded again
        everyone = sorted(set(everyone) | set(kept))
    ordered = StoredRows(state, everyone)
    results.keep_only(out, set(everyone))
    results.write_csv(ordered, list(columns.possible), out / "grades.csv")
    sources = {n: notebook.read(chosen.source(n)) for n in chosen.notebooks}
    page = class_report.render(f"{chosen.id}: the class report", ordered, columns, sources)
    results.write_report(out, page)
    _log.info(report.table(ordered))
    _log.info("")
    _log.info(report.summary(ordered, columns.tests()))
    main_kib = worker.peak_memory_kib()
    worker_mib = recording.peak // 1024
    _log.info(f"grader peak memory: main {main_kib // 1024} MiB, largest worker {worker_mib} MiB")
    _log.info(
        f"\nwrote {out / 'grades.csv'} and {len(ordered)} feedback page(s) in {out / 'feedback'}"
    )
    _log.info(f"what the class got wrong: {out / 'report.html'}")
    return ClassResult(0, out, tuple(everyone))


def _chosen(
    found: list[Submission], students: tuple[str, ...], state: Store, where: Path
) -> tuple[list[Submission], list[str]]:
    """``(submissions to grade or refresh, students whose rows stay as they are)``.

    students: the ids ``--student`` named (empty: the whole class at ``where``).
    An id not found is a user's mistake, said in one line.
    """
    if not students:
        return found, []
    by_id = {sub.student_id: sub for sub in found}
    missing = [s for s in students if s not in by_id]
    if missing:
        some = ", ".join(sorted(by_id)[:8]) + (", ..." if len(by_id) > 8 else "")
        raise UserError(
            f"--student {', '.join(missing)}: no such student in {where} (found: {some})"
        )
    kept = [s for s in state.student_ids() if s not in students]
    return [by_id[s] for s in students], kept


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class Run:
    """One grading run's recording side: results arrive from workers and are kept here."""

    def __init__(
        self,
        assignment: Assignment,
        settings: worker.Settings,
        out: Path,
        scratch: Path,
        state: Store,
        columns: notebook.Columns,
        settings_key: str,
    ) -> None:
        self.assignment, self.settings, self.out, self.scratch = assignment, settings, out, scratch
        self.state, self.columns = state, columns
        self.recorded = 0  # students recorded in this run
        self.settings_key = settings_key
        self.recorder: results.Recorder | None = None
        self.renderer: feedback.Renderer | None = None
        self.warned = False
        self.peak = 0  # the largest worker's peak memory, KiB
        self.dry_run = False  # record into a scratch gradebook and ``out`` only
        self.ledger: Store | None = None  # what the course gradebook holds, per student

    def start_recording(self) -> results.Recorder:
        """Set up the gradebook (and the workers' copy of it) once."""
        if self.recorder is None:
            if self.dry_run:
                db_url = dry_run_gradebook(self.assignment, self.scratch)
                autograded = self.out / "autograded"
            else:
                db_url, autograded = ensure_gradebook(self.assignment), None
            snapshot(db_url, self.scratch)
            self.recorder = results.Recorder(self.assignment, db_url, self.out, autograded)
        return self.recorder

    def record_one(self, sub: Submission, result: worker.Result) -> None:
        """Record one student's grading: gradebook, outcome, page, rerun state."""
        if result.unprotected and not self.warned:
            self.warned = True
            _warn(result.unprotected)
        recorder = self.start_recording()
        recorder.save(result, sub.timestamp, sub.files, sub.lms_id, sub.name)
        self.peak = max(self.peak, result.peak_kib)
        graded = _graded(result, self.columns)
        outcome = self.publish(graded, result.notebooks, result.feedback)
        if result.status == Status.GRADER_ERROR:  # kept for this run's CSV; a rerun grades it
            self.state.save(sub.student_id, NOT_FINISHED, outcome)
            if self.ledger is not None:  # and the exports know it is not final
                self.ledger.save(sub.student_id, NOT_FINISHED, outcome)
        else:
            key = f"{sub.sha256}:{self.settings_key}"
            self.state.save(sub.student_id, key, outcome)
            if self.ledger is not None:
                self.ledger.save(sub.student_id, key, outcome)
        self.recorded += 1

    def publish(
        self,
        shown: Outcome,
        notebooks: dict[str, Any] | None = None,
        page: str | None = None,
        written: bool = False,
    ) -> Outcome:
        """The student's outcome as the gradebook holds it, with a page that says so.

        shown: what ``page`` (the worker's rendering) says, or with ``written``,
        what the page already in the output folder says; the page is rendered
        again only where the gradebook says otherwise (a TA's grade or comment,
        a late penalty). notebooks: the executed notebooks, if at hand (else
        read back from where they were recorded).
        """
        recorder = self.start_recording()
        outcome = results.from_gradebook(recorder.gradebook, self.assignment, self.columns, shown)
        if outcome == shown and page is not None:
            results.write_page(self.out, shown.student_id, page)
            return outcome
        if outcome == shown and written and results.page_path(self.out, shown.student_id).exists():
            return outcome
        if notebooks is None:
            notebooks = {}
            for name in self.assignment.notebooks:
                path = recorder.autograded_path(shown.student_id, name)
                notebooks[name] = notebook.read(path) if path.exists() else None
        if self.renderer is None:
            self.renderer = feedback.Renderer(self.assignment)
        html = self.renderer.render(
            outcome.student_id,
            notebooks,
            self.columns,
            outcome.points,
            outcome,
            outcome.comments,
            outcome.late_penalty,
        )
        results.write_page(self.out, outcome.student_id, html)
        return outcome

    def refresh_unchanged(self, skipped: list[Submission]) -> None:
        """Bring students not regraded up to date with the gradebook: a TA's grading since,
        a due date or penalty rule changed since."""
        recorder = self.start_recording()
        for sub in skipped:
            saved = self.state.load(sub.student_id)  # _pending found it, with this key
            if saved is None:
                continue
            before = Outcome(**saved["row"])
            recorder.reassess_lateness(sub.student_id)
            outcome = self.publish(before, written=True)
            if outcome == before:
                continue
            self.state.save(sub.student_id, saved["sha256"], outcome)
            if self.ledger is not None:
                self.ledger.save(sub.student_id, saved["sha256"], outcome)

    def grade_all(self, todo: list[Submission], executor: executors.Executor) -> None:
        """Grade ``todo`` with ``executor``, recording each result as it arrives."""
        progress = Progress(
            total=len(todo), unit="nb", desc="grading", file=sys.stderr, disable=not todo
        )
        for sub, result in executor.results(todo, self.start_recording):
            self.record_one(sub, result)
            del result  # recorded: nothing of it stays in this process
            progress.update()
        progress.close()
        self.start_recording()  # the gradebook must exist for formgrader, even if all failed

    def close(self) -> None:
        """Close the gradebook connection."""
        if self.recorder is not None:
            self.recorder.close()


class Progress(tqdm):
    """tqdm's progress bar without its monitor thread, which forking must not copy."""

    monitor_interval = 0


def _warn(unprotected: list[str]) -> None:
    lines = "\n".join(f"  - {item}" for item in unprotected)
    _log.warning(
        f"\nWARNING: grading WITHOUT these protections:\n{lines}\n"
        "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) and allow user "
        "namespaces to grade untrusted code safely.\n"
    )


def default_jobs() -> int:
    """All the cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
