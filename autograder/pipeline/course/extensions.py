"""Extra time granted to a student, kept by the course in ``extensions.toml``.

nbgrader keeps an extension on each submission in its gradebook
(``SubmittedAssignment.extension``: its late penalties, formgrader and
``nbgrader export`` all go by the due date plus it) but offers no way to grant
one. The course keeps them in a file beside its config, one table per
assignment, as it keeps its roster::

    ["hw1"]
    "jane_doe-4711" = { until = "2026-03-08 12:00:00 UTC", why = "medical" }
    "doejane-1234" = { days = 2 }

(:mod:`~autograder.pipeline.course.records` writes it: the same tables, each
student's as a ``["hw1".doejane-1234]`` section.)

``until`` is a new due date for that student; ``days`` and ``hours`` add to
the assignment's. Every grading run writes each student's extension into the
gradebook before it assigns late penalties, so the file is the one place an
extension is granted, changed or taken back; ``python -m autograder extend``
writes it for a TA.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.api import Assignment as NbAssignment
from nbgrader.api import SubmittedAssignment
from nbgrader.utils import parse_utc
from sqlalchemy import select
from sqlalchemy.orm import Session

from autograder.pipeline.course import records
from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.gradebook import course_url, existing
from autograder.pipeline.errors import UserError
from autograder.pipeline.files import write_atomic

FILE = "extensions.toml"  #: in the course folder, beside its config


@dataclass(frozen=True)
class Extension:
    """One student's extra time: a new due date (``until``), or time added (``more``)."""

    student_id: str
    until: datetime | None = None
    more: timedelta | None = None
    why: str = ""

    def beyond(self, duedate: datetime | None) -> timedelta | None:
        """The extra time past ``duedate`` (nbgrader's ``extension``); None without a due date
        to extend (an ``until`` alone is then no extension nbgrader can hold)."""
        if self.more is not None:
            return self.more
        if duedate is None or self.until is None:
            return None
        return max(self.until - duedate, timedelta(0))

    def as_entry(self) -> dict[str, str | float]:
        """This extension as its entry in the file's table."""
        entry: dict[str, str | float] = {}
        if self.until is not None:
            entry["until"] = f"{self.until.strftime('%Y-%m-%d %H:%M:%S')} UTC"
        if self.more is not None:
            entry["hours"] = self.more / timedelta(hours=1)
        if self.why:
            entry["why"] = self.why
        return entry


def path(root: Path) -> Path:
    """The course's extensions file."""
    return Path(root) / FILE


def _one(student_id: str, entry: object, where: str) -> Extension:
    if not isinstance(entry, dict):
        raise UserError(f"{where}: {student_id} must be a table such as {{ days = 2 }}")
    unknown = set(entry) - {"until", "days", "hours", "why"}
    if unknown:
        raise UserError(f"{where}: {student_id}: unknown key(s) {', '.join(sorted(unknown))}")
    until = None
    if "until" in entry:
        try:
            until = parse_utc(str(entry["until"]))
        except (ValueError, TypeError, OverflowError):
            raise UserError(
                f"{where}: {student_id}: until = {entry['until']!r} is no date"
            ) from None
    more = None
    if "days" in entry or "hours" in entry:
        try:
            more = timedelta(days=float(entry.get("days", 0)), hours=float(entry.get("hours", 0)))
        except (TypeError, ValueError):
            raise UserError(f"{where}: {student_id}: days and hours must be numbers") from None
        if more < timedelta(0):
            raise UserError(f"{where}: {student_id}: an extension cannot take time away")
    if (until is None) == (more is None):
        raise UserError(f"{where}: {student_id}: give either until, or days and hours")
    return Extension(student_id, until, more, str(entry.get("why", "")))


def granted(assignment: Assignment) -> dict[str, Extension]:
    """``{student_id: Extension}`` for ``assignment``, from the course's file (empty if none).

    A file that cannot be read is the user's mistake, said in one line.
    """
    file = path(assignment.root)
    found = records.table(file, assignment.id)
    return {sid: _one(sid, entry, str(file)) for sid, entry in found.items()}


