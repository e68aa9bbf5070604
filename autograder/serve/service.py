"""``python -m autograder serve``: grade each hand-in as it arrives; return its page at once.

The instructor runs it in the course folder, in the foreground, until Ctrl-C
or SIGTERM (``make hub`` runs it as one of the hub's services). One loop, every
:data:`POLL` seconds:

1. **scan** the exchange's inbound folder (:mod:`.inbound`); each hand-in not
   in the journal (:mod:`.journal`) is added to it, ``waiting``;
2. **dispatch**: while a worker is free, the next student in a fair queue
   (each student once, in the order their work arrived; back of the queue
   after each grading, so one student's many hand-ins never hold up
   another's) has their newest whole hand-in graded, older ones superseded;
   beyond the course's attempts (:mod:`.policy`) it is kept instead;
3. **record**: each result, on the course's turn (``grade``, ``extend``,
   ``remove`` and exports keep theirs: the service waits for its turn without
   stopping grading): the hand-in the policy says counts is collected into
   ``submitted/`` (as ``nbgrader collect --update`` does for one student) and
   recorded exactly as ``grade`` records it (gradebook, ``autograded/``,
   ``grades.csv``, the class folder's page, the rerun state); then the
   hand-in's own page is released through the exchange (:mod:`.pages`);
4. **publish**: once a student's due date has passed, their early pages are
   released again in full, and hand-ins kept beyond the attempts are graded.

Workers are the batch grader's (:mod:`~autograder.pipeline.grading.worker`),
forked once and kept, each grading in its own sandbox with the course's limits:
a runaway notebook holds one worker for its own limits, the others go on.

Restart-safe: the journal says ``waiting`` until a hand-in's grade is recorded
and its page released, so a service killed at any moment grades again, on its
next start, what was in flight, and records it over itself (one attempt).
One service per course: a second refuses to start, in one line.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import logging
import os
import queue
import shutil
import signal
import time
from collections.abc import Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.exchange.default.exchange import Exchange as ExchangeRoot

from autograder import log
from autograder.pipeline import locks, results
from autograder.pipeline.course import extensions, notebook, removals, students, turns
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import (
    due_date,
    ensure_gradebook,
    sources_hash,
    sqlite_url,
)
from autograder.pipeline.dispatch import pools
from autograder.pipeline.errors import Status, UserError
from autograder.pipeline.grade import job_count
from autograder.pipeline.grading import worker
from autograder.pipeline.recording import Recording, run_settings, snapshot, turn
from autograder.pipeline.reports import feedback_page
from autograder.pipeline.results import ClassFolder, Graded, handed_back
from autograder.pipeline.settings import GradingLimits, class_folder
from autograder.pipeline.submissions.submission import Submission
from autograder.sandbox.clean_up import remove_tree
from autograder.serve import inbound, ngshare, pages, roster
from autograder.serve.inbox import FolderInbox, Inbox
from autograder.serve.journal import GRADED, KEPT, REFUSED, SUPERSEDED, WAITING, Journal
from autograder.serve.policy import Attempt, Policy, serve_settings, utc_now

_log = logging.getLogger(__name__)

POLL = 0.5  #: seconds between looks at the inbound folder
RETRIES = 2  #: times a hand-in the grader (not the student) failed on is graded again at once
REPORT_AFTER = 2.0  #: seconds without a new result before the class report is written again
REFRESH = 2.0  #: seconds between reading the due date, extensions and removals again
CHANGED = 10.0  #: seconds between looks at whether the assignment (tests, config) changed
SERVICE_LOCK = ".serve.lock"  #: in the course folder: held by the one service running
MAX_WAITING = 20  #: a student's hand-ins that may wait at once; one more is refused
MAX_REMEMBERED = 100_000  #: hand-in names of unknown ids remembered as passed over, at most
UNKNOWN = "no student of the course, nor a user of this machine"  #: why an id is passed over
ABANDONED = 3600.0  #: seconds after which a hand-in nbgrader never finished is refused


def state_folder(assignment: Assignment) -> Path:
    """The service's own folder in the course (journal, pages kept for the due date)."""
    return assignment.root / results.store.LEDGER / f"serve-{assignment.id}"


