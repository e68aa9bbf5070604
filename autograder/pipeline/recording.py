"""A grading run's recording side, in the main process: each graded submission, as it arrives.

For every student, once their process is gone: the graded notebooks and grades
into the gradebook (:class:`~autograder.pipeline.results.Recorder`), what the
gradebook then holds as their outcome (built from what was written for a
student new to it, read back otherwise), their feedback page, and the rerun
state (the output folder's, and the course's ledger the exports read).
Students not graded again are brought up to date with the gradebook too.

Students are committed to the gradebook in batches (:data:`BATCH` students, or
whatever was recorded when no result came for a moment), and only once their
batch is committed is their rerun state kept: a run killed at any point
leaves students either recorded everywhere or graded again by the next run.
"""

from __future__ import annotations

import contextlib
import logging
import resource
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from autograder.pipeline import results
from autograder.pipeline.course import notebook, turns
from autograder.pipeline.course.assignment import Assignment, course_directory
from autograder.pipeline.course.gradebook import (
    copy_database,
    database_file,
    ensure_gradebook,
    sources_hash,
    sqlite_url,
    stamp_path,
)
from autograder.pipeline.dispatch import pools
from autograder.pipeline.errors import Status
from autograder.pipeline.grading import worker
from autograder.pipeline.reports import class_report, feedback_page
from autograder.pipeline.results import (
    NOT_FINISHED,
    ClassFolder,
    Graded,
    Outcome,
    Store,
    StoredOutcomes,
)
from autograder.pipeline.results.rows import Written
from autograder.pipeline.settings import GradingLimits
from autograder.pipeline.submissions.submission import Submission

_log = logging.getLogger(__name__)

BATCH = 64  #: students committed to the gradebook together, at most


def dry_run_gradebook(assignment: Assignment, into: Path) -> str:
    """A scratch copy of the course gradebook (or a new one), for a run that must not touch it."""
    course_db = str(course_directory(assignment.root, assignment.config).db_url)
    target = Path(into) / "dry-run.db"
    database = database_file(course_db)
    if database is not None and database.exists():
        copy_database(database, target)
        stamp = stamp_path(course_db, assignment)
        copied = stamp_path(sqlite_url(target), assignment)
        if stamp is not None and copied is not None and stamp.is_file():
            shutil.copy(stamp, copied)  # what the copy holds is recorded already
    return ensure_gradebook(assignment, sqlite_url(target))


def snapshot(db_url: str, into: Path) -> str:
    """A copy of the gradebook for the workers, who only look up source cells."""
    source = database_file(db_url)
    if source is None:
        raise ValueError(f"the workers' copy needs a SQLite gradebook, not {db_url}")
    target = Path(into) / "gradebook.db"
    copy_database(source, target)
    return sqlite_url(target)


@contextlib.contextmanager
def turn(
    assignment: Assignment, out: ClassFolder, doing: str, wait: bool = True, course: bool = True
) -> Iterator[None]:
    """What recording holds for itself, ``grade``'s and ``serve``'s alike: the class
    folder ``out`` (:func:`~.results.exclusive`), then the course's turn
    (:func:`~.course.turns.turn`; not with ``course`` False, a dry run's, which leaves the
    course alone). doing: what this process does, for whoever waits; wait: False raises
    :class:`~autograder.pipeline.locks.Busy` at once, holding nothing.
    """
    with contextlib.ExitStack() as held:
        held.enter_context(results.exclusive(out.lock, str(out.root), wait))
        if course:
            held.enter_context(turns.turn(assignment.root, doing, wait))
        yield


def run_settings(assignment: Assignment, limits: GradingLimits, pages: bool = True) -> str:
    """A run's side of the rerun key: other limits, tests, points or config grade again.

    The course's side is :func:`~autograder.pipeline.course.gradebook.sources_hash`:
    the source folder (tests, points, helper files) and the course config.
    pages: False for a run that renders no page (a later run with pages grades again).
    """
    key = f"{limits.key()}:{sources_hash(assignment)[:16]}"
    return key if pages else f"{key}:no-pages"


def pending(
    submissions: list[Submission],
    state: Store,
    force: bool,
    settings: str,
    ledger: Store | None,
) -> tuple[list[Submission], list[Submission]]:
    """``(submissions unchanged and graded with the same settings, submissions to grade)``.

    settings: the run's side of the rerun key (:func:`~.results.rerun_key`);
    ledger: what the course gradebook last recorded for each student (None for a
    dry run); a student is skipped only when the gradebook holds this same grading
    too, so ``grades.csv`` and the gradebook never disagree after a run.
    """
    unchanged, todo = [], []
    for sub in submissions:
        key = results.rerun_key(sub.sha256, settings)
        recorded = ledger is None or ledger.key(sub.student_id) == key
        if state.key(sub.student_id) == key and recorded and not force:
            unchanged.append(sub)
        else:
            todo.append(sub)
    return unchanged, todo