def in_gradebook(session: Session, assignment_id: str) -> dict[str, timedelta]:
    """``{student_id: extension}`` of every submission of the assignment whose extension the
    gradebook holds (set by ``extend``, or by nbgrader's API, ngshare, a script)."""
    found = session.execute(
        select(SubmittedAssignment.student_id, SubmittedAssignment.extension)
        .join(NbAssignment, NbAssignment.id == SubmittedAssignment.assignment_id)
        .where(NbAssignment.name == assignment_id, SubmittedAssignment.extension.is_not(None))
    )
    return {sid: extension for sid, extension in found if extension}  # 0 changes nothing


def _hours(extension: timedelta) -> str:
    return f"{extension / timedelta(hours=1):g} h"


@dataclass(frozen=True)
class Agreement:
    """The course's file and the gradebook, read together: neither is silently dropped.

    granted: what stands: the file's extensions, and the gradebook's where the
    file has none for that student (adopted); adopted: those found only in the
    gradebook; differ: ``{student: (the file's extension, the gradebook's)}``
    where both hold one and they differ (the file's stands).
    """

    granted: dict[str, Extension]
    adopted: dict[str, Extension]
    differ: dict[str, tuple[timedelta | None, timedelta]]

    def lines(self, file: Path, recorded: bool) -> list[str]:
        """What a run says of it: one line for adopted extensions, one for disagreements."""
        said = []
        if self.adopted:
            named = ", ".join(
                f"{sid} ({_hours(e.more or timedelta(0))})"
                for sid, e in sorted(self.adopted.items())
            )
            verb = "recorded in" if recorded else "would record in"
            said.append(
                f"{verb} {file.name} {len(self.adopted)} extension(s) found only in the "
                f"gradebook (set outside `extend`): {named}"
            )
        if self.differ:
            named = ", ".join(
                f"{sid} ({file.name}: {_hours(ours) if ours else 'none'}, gradebook: "
                f"{_hours(theirs)})"
                for sid, (ours, theirs) in sorted(self.differ.items())
            )
            said.append(
                f"warning: {file.name} and the gradebook disagree on {len(self.differ)} "
                f"extension(s), {file.name}'s stands: {named} (`python -m autograder extend "
                "ID` changes one)"
            )
        return said


def reconcile(assignment: Assignment, write_file: bool) -> list[str]:
    """Read the course's file with its gradebook's extensions; with ``write_file``, record in
    the file those found only in the gradebook. What to say of it (:meth:`Agreement.lines`)."""
    with existing(course_url(assignment)) as gb:
        if gb is None:
            return []
        agreement = agree(assignment, gb.db)
    if agreement.adopted and write_file:
        write_atomic(path(assignment.root), write(assignment, agreement.granted))
    return agreement.lines(path(assignment.root), write_file)


def agree(assignment: Assignment, session: Session) -> Agreement:
    """The course's extensions for ``assignment``, its file read with the gradebook's
    (``session``: an open nbgrader gradebook's)."""
    from_file = granted(assignment)
    held = in_gradebook(session, assignment.id)
    due = session.execute(
        select(NbAssignment.duedate).where(NbAssignment.name == assignment.id)
    ).scalar()
    adopted = {
        sid: Extension(sid, more=extension, why=FOUND_IN_GRADEBOOK)
        for sid, extension in held.items()
        if sid not in from_file
    }
    differ = {
        sid: (from_file[sid].beyond(due), extension)
        for sid, extension in held.items()
        if sid in from_file and from_file[sid].beyond(due) != extension
    }
    return Agreement({**from_file, **adopted}, adopted, differ)


#: the note kept with an extension the course's file took from the gradebook
FOUND_IN_GRADEBOOK = "found in the gradebook (set outside python -m autograder extend)"

ABOUT = (
    "Extra time granted, per assignment and student (python -m autograder extend):\n"
    "until = a new due date, or days / hours added to the assignment's."
)


def write(assignment: Assignment, extensions: dict[str, Extension]) -> str:
    """The course's file with ``assignment``'s table replaced by ``extensions`` (its text)."""
    entries = {sid: e.as_entry() for sid, e in extensions.items()}
    return records.text(path(assignment.root), assignment.id, entries, ABOUT)