@dataclass
class InFlight:
    """A hand-in a worker is grading: the submission read from it, and where its files were
    staged (kept until it is recorded)."""

    hand_in: inbound.HandIn
    submission: Submission
    staged: Path


def serve(
    *,
    assignment: str | None = None,
    course: Path | str | None = None,
    jobs: int | None = None,
    timeout: float | None = None,
    wall: float | None = None,
    memory: int | None = None,
    out: Path | str | None = None,
    sandbox: bool | None = None,
    once: bool = False,
) -> int:
    """Serve the course until Ctrl-C or SIGTERM; the exit status (0 when stopped so).

    The options are ``grade``'s (:func:`~autograder.pipeline.grade.grade`): the
    limits on each hand-in's code and the workers, each left None the
    course's; out: the class folder ``grades.csv``, the pages and the class
    report are kept in, as ``grade --out``. once: stop as soon as every
    hand-in found at the start is done with (for a cron job, and tests).
    """
    chosen = find_assignment(course, assignment)
    limits = GradingLimits.for_course(chosen, timeout, wall, memory, sandbox)
    jobs = job_count(chosen, jobs)
    course_id = chosen.config.CourseDirectory.get("course_id") or ""
    exchange = chosen.config.Exchange.get("root") or ExchangeRoot.root.default_value
    if not course_id:
        raise UserError(
            "serve needs the course's id in its config (c.CourseDirectory.course_id), as "
            "nbgrader's exchange does"
        )
    unreleased = [n for n in chosen.notebooks if not chosen.release(n).is_file()]
    if unreleased:
        raise UserError(
            f"{chosen.id} has no release of {', '.join(unreleased)}: run "
            "`python -m autograder generate` first"
        )
    with only_service(chosen.root):
        service = Service(chosen, limits, jobs, ClassFolder(class_folder(chosen, out)))
        service.inbox = inbox_of(chosen, Path(exchange), str(course_id))
        return service.run(once)


def inbox_of(assignment: Assignment, exchange: Path, course_id: str) -> Inbox:
    """The course's exchange: ngshare's service where ``c.Serve.ngshare_url`` names one
    (:mod:`~autograder.serve.ngshare`), else nbgrader's exchange folder ``exchange``."""
    settings = serve_settings(assignment)
    if settings.ngshare_url:
        return ngshare.NgshareInbox.for_course(settings, course_id, assignment.id)
    return FolderInbox(exchange, course_id, assignment.id)


