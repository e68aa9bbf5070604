"""Grading a whole class of one assignment, in parallel, resumable.

A student's grade passes through the folders in this order:

1. :mod:`~autograder.pipeline.submissions` (main): every submission, one per
   student, from nbgrader's layout, LMS downloads or a zip;
2. :mod:`~autograder.pipeline.recording` (main): students whose files and the
   run's settings are unchanged since a finished run are skipped, unless ``force``;
3. :mod:`~autograder.pipeline.dispatch` hands the rest to workers (``jobs``
   local processes, or a Dask cluster's), where
   :mod:`~autograder.pipeline.grading` reads, inspects, sanitises, executes in
   the sandbox and scores each, and renders its page
   (:mod:`~autograder.pipeline.reports`);
4. :mod:`~autograder.pipeline.recording` (main, one student at a time, after
   that student's process is gone) keeps each in the gradebook and reads back
   what it holds as the student's outcome (:mod:`~autograder.pipeline.results`),
   so a TA's grade, a comment or a changed due date shows everywhere;
5. :mod:`~autograder.pipeline.reports` (main): ``grades.csv``, the class report
   and the terminal's summary, all from the outcomes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder import log
from autograder.pipeline import results
from autograder.pipeline.course import extensions, notebook, removals
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import (
    due_date,
    hand_in_times,
    sources_hash,
    sqlite_url,
)
from autograder.pipeline.dispatch import pools
from autograder.pipeline.errors import UserError
from autograder.pipeline.grading import worker
from autograder.pipeline.lms import hand_in
from autograder.pipeline.recording import Recording, cpu_seconds, pending, run_settings, turn
from autograder.pipeline.reports import terminal
from autograder.pipeline.results import NOT_FINISHED, ClassFolder, Outcome, Store, StoredOutcomes
from autograder.pipeline.settings import GradingLimits, class_folder, configured, lms_pattern
from autograder.pipeline.submissions import collect, lateness
from autograder.pipeline.submissions.submission import Submission
from autograder.sandbox.clean_up import SHARED_WRITABLE, after_run, remove_tree

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Request:
    """One grading run, as asked for: what to grade, where, and within which limits.

    submissions: a folder (nbgrader's layout or LMS files) or a ``.zip``;
    out: the output folder; jobs: local worker processes; limits: the limits
    on each submission's code; force: regrade students whose files did not
    change; pattern: a regex naming students in LMS file names; dry_run: grade
    into ``out`` only, the course's gradebook and folders untouched;
    scheduler: a Dask scheduler's address, whose workers grade instead of
    ``jobs`` local processes (this process still records everything);
    students: grade only these students of ``submissions``, every other row,
    page and gradebook entry in ``out`` left as it was (empty: the whole class);
    times: a file of hand-in times for an LMS download
    (:mod:`~autograder.pipeline.lms.hand_in`); pages: render each student's
    feedback page and the class report (without them, only with ``dry_run``:
    a run whose caller reads the outcomes alone, as Gradescope's do).
    """

    submissions: Path
    assignment: Assignment
    out: ClassFolder
    jobs: int
    limits: GradingLimits
    force: bool = False
    pattern: str | None = None
    dry_run: bool = False
    scheduler: str | None = None
    students: tuple[str, ...] = ()
    times: Path | None = None
    pages: bool = True

    def __post_init__(self) -> None:
        if not (self.pages or self.dry_run):
            raise ValueError("a run that records into the course writes every page")

    @property
    def settings(self) -> str:
        """The run's side of the rerun key (:func:`~.recording.run_settings`)."""
        return run_settings(self.assignment, self.limits, self.pages)


def grade(
    submissions: Path | str,
    *,
    assignment: str | None = None,
    course: Path | str | None = None,
    jobs: int | None = None,
    timeout: float | None = None,
    wall: float | None = None,
    memory: int | None = None,
    out: Path | str | None = None,
    force: bool = False,
    pattern: str | None = None,
    sandbox: bool | None = None,
    dry_run: bool = False,
    scheduler: str | None = None,
    student: list[str] | None = None,
    times: Path | str | None = None,
) -> int:
    """Grade every submission at ``submissions``; the exit status (0: every student got a row).

    The options are :class:`Request`'s and
    :class:`~autograder.pipeline.settings.GradingLimits`'; each left None is the
    course's (``c.Autograder.*`` in its config,
    :class:`~autograder.pipeline.settings.Autograder`): jobs every core this
    process may use, timeout ``c.Execute.timeout``. Two runs at once on the
    same course (or the same ``out``) take turns.
    """
    chosen = find_assignment(course, assignment)
    limits = GradingLimits.for_course(chosen, timeout, wall, memory, sandbox)
    request = Request(
        Path(submissions),
        chosen,
        ClassFolder(class_folder(chosen, out)),
        job_count(chosen, jobs),
        limits,
        force,
        lms_pattern(chosen, pattern),
        dry_run,
        scheduler,
        tuple(dict.fromkeys(student or ())),
        Path(times) if times is not None else None,
    )
    return run(request).status


@dataclass(frozen=True)
class ClassGrades:
    """What a grading run gave: its exit status and each student's outcome.

    status: 0 when every student got a row, 130 when interrupted; unprotected:
    the protections the sandbox ran without (none, where bubblewrap works).
    The outcomes stay on disk (:class:`~.results.Store`) and are read one at a
    time when asked for.
    """

    status: int
    out: ClassFolder
    student_ids: tuple[str, ...]
    unprotected: tuple[str, ...] = ()

    def outcomes(self) -> StoredOutcomes:
        """Every student's outcome, in student order."""
        return StoredOutcomes(self.out.state, list(self.student_ids))

    def outcome(self, student_id: str) -> Outcome | None:
        """One student's outcome; None if the run did not finish grading them."""
        if self.out.state.key(student_id) in (None, NOT_FINISHED):
            return None
        return self.out.state.outcome(student_id)


def run(request: Request) -> ClassGrades:
    """Carry out one grading run (see :func:`grade`)."""
    doing = f"grade {request.submissions}"
    with turn(request.assignment, request.out, doing, course=not request.dry_run):
        return _run_locked(request)


def _run_locked(request: Request) -> ClassGrades:
    chosen, out, submissions = request.assignment, request.out, request.submissions
    unreleased = [n for n in chosen.notebooks if not chosen.release(n).is_file()]
    if unreleased:  # the pages show what was released, and the grader checks against it
        raise UserError(
            f"{chosen.id} has no release of {', '.join(unreleased)} in {chosen.release_dir}: "
            "run `python -m autograder generate` first"
        )
    found = collect.collect(submissions, chosen, request.pattern)
    if not found:
        raise UserError(f"no submission of {chosen.id} found in {submissions}")
    found = _not_removed(found, chosen, request.students)
    if not found:
        raise UserError(f"every submission in {submissions} is of a removed student")
    if request.times is not None:
        zone = chosen.config.Exchange.get("timezone") or "UTC"
        found = lateness.with_times(found, hand_in.read(request.times, zone))
    # A time given once is the course's record (the gradebook's), until the TA gives another.
    found, kept_times = lateness.with_recorded(found, hand_in_times(chosen))
    columns = notebook.Columns({n: notebook.read(chosen.source(n)) for n in chosen.notebooks})
    # The class DIR holds: this run's students, or with --student everyone it held too.
    found, kept = _chosen(found, request.students, out.state, submissions)
    ledger = None if request.dry_run else results.ledger(chosen)
    unchanged, todo = pending(found, out.state, request.force, request.settings, ledger)
    for said in (
        *extensions.reconcile(chosen, write_file=not request.dry_run),
        lateness.unknown(found, due_date(chosen)),
        lateness.kept_for_changed(todo, kept_times, ledger or out.state),
    ):
        if said:
            _log.warning(said)
    _log.info(
        f"{len(found)} submission(s): {len(todo)} to grade, "
        f"{len(found) - len(todo)} unchanged since the last run",
        extra=log.TO_STDERR,
    )
    with _scratch(out) as scratch:
        # Workers read a copy of the gradebook, made while they start up.
        settings = worker.WorkerSettings(
            course_root=str(chosen.root),
            assignment_id=chosen.id,
            db_url=sqlite_url(scratch / "gradebook.db"),
            limits=request.limits,
            owner_pid=os.getpid(),
            pages=request.pages,
        )
        # A scheduler's or a `timeout` command's SIGTERM stops grading as Ctrl-C does.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        recording = Recording(
            chosen, out, scratch, columns, request.settings, ledger, pages=request.pages
        )
        executor = pools.make(settings, request.jobs, request.scheduler, sources_hash(chosen))
        try:
            recording.grade_all(todo, executor)
            recording.refresh_unchanged(unchanged)
            again = recording.awaiting_again()
            if again:
                _log.warning(again)
            recording.close()
        except KeyboardInterrupt:
            _log.warning(
                f"\ninterrupted: {len(unchanged) + recording.recorded} of {len(found)} "
                "submission(s) graded and kept; run the same command again to grade the rest"
            )
            ids = tuple(sub.student_id for sub in found)
            return ClassGrades(130, out, ids, tuple(recording.unprotected))
        finally:
            signal.signal(signal.SIGTERM, previous)
            pools.close(executor)
            _clean_up()
    # Read back from disk one at a time, in student order: nothing of the class is held.
    everyone = [sub.student_id for sub in found]
    if kept:  # --student: the class as DIR held it, with these students graded again
        everyone = sorted(set(everyone) | set(kept))
    out.keep_only(set(everyone))
    ordered = recording.write_grades(everyone)
    if request.pages:
        recording.write_report(everyone, out.attempts())  # `serve` counted the attempts
    _log.info(terminal.table(ordered))
    _log.info("")
    _log.info(terminal.summary(ordered, columns.tests()))
    main_kib = worker.peak_memory_kib()
    worker_mib = recording.peak // 1024
    _log.info(f"grader peak memory: main {main_kib // 1024} MiB, largest worker {worker_mib} MiB")
    # Start-up: imports, reading the class, the workers' shared start, the gradebook ready.
    used, before = cpu_seconds(), recording.ready_cpu
    split = (
        f" ({before:.2f} s to start, then {(used - before) / len(todo) * 1000:.0f} ms per "
        "submission graded)"
        if todo
        else ""
    )
    _log.info(f"grader main process CPU: {used:.2f} s{split}")
    if request.pages:
        _log.info(f"\nwrote {out.csv} and {len(ordered)} feedback page(s) in {out.feedback}")
        _log.info(f"what the class got wrong: {out.report}")
    else:
        _log.info(f"\nwrote {out.csv}")
    return ClassGrades(0, out, tuple(everyone), tuple(recording.unprotected))


def _not_removed(
    found: list[Submission], chosen: Assignment, asked: tuple[str, ...]
) -> list[Submission]:
    """``found`` without the students the course removed (:mod:`~.course.removals`), said in
    one line; naming one with ``--student`` is a user's mistake."""
    removed = removals.recorded(chosen)
    for student in asked:
        if student in removed:
            raise UserError(
                f"--student {student}: removed from {chosen.id} on "
                f"{removed[student].removed:%Y-%m-%d} (`python -m autograder remove {student} "
                "--undo` brings them back)"
            )
    skipped = [sub.student_id for sub in found if sub.student_id in removed]
    if skipped:
        _log.warning(removals.skipped_line(skipped, chosen.id))
    return [sub for sub in found if sub.student_id not in removed]


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


@contextlib.contextmanager
def _scratch(out: ClassFolder) -> Iterator[Path]:
    """The run's scratch folder, the grader's alone (mode 0700), gone when the run ends.

    Made afresh under the output folder's lock: what a run killed outright
    left there is replaced, and no other run's can be touched.
    """
    folder = out.scratch
    remove_tree(str(folder))
    folder.mkdir(mode=0o700)
    try:
        yield folder
    finally:
        remove_tree(str(folder))


def _clean_up() -> None:
    """Once the workers are gone, remove what this run's students left, and say so.

    The students' folders of the workers' sandboxes are clutter; a file left
    where any user may write is worth a warning: only a student without a
    filesystem sandbox can leave one there.
    """
    removed = after_run(os.getpid())
    if removed:
        _log.warning(
            f"removed {removed} file(s) or folder(s) this run's students left where any "
            f"user may write ({', '.join(SHARED_WRITABLE)})"
        )


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def job_count(assignment: Assignment, jobs: int | None) -> int:
    """The workers a run asked for (``--jobs``), else the course's (``c.Autograder.jobs``),
    else every core; one that is not positive is the user's mistake."""
    if jobs is None:
        jobs = configured(assignment).jobs or default_jobs()
    if jobs <= 0:
        raise UserError(f"--jobs must be positive, not {jobs}")
    return jobs


def default_jobs() -> int:
    """All the cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