def cpu_seconds() -> float:
    """This process's CPU seconds so far (user and system; its threads, not its workers)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


class Recording:
    """One grading run's recording side: graded submissions arrive from workers and are kept.

    out: the run's output folder; scratch: the run's scratch folder (the
    workers' copy of the gradebook, a dry run's gradebook); settings: the run's
    side of the rerun key; ledger: the course's record for the exports (None
    for a dry run, which records into a scratch gradebook and ``out`` only);
    pages: write each student's feedback page (see :class:`~.grade.Request`).
    """

    def __init__(
        self,
        assignment: Assignment,
        out: ClassFolder,
        scratch: Path,
        columns: notebook.Columns,
        settings: str,
        ledger: Store | None,
        pages: bool = True,
    ) -> None:
        self.assignment, self.out, self.scratch, self.pages = assignment, out, scratch, pages
        self.state, self.columns, self.settings, self.ledger = out.state, columns, settings, ledger
        self.recorded = 0  # students recorded in this run
        self.recorder: results.Recorder | None = None
        self.renderer: feedback_page.Renderer | None = None
        self.unprotected: list[str] = []  # protections the sandbox ran without, if any
        self.peak = 0  # the largest worker's peak memory, KiB
        self.batch: list[tuple[str, str, Outcome]] = []  # (student, rerun key, outcome) to keep
        self.writing = False  # a student is half written to the gradebook
        self.ready_cpu = 0.0  # this process's CPU seconds when the gradebook was ready

    @property
    def dry_run(self) -> bool:
        """Does this run leave the course's gradebook and folders alone?"""
        return self.ledger is None

    def start_recording(self) -> results.Recorder:
        """Set up the gradebook (and the workers' copy of it) once."""
        if self.recorder is None:
            if self.dry_run:
                db_url = dry_run_gradebook(self.assignment, self.scratch)
                autograded: Path | None = self.out.autograded
            else:
                db_url, autograded = ensure_gradebook(self.assignment), None
            snapshot(db_url, self.scratch)
            self.recorder = results.Recorder(self.assignment, db_url, self.out.root, autograded)
            self.ready_cpu = cpu_seconds()
        return self.recorder

    def record_one(self, sub: Submission, graded: Graded) -> None:
        """Record one student's grading: gradebook, outcome, page; rerun state once committed."""
        if graded.unprotected and not self.unprotected:
            self.unprotected = list(graded.unprotected)
            _warn(graded.unprotected)
        recorder = self.start_recording()
        self.writing = True
        held = recorder.save(graded, sub.timestamp, sub.files, sub.lms_id, sub.name)
        self.peak = max(self.peak, graded.peak_kib)
        shown = results.from_grading(graded, self.columns)
        # graded.notebooks holds only what the gradebook reads: a page rendered
        # again (a TA's grade, a late penalty) reads the notebooks just written.
        outcome = self.publish(shown, None, graded.feedback, held=held)
        # A grader error is kept for this run's CSV, and a rerun grades it again
        # (the exports know from the ledger that it is not final).
        if graded.status == Status.GRADER_ERROR:
            key = NOT_FINISHED
        else:
            key = results.rerun_key(sub.sha256, self.settings)
        self.batch.append((sub.student_id, key, outcome))
        self.writing = False
        if len(self.batch) >= BATCH:
            self.commit()

    def commit(self) -> None:
        """Commit the batch to the gradebook, then keep each of its students' rerun state.

        In that order: a run killed in between grades them again, and never
        keeps a grade the gradebook does not hold.
        """
        if self.recorder is None:
            return
        self.recorder.commit()
        for student_id, key, outcome in self.batch:
            self.state.save(student_id, key, outcome)
            if self.ledger is not None:
                self.ledger.save(student_id, key, outcome)
        self.recorded += len(self.batch)
        self.batch = []

    def abandon(self) -> None:
        """Stop recording midway (Ctrl-C, a failure): keep the batch, unless a student is
        half written."""
        if self.writing and self.recorder is not None:
            self.recorder.rollback()  # the batch goes too; the next run grades it again
            self.batch = []
        else:
            self.commit()

    @contextlib.contextmanager
    def session(self, db_url: str) -> Iterator[None]:
        """Record into the gradebook at ``db_url`` within the block only: its connection is
        opened for it and closed after (the service records on the course's turn, and
        between turns other commands use the gradebook)."""
        self.recorder = results.Recorder(self.assignment, db_url, self.out.root)
        try:
            yield
        finally:
            self.recorder.close()
            self.recorder = None

    def discard(self) -> None:
        """Forget what was recorded since the last commit (one hand-in's recording failed
        midway): the gradebook rolled back, no rerun state kept for it."""
        if self.recorder is not None:
            self.recorder.rollback()
        self.batch, self.writing = [], False

    def write_grades(self, everyone: list[str]) -> StoredOutcomes:
        """``grades.csv`` for ``everyone`` (the class, in order), from the saved outcomes;
        those outcomes, read one at a time when asked for."""
        rows = StoredOutcomes(self.state, everyone)
        results.write_csv(rows, list(self.columns.possible), self.out.csv)
        return rows

    def write_report(self, everyone: list[str], attempts: dict[str, int]) -> None:
        """The class report of ``everyone``'s saved outcomes; attempts: each student's
        hand-ins graded on submit, as ``serve`` counted them."""
        a = self.assignment
        sources = {n: notebook.read(a.source(n)) for n in a.notebooks}
        self.out.write_report(
            class_report.render(
                f"{a.id}: the class report",
                StoredOutcomes(self.state, everyone),
                self.columns,
                sources,
                a.hidden_tests,
                attempts=attempts,
            )
        )

    def publish(
        self,
        shown: Outcome,
        notebooks: dict[str, Any] | None = None,
        page: str | None = None,
        written: bool = False,
        held: Written | None = None,
    ) -> Outcome:
        """The student's outcome as the gradebook holds it, with a page that says so.

        shown: what ``page`` (the worker's rendering) says, or with ``written``,
        what the page already in the output folder says; the page is rendered
        again only where the gradebook says otherwise (a TA's grade or comment,
        a late penalty). notebooks: the executed notebooks, if at hand (else
        read back from where they were recorded). held: what was just written
        for a student new to the gradebook (else it is read back).
        """
        recorder = self.start_recording()
        if held is not None:
            outcome = results.from_written(held, self.columns, shown)
        else:
            outcome = results.from_gradebook(
                recorder.gradebook, self.assignment, self.columns, shown
            )
        sid = shown.student_id
        if not self.pages:
            return outcome
        if outcome == shown and page is not None:
            self.out.write_page(sid, page)
            recorder.release_ready(sid, self.out.page(sid))
            return outcome
        if outcome == shown and written and self.out.page(sid).exists():
            recorder.release_ready(sid, self.out.page(sid))
            return outcome
        if notebooks is None:
            notebooks = {}
            for name in self.assignment.notebooks:
                path = recorder.autograded_path(shown.student_id, name)
                found = notebook.read(path) if path.exists() else None
                notebooks[name] = None if found is None or notebook.is_stand_in(found) else found
        if self.renderer is None:
            self.renderer = worker.warm_renderer(self.assignment) or feedback_page.Renderer(
                self.assignment
            )
        html = self.renderer.render(
            outcome.student_id,
            notebooks,
            self.columns,
            outcome.points,
            outcome,
            outcome.comments,
            outcome.late_penalty,
        )
        self.out.write_page(outcome.student_id, html)
        recorder.release_ready(outcome.student_id, self.out.page(outcome.student_id))
        return outcome

    def refresh_unchanged(self, skipped: list[Submission]) -> None:
        """Bring students not regraded up to date with the gradebook: a TA's grading since,
        a due date or penalty rule changed since."""
        recorder = self.start_recording()
        for sub in skipped:
            saved = self.state.load(sub.student_id)  # pending() found it, with this key
            if saved is None:
                continue
            before = Outcome(**saved["row"])
            recorder.reassess_lateness(sub.student_id, sub.timestamp)
            outcome = self.publish(before, written=True)
            if outcome == before:
                continue
            key = self.state.key(sub.student_id) or results.NOT_FINISHED
            self.state.save(sub.student_id, key, outcome)
            if self.ledger is not None:
                self.ledger.save(sub.student_id, key, outcome)

    def grade_all(self, todo: list[Submission], executor: pools.Executor) -> None:
        """Grade ``todo`` with ``executor``, recording each submission as it arrives."""
        progress = Progress(
            total=len(todo), unit="nb", desc="grading", file=sys.stderr, disable=not todo
        )
        arriving = executor.results(todo, self.start_recording, self.commit)
        try:
            for sub, graded in arriving:
                self.record_one(sub, graded)
                del graded  # recorded: nothing of it stays in this process
                progress.update()
        except BaseException:  # Ctrl-C, or a failure here: keep what is whole, then stop
            self.abandon()
            raise
        finally:
            arriving.close()  # the workers stop now, not when this process exits
        self.commit()
        progress.close()
        self.start_recording()  # the gradebook must exist for formgrader, even if all failed

    def awaiting_again(self) -> str | None:
        """One line naming each grade a TA gave whose answer changed in this run (it awaits a
        TA again); None when every TA's grade stood."""
        again = self.recorder.again if self.recorder is not None else []
        if not again:
            return None
        named = ", ".join(f"{sid} ({cell})" for sid, _, cell in again[:20])
        more = f" and {len(again) - 20} more" if len(again) > 20 else ""
        return (
            f"{len(again)} grade(s) a TA gave await a TA again, their answer changed since: "
            f"{named}{more} (every other grade a TA gave stands)"
        )

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