@contextlib.contextmanager
def only_service(root: Path) -> Iterator[None]:
    """Hold the course's service lock; a second service is the user's mistake (one line)."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(locks.held(Path(root) / SERVICE_LOCK, "serve", wait=False))
        except locks.Busy as who:
            raise UserError(
                f"a service already grades the course {root} ({who}): one per course"
            ) from None
        yield


class Service:
    """One course's graded-on-submit service (see the module's docstring)."""

    inbox: Inbox

    def __init__(
        self, assignment: Assignment, limits: GradingLimits, jobs: int, out: ClassFolder
    ) -> None:
        self.assignment, self.limits, self.jobs, self.out = assignment, limits, jobs, out
        self.policy = Policy.for_course(assignment)
        self.check_owner = bool(assignment.config.CollectApp.get("check_owner", True))
        self.folder = state_folder(assignment)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        self.journal = Journal(self.folder / "journal.sqlite")
        self.kept_pages = handed_back.KeptPages(self.folder / "pages")  # each hand-in's full page
        self.scratch = self.folder / "scratch"  # the workers' gradebook, the staged hand-ins
        self.queue: list[str] = []  # students with work to grade, in turn
        self.in_flight: dict[str, InFlight] = {}
        self.done: queue.Queue[tuple[str, Future[Graded]]] = queue.Queue()
        self.results: list[tuple[InFlight, Graded]] = []  # graded, waiting for the turn
        self.tries: dict[str, int] = {}  # hand-in key: times the grader failed on it
        self.workers: pools.Workers | None = None
        self.known: set[str] = set()  # hand-in keys the journal holds
        self.students: set[str] = set()  # the ids the course knows (roster.Roster.known)
        self.ignored: set[str] = set()  # hand-in keys of ids the course does not know
        self.passed_over: set[str] = set()  # those the log has named
        self.roster = roster.Roster(assignment)
        self.due: datetime | None = None
        self.granted: dict[str, extensions.Extension] = {}
        self.removed: set[str] = set()  # students a TA took out of the assignment
        self.waited_for = ""  # whose turn the service last said it waits for
        self.report_due = 0.0  # when to write the class report again (0: not needed)
        self.sources = ""

    # -- set-up ---------------------------------------------------------------------------

    def setup(self) -> None:
        """Everything grading needs, made afresh: at the start, and when the assignment
        changed (tests, points, config)."""
        a = self.assignment = find_assignment(self.assignment.root, self.assignment.id)
        self.roster.assignment = a
        self.policy = Policy.for_course(a)  # the course's config, read again
        self.check_owner = bool(a.config.CollectApp.get("check_owner", True))
        self.stop_pool()
        remove_tree(str(self.scratch))
        self.scratch.mkdir(mode=0o700)
        self.sources = sources_hash(a)
        sources = {n: notebook.read(a.source(n)) for n in a.notebooks}
        self.columns = notebook.Columns(sources)
        self.settings = run_settings(a, self.limits)
        with turns.turn(a.root, "serve (starting)"):
            db_url = ensure_gradebook(a)
        snapshot(db_url, self.scratch)
        self.db_url = db_url
        self.renderer = feedback_page.Renderer(a)
        self.hidden = pages.hidden_cells(a)
        self.recording = Recording(
            a, self.out, self.scratch, self.columns, self.settings, results.ledger(a)
        )
        self.worker_settings = worker.WorkerSettings(
            course_root=str(a.root),
            assignment_id=a.id,
            db_url=sqlite_url(self.scratch / "gradebook.db"),
            limits=self.limits,
            owner_pid=os.getpid(),
        )
        self.start_pool()

    def start_pool(self) -> None:
        """Fork the workers (:class:`~autograder.pipeline.dispatch.pools.Workers`)."""
        self.workers = pools.Workers(self.worker_settings, self.jobs)
        self.workers.start()

    def restart_pool(self) -> None:
        """Workers afresh, after one died (the sandboxes of the others are stopped too)."""
        _log.warning("warning: a worker died; starting the workers afresh")
        self.stop_pool()
        self.start_pool()

    def stop_pool(self) -> None:
        """Stop the workers now: what they grade is graded again later. Every worker this
        process forked is killed, whichever pool it was started for."""
        if self.workers is not None:
            self.workers.stop()
        pools.kill_forked()
        self.workers = None

    # -- the loop -------------------------------------------------------------------------

    def run(self, once: bool = False) -> int:
        """Serve until interrupted (or, with ``once``, until nothing is left to do)."""
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            self.setup()
            inbox = self.inbox.where
            _log.info(
                f"serving {self.assignment.id}: grading each hand-in in {inbox} as it "
                f"arrives, {self.jobs} at a time; {self.policy.allowance()}, the "
                f"{self.policy.counts} counts (Ctrl-C stops)",
                extra=log.TO_STDERR,
            )
            checked = refreshed = 0.0
            while True:
                if time.monotonic() - refreshed >= REFRESH:
                    refreshed = time.monotonic()
                    self.refresh()
                self.scan()
                self.publish_due()
                self.dispatch()
                self.collect(POLL)
                self.record()
                self.write_report()
                if time.monotonic() - checked > CHANGED and not self.results:
                    checked = time.monotonic()
                    if sources_hash(self.assignment) != self.sources:
                        _log.warning("the assignment changed: starting the workers afresh")
                        self.requeue_in_flight()
                        self.setup()
                if once and not (self.queue or self.in_flight or self.results):
                    self.report_due = time.monotonic()
                    self.write_report()
                    return 0
        except KeyboardInterrupt:
            if self.report_due:
                self.report_due = time.monotonic()
                self.write_report()
            waiting = len(self.in_flight) + len(self.results)
            _log.warning(
                f"\nstopped: {waiting} hand-in(s) being graded are graded again at the next start"
            )
            return 0
        finally:
            signal.signal(signal.SIGTERM, previous)
            self.stop_pool()
            if getattr(self, "recording", None) is not None:
                self.recording.abandon()
                self.recording.close()
            self.journal.close()

    def refresh(self) -> None:
        """The due date, extensions and removals, as the course holds them now (a TA may
        change them)."""
        self.due = due_date(self.assignment)
        try:
            self.granted = extensions.granted(self.assignment)
            self.removed = set(removals.recorded(self.assignment))
        except UserError as why:  # a TA's half-edited file: keep the last good one
            _log.warning(f"warning: {why}")
        # The course's students (roster.py): its gradebook, the hub's users, those a TA
        # took out (who are told so) and those it has results for.
        known = self.roster.known(self.removed | set(self.out.state.student_ids()))
        if known != self.students:  # a student added: their hand-ins are looked at again
            self.students, self.ignored = known, set()
        self.inbox.enrol(self.students)

    def due_for(self, student: str) -> datetime | None:
        """The student's due date: the assignment's, moved by their extension."""
        granted = self.granted.get(student)
        extra = granted.beyond(self.due) if granted is not None else None
        if self.due is None:
            return granted.until if granted is not None else None
        return self.due + extra if extra else self.due

    def scan(self) -> None:
        """Add new hand-ins to the journal; queue each student with whole work waiting.

        The inbound is the students' to write: a hand-in under an id the course does not
        know is passed over (no place in the queue, no row), one whose folder is gone
        before it was whole is refused (it blocks no later hand-in), and the secret of
        each whole one is kept as first read (:meth:`release`).
        """
        if not self.known:
            self.known = self.journal.known()
        waiting: dict[str, int] | None = None  # each student's hand-ins waiting, when needed
        for hand_in in self.inbox.new():
            if hand_in.key in self.known or hand_in.key in self.ignored:
                continue
            if not self.knows(hand_in.student_id):  # a made-up id: not even a row
                if len(self.passed_over) > MAX_REMEMBERED:  # names come and go: stay bounded
                    self.passed_over, self.ignored = set(), set()
                if hand_in.key not in self.passed_over:  # said once, however often seen
                    self.passed_over.add(hand_in.key)
                    _log.warning(f"warning: passed over {_shown(hand_in.key)}: {UNKNOWN}")
                self.ignored.add(hand_in.key)
                continue
            if waiting is None:
                waiting = collections.Counter(e.student for e in self.journal.waiting())
            self.journal.add(hand_in.key, hand_in.student_id, hand_in.handed_in)
            self.known.add(hand_in.key)
            waiting[hand_in.student_id] = waiting.get(hand_in.student_id, 0) + 1
            if waiting[hand_in.student_id] > MAX_WAITING:
                note = f"more than {MAX_WAITING} of the student's hand-ins waited at once"
                self.journal.finish(hand_in.key, REFUSED, note=note)
        now = time.time()
        busy = set(self.in_flight) | set(self.queue)
        busy |= {flight.hand_in.student_id for flight, _ in self.results}  # to be recorded
        for entry in self.journal.waiting():
            hand_in = self.hand_in(entry.key, entry.student, entry.handed_in)
            if self.inbox.gone(hand_in):
                self.journal.finish(entry.key, REFUSED, note="its folder was removed unfinished")
                continue
            if not self.inbox.whole(hand_in, now):
                if (utc_now() - entry.seen).total_seconds() > ABANDONED:
                    self.journal.finish(entry.key, REFUSED, note="never finished")
                continue
            if entry.student in busy:
                continue
            secret = self.inbox.secret(hand_in)
            if secret is not None:
                self.journal.remember_secret(entry.key, *secret)
            busy.add(entry.student)
            self.queue.append(entry.student)

    def hand_in(self, key: str, student: str, handed_in: datetime) -> inbound.HandIn:
        """The hand-in ``key`` in the exchange."""
        return self.inbox.hand_in(key, student, handed_in)

    def dispatch(self) -> None:
        """Give free workers the next students' newest hand-ins (see the module's docstring)."""
        now = utc_now()
        while self.queue and len(self.in_flight) < self.jobs:
            student = self.queue.pop(0)
            entries = self.journal.entries(student)
            waiting = [
                self.hand_in(e.key, student, e.handed_in) for e in entries if e.state == WAITING
            ]
            # Each hand-in's time is when the kernel says its content was complete: a
            # folder made early and filled late, or named for another day, counts as filled.
            ready = [
                self.inbox.completed(h) for h in waiting if self.inbox.whole(h) and self.theirs(h)
            ]
            ready.sort(key=lambda h: (h.handed_in, h.key))
            if not ready:
                continue
            if student in self.removed:  # as `grade` skips them: `remove --undo` brings them back
                for hand_in in ready:
                    self.refuse_removed(hand_in)
                continue
            newest = ready[-1]
            for older in ready[:-1]:
                self.supersede(older, newest)
            staged = self.scratch / "staged" / hashlib.sha256(newest.key.encode()).hexdigest()[:16]
            try:
                submission = self.inbox.stage(newest, staged, self.assignment)
            except OSError as error:  # unreadable to the instructor: nothing to grade
                _log.warning(f"warning: {_shown(newest.key)} cannot be read: {error}")
                submission = None
            if submission is None:
                self.journal.finish(newest.key, REFUSED, note="the hand-in's folder is gone")
                continue
            if submission.timestamp is not None:  # as the copy left it (stage reads it again)
                newest = replace(newest, handed_in=submission.timestamp)
            self.journal.dated(newest.key, newest.handed_in)
            history = [e for e in entries if e.key != newest.key]
            due = self.due_for(student)
            if not self.policy.grade_now(history, newest.handed_in, due, now):
                shutil.rmtree(staged, ignore_errors=True)
                self.keep(newest, due)
                continue
            assert self.workers is not None
            try:
                self.workers.submit(submission, pools.put_in(self.done, student))
            except BrokenProcessPool:  # a worker died while idle: its result is collected next
                self.queue.insert(0, student)
                self.restart_pool()
                return
            self.in_flight[student] = InFlight(newest, submission, staged)

    def refusal(self, hand_in: inbound.HandIn) -> str | None:
        """Why ``hand_in`` is not its student's to grade
        (:func:`~autograder.serve.inbound.owner_refusal`); with ``c.CollectApp.check_owner``
        off, only an id the course does not know."""
        if self.check_owner:
            return self.inbox.refusal(hand_in, self.students)
        return None if self.knows(hand_in.student_id) else UNKNOWN

    def knows(self, student_id: str) -> bool:
        """Is ``student_id`` one of the course's students (``roster.py``), or a user of this
        machine (whose hand-ins are graded from folders they own)?"""
        return student_id in self.students or inbound.user_id(student_id) is not None

    def theirs(self, hand_in: inbound.HandIn) -> bool:
        """Is the hand-in its student's own (``c.CollectApp.check_owner``, as ``nbgrader
        collect`` checks it)? One that is not is refused: it grades nothing, supersedes
        nothing and uses no attempt of the student it names."""
        refusal = self.refusal(hand_in)
        if refusal:
            _log.warning(f"warning: refused {_shown(hand_in.key)}: {refusal}")
            self.journal.finish(hand_in.key, REFUSED, note=refusal)
        return refusal is None

    def collect(self, wait: float) -> None:
        """Take the results that came within ``wait`` seconds."""
        deadline = time.monotonic() + wait
        while True:
            try:
                student, future = self.done.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return
            flight = self.in_flight.get(student)
            if flight is None:  # from a pool stopped since
                continue
            try:
                graded = future.result()
            except BrokenProcessPool:  # a worker died: start afresh, grade what was in flight
                lost = list(self.in_flight.values())
                self.requeue_in_flight()
                self.queue = [
                    s for s in self.queue if s not in {f.hand_in.student_id for f in lost}
                ]
                for gone in lost:  # graded again a few times, then kept: never a loop
                    self.failed(gone, "the worker grading it died")
                self.restart_pool()
                return
            except Exception as error:
                graded = pools.grader_error(flight.submission, error)
            del self.in_flight[student]
            if (
                graded.status == Status.GRADER_ERROR
                and self.tries.get(flight.hand_in.key, 0) < RETRIES
            ):
                self.failed(flight, f"the grader failed: {graded.detail}")  # graded again
                continue
            self.results.append((flight, graded))
            deadline = time.monotonic()  # take what else is done, without waiting again

    def requeue_in_flight(self) -> None:
        """Put the students being graded back in the queue, first (their hand-ins still wait)."""
        self.queue = [s for s in self.in_flight if s not in self.queue] + self.queue
        self.in_flight.clear()
        while not self.done.empty():
            self.done.get_nowait()

    # -- recording ------------------------------------------------------------------------

    def record(self) -> None:
        """Record every result waiting, on the course's turn; if another command has the
        turn, keep them for the next loop (grading goes on meanwhile)."""
        if not self.results:
            return
        try:
            with turn(self.assignment, self.out, "serve", wait=False):
                self.waited_for = ""
                self.removed = set(removals.recorded(self.assignment))  # as of this turn
                with self.recording.session(self.db_url):
                    while self.results:
                        flight, graded = self.results.pop(0)
                        try:
                            self.record_one(flight, graded)
                        except Exception as error:  # one hand-in's trouble, not the service's
                            self.recording.discard()
                            self.failed(
                                flight, f"recording it failed: {type(error).__name__}: {error}"
                            )
                self.recording.write_grades(self.out.state.student_ids())
                self.report_due = time.monotonic() + REPORT_AFTER
        except locks.Busy as busy:
            who = str(busy) or "another grading run"
            if who != self.waited_for:
                _log.info(
                    f"waiting for {who} to finish on the course; {len(self.results)} graded "
                    "hand-in(s) are recorded then",
                    extra=log.TO_STDERR,
                )
                self.waited_for = who

    def failed(self, flight: InFlight, why: str) -> None:
        """The grader (not the student) failed on a hand-in: graded again at once, a few
        times; then kept, to be graded after the due date, with a page that says so."""
        key = flight.hand_in.key
        shutil.rmtree(flight.staged, ignore_errors=True)
        tries = self.tries[key] = self.tries.get(key, 0) + 1
        _log.error(f"error: {key}: {why}")
        if tries <= RETRIES:
            self.queue.append(flight.hand_in.student_id)  # it still waits in the journal
            return
        said = (
            "The grader failed on this hand-in (not your work's doing); it uses no "
            "attempt, and is graded again after the due date. A TA has been told."
        )
        self.release(
            flight.hand_in, pages.notice_page(self.title(flight.hand_in.student_id), [said])
        )
        self.journal.finish(key, KEPT, shown="full", note=f"grader error: {why}")

    def record_one(self, flight: InFlight, graded: Graded) -> None:
        """Record one graded hand-in as the policy says, and release its page."""
        hand_in, a = flight.hand_in, self.assignment
        student = hand_in.student_id
        if student in self.removed:  # taken out while it was graded
            self.refuse_removed(hand_in)
            shutil.rmtree(flight.staged, ignore_errors=True)
            return
        entries = self.journal.entries(student)
        earlier = [e for e in entries if e.state == GRADED and e.key != hand_in.key]
        due, now = self.due_for(student), utc_now()
        if graded.status == Status.GRADER_ERROR:  # not the student's doing: no attempt used
            self.tries[hand_in.key] = RETRIES  # graded again at once already, in collect()
            self.failed(flight, f"the grader failed: {graded.detail}")
            return
        raw = sum(p for p in graded.points.values() if p is not None)
        attempts = [Attempt(e.key, e.handed_in, e.score or 0.0) for e in earlier]
        counted = self.policy.counted(
            [*attempts, Attempt(hand_in.key, hand_in.handed_in, raw)], due
        )
        counts = counted is not None and counted.key == hand_in.key
        comments: dict[str, str] = {}
        points, penalty, score = graded.points, 0.0, raw
        if counts:
            self.collect_submitted(flight)
            self.recording.record_one(flight.submission, graded)
            self.recording.commit()
            outcome = self.out.state.outcome(student)
            if outcome is not None:
                points, penalty, comments = outcome.points, outcome.late_penalty, outcome.comments
                score = outcome.score
        attempt = len(earlier) + 1
        notice = self.notice(attempt, hand_in, counts, counted, earlier, due, now)
        texts = {n: nbformat.reads(t, as_version=4) for n, t in graded.texts.items()}
        executed = {n: texts.get(n) for n in a.notebooks}
        full = self.render(student, executed, points, graded, comments, penalty, notice)
        self.kept_pages.keep(hand_in.key, full)
        shown = "full"
        page = full
        if self.policy.hides_until(due, now):
            shown = "early"
            hidden = {
                n: None if nb is None else pages.early(nb, self.hidden.get(n, set()), a.config)
                for n, nb in executed.items()
            }
            page = self.render(
                student, hidden, points, graded, comments, penalty, notice, pages.when(due)
            )
        self.release(hand_in, page)
        self.journal.finish(
            hand_in.key,
            GRADED,
            attempt=attempt,
            score=score,
            max_score=sum(self.columns.possible.values()),
            status=str(graded.status),
            shown=shown,
            counts=counts,
        )
        waited = (utc_now() - hand_in.handed_in).total_seconds()
        _log.info(
            f"{student}: attempt {attempt}, {score:g} / {sum(self.columns.possible.values()):g}"
            f"{'' if counts else ' (does not count)'}; page returned {waited:.1f} s after "
            "the hand-in",
            extra=log.TO_STDERR,
        )
        shutil.rmtree(flight.staged, ignore_errors=True)

    def render(
        self,
        student: str,
        executed: dict[str, Any],
        points: dict[str, float | None],
        graded: Graded,
        comments: dict[str, str],
        penalty: float,
        notice: list[str],
        hidden_until: str = "",
    ) -> str:
        """The hand-in's feedback page."""
        return self.renderer.render(
            student, executed, self.columns, points, graded, comments, penalty, notice,
            hidden_until,
        )  # fmt: skip

    def notice(
        self,
        attempt: int,
        hand_in: inbound.HandIn,
        counts: bool,
        counted: Attempt | None,
        earlier: list[Any],
        due: datetime | None,
        now: datetime,
    ) -> list[str]:
        """What the page opens with: which attempt, whether it counts, what is left."""
        lines = [f"Your hand-in of {pages.when(hand_in.handed_in)}, graded on submit: "
                 f"attempt {attempt}."]  # fmt: skip
        if counts:
            lines.append("This is the hand-in your grade is now taken from.")
        elif counted is not None:
            rule = "best" if self.policy.counts == "best" else "last before the due date"
            lines.append(
                f"This hand-in does not count: your grade is taken from your hand-in of "
                f"{pages.when(counted.handed_in)} (the course counts the {rule})."
            )
        if self.policy.attempts and (due is None or now <= due):
            used = self.policy.used(earlier, hand_in.handed_in, due) + 1  # this one too
            left = max(0, self.policy.attempts - used)
            per = " today" if self.policy.per == "day" else ""
            lines.append(
                f"The course allows {self.policy.allowance()} before the due date "
                f"({pages.when(due)}); you have {left} left{per}."
            )
        return lines

    def collect_submitted(self, flight: InFlight) -> None:
        """Put the hand-in where ``nbgrader collect`` puts a student's work (``submitted/``),
        replacing what was there, as ``collect --update`` does."""
        student = flight.hand_in.student_id
        target = self.assignment.folder("submitted_directory", student)
        staged = flight.staged / student / self.assignment.id
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staged, target, symlinks=True)

    def release(self, hand_in: inbound.HandIn, page: str) -> None:
        """Put ``page`` in the exchange for ``hand_in``, one per notebook of the assignment,
        under the secret the hand-in was first seen with
        (:meth:`~autograder.serve.journal.Journal.secret_of`).

        No page when it has none (nbgrader older than 0.8 handed it in: nothing can
        name its page), or when another student's hand-in held that secret first (it
        was read from their home folder): the page would replace theirs."""
        secret = ""
        if self.inbox.signed:
            read = self.inbox.secret(hand_in)
            if read is not None:
                self.journal.remember_secret(hand_in.key, *read)
            known = self.journal.secret_of(hand_in.key)
            if known is None:
                why = "no submission_secret.txt" if read is None else "another student's secret"
                _log.warning(f"warning: {_shown(hand_in.key)} has {why}: no page returned")
                return
            secret = known
        self.inbox.release(hand_in, self.assignment, page, secret)
        self.journal.released(hand_in.key)

    def supersede(self, older: inbound.HandIn, newer: inbound.HandIn) -> None:
        """A hand-in a newer one replaced before it was graded: a page that says so."""
        said = (
            f"This hand-in was not graded: your newer hand-in of {pages.when(newer.handed_in)} "
            "was graded instead (fetch its feedback), and used no extra attempt."
        )
        self.release(older, pages.notice_page(self.title(older.student_id), [said]))
        self.journal.finish(older.key, SUPERSEDED, shown="full")

    def refuse_removed(self, hand_in: inbound.HandIn) -> None:
        """A hand-in of a student the TA removed from the assignment: not graded, and the
        page says whom to ask."""
        said = (
            f"This hand-in was not graded: you were taken out of {self.assignment.id}. "
            "If that is a mistake, ask your instructor."
        )
        self.release(hand_in, pages.notice_page(self.title(hand_in.student_id), [said]))
        self.journal.finish(hand_in.key, REFUSED, shown="full", note="removed from the assignment")
        _log.warning(removals.skipped_line([hand_in.student_id], self.assignment.id))

    def keep(self, hand_in: inbound.HandIn, due: datetime | None) -> None:
        """A hand-in beyond the attempts allowed: kept, graded once the due date passed."""
        per = " today" if self.policy.per == "day" else ""
        said = [
            f"Your hand-in of {pages.when(hand_in.handed_in)} is kept, but not graded now: "
            f"you have used the {self.policy.allowance()} the course allows{per}.",
            f"It is graded after the due date ({pages.when(due)}) if it is your last "
            "hand-in by then; your grade until then stays as your graded attempts left it.",
        ]
        self.release(hand_in, pages.notice_page(self.title(hand_in.student_id), said))
        self.journal.finish(hand_in.key, KEPT, shown="full", note="beyond the attempts allowed")
        _log.info(f"{hand_in.student_id}: hand-in kept, beyond the attempts", extra=log.TO_STDERR)

    def title(self, student: str) -> str:
        """A short page's title."""
        return f"{self.assignment.id}: your hand-in, {student}"

    # -- after the due date ---------------------------------------------------------------

    def publish_due(self) -> None:
        """For students whose due date has passed: early pages again in full, and each one's
        newest kept hand-in graded (it is no longer early)."""
        now = utc_now()
        for entry in self.journal.entries():
            due = self.due_for(entry.student)
            if due is None or now <= due:
                continue
            if entry.state == GRADED and entry.shown == "early":
                kept = self.kept_pages.read(entry.key)
                if kept is not None:
                    hand_in = self.hand_in(entry.key, entry.student, entry.handed_in)
                    self.release(hand_in, kept)
                self.journal.shown(entry.key, "full")
            elif entry.state == KEPT:
                self.journal.again(entry.key)

    def write_report(self) -> None:
        """The class report, once results stopped coming for a moment."""
        if not self.report_due or time.monotonic() < self.report_due:
            return
        try:
            with turn(self.assignment, self.out, "serve (the class report)", False, course=False):
                attempts = self.journal.attempts()
                self.out.write_attempts(attempts)
                self.recording.write_report(self.out.state.student_ids(), attempts)
                self.report_due = 0.0
        except locks.Busy:
            return  # a grading run writes it meanwhile; the next loop tries again
        except Exception as error:  # the report is for TAs: the service goes on without it
            _log.warning(f"warning: the class report was not written: {error}")
            self.report_due = 0.0


def _shown(key: str) -> str:
    """A hand-in's folder name as a log line shows it: control characters escaped, short."""
    return students.shown(key)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
