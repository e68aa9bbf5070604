"""``python -m autograder extend STUDENT``: grant a student more time, and show what it changes.

The extension is kept in the course's ``extensions.toml``
(:mod:`~autograder.pipeline.course.extensions`) and written into the
gradebook's copy at once, with the late penalty assigned again as nbgrader
assigns it; ``--dry-run`` shows the change on a copy of the gradebook and
writes nothing. The next ``grade`` run (which regrades no one for it) brings
``grades.csv``, the feedback pages and the exports up to date.
"""

from __future__ import annotations

import logging
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.utils import parse_utc

from autograder.pipeline import results
from autograder.pipeline.course import extensions, students, turns
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import course_url, ensure_gradebook, existing
from autograder.pipeline.errors import UserError
from autograder.pipeline.files import write_atomic
from autograder.pipeline.recording import dry_run_gradebook

_log = logging.getLogger(__name__)


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else "none"


def _asked(
    student: str, days: float | None, hours: float | None, until: str | None, why: str
) -> extensions.Extension:
    if until is not None and (days is not None or hours is not None):
        raise UserError("give either --until, or --days and --hours")
    if until is not None:
        try:
            return extensions.Extension(student, until=parse_utc(until), why=why)
        except (ValueError, OverflowError):
            raise UserError(f"--until {until!r} is no date (2026-03-08 12:00 UTC)") from None
    if days is None and hours is None:
        raise UserError("give --until DATE, or --days N and/or --hours N")
    more = timedelta(days=days or 0, hours=hours or 0)
    if more <= timedelta(0):
        raise UserError("an extension must add time (use --remove to take one back)")
    return extensions.Extension(student, more=more, why=why)


def extend(
    student: str,
    *,
    days: float | None = None,
    hours: float | None = None,
    until: str | None = None,
    why: str = "",
    remove: bool = False,
    new: bool = False,
    dry_run: bool = False,
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Grant ``student`` an extension on the assignment (or ``remove`` theirs); exit status.

    days, hours: time added to the assignment's due date; until: the student's
    own due date (nbgrader's time format, UTC); why: a note kept in the file;
    new: ``student`` is not known to the course yet (not graded, no folder).
    """
    chosen = find_assignment(course, assignment)
    if dry_run:  # changes nothing: no turn to wait for
        return _extend(chosen, student, days, hours, until, why, remove, new, dry_run)
    with turns.turn(chosen.root, f"extend {student}"):
        return _extend(chosen, student, days, hours, until, why, remove, new, dry_run)


def _extend(
    chosen: Assignment,
    student: str,
    days: float | None,
    hours: float | None,
    until: str | None,
    why: str,
    remove: bool,
    new: bool,
    dry_run: bool,
) -> int:
    with existing(course_url(chosen)) as gb:  # one set elsewhere in the gradebook counts too
        found = extensions.agree(chosen, gb.db).granted if gb else extensions.granted(chosen)
    granted = dict(found)
    ids = students.known(chosen, set(results.ledger(chosen).student_ids()), set(granted))
    students.check(student, ids | ({student} if new else set()), chosen.id, "--new")
    if remove:
        if granted.pop(student, None) is None:
            raise UserError(f"{student} has no extension on {chosen.id}")
    else:
        granted[student] = _asked(student, days, hours, until, why)
    text = extensions.write(chosen, granted)
    with tempfile.TemporaryDirectory(prefix="extend-") as scratch:
        if dry_run:  # a copy of the gradebook takes the change; the course's is untouched
            db_url = dry_run_gradebook(chosen, Path(scratch))
        else:
            db_url = ensure_gradebook(chosen)
            write_atomic(extensions.path(chosen.root), text)
        before = after = None
        if _handed_in(db_url, chosen, student) is not None:
            recorder = results.Recorder(chosen, db_url, Path(scratch))
            # The penalty as the rule gives it today, not as the gradebook last stored it:
            # nbgrader computes it only when grades are saved, so points a TA gave in
            # formgrader since are not in the stored one.
            recorder.extensions = dict(found)
            recorder.reassess_lateness(student)
            before = _handed_in(db_url, chosen, student)
            recorder.extensions = granted  # what the file says now (or would say)
            recorder.reassess_lateness(student)
            recorder.close()
            after = _handed_in(db_url, chosen, student)
    _report(chosen, student, granted.get(student), before, after, dry_run)
    return 0


#: a student's ``(late penalty, handed in, due date)`` in the gradebook
Lateness = tuple[float, datetime | None, datetime | None]


def _handed_in(db_url: str, assignment: Assignment, student: str) -> Lateness | None:
    """``(late penalty, handed in, the student's due date)`` as the gradebook holds them;
    None when the student has no submission there."""
    with existing(db_url) as gb:
        if gb is None:
            return None
        try:
            submission = gb.find_submission(assignment.id, student)
        except MissingEntry:
            return None
        penalty = float(submission.late_submission_penalty or 0)
        return penalty, submission.timestamp, submission.duedate


def _report(
    assignment: Assignment,
    student: str,
    given: extensions.Extension | None,
    before: Lateness | None,
    after: Lateness | None,
    dry_run: bool,
) -> None:
    file = extensions.path(assignment.root)
    if given is None:
        what = "no extension"
    elif given.until is not None:
        what = f"due {_when(given.until)}"
    else:
        what = f"{given.more} more than the assignment's due date"
    _log.info(f"{student} on {assignment.id}: {what}")
    if before is None or after is None:
        _log.info(f"{student} has no graded submission yet: it applies when they are graded")
    else:
        (was, handed_in, due_before), (now, _, due_after) = before, after
        _log.info(
            f"handed in {_when(handed_in)}; due {_when(due_before)} -> {_when(due_after)}; "
            f"late penalty {was:g} -> {now:g}"
        )
    if dry_run:
        _log.info(f"dry run: {file.name} and the gradebook are unchanged")
    else:
        _log.info(
            f"wrote {file}; run the grade command again to bring grades.csv, the feedback "
            "pages and the exports up to date (no one is graded again for it)"
        )
