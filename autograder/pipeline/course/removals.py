"""Students a TA took out of an assignment, kept by the course in ``removals.toml``.

``python -m autograder remove ID`` takes a student out of the gradebook and the
course's folders; this record keeps them out. nbgrader's own ``collect
--update`` and a fresh LMS download bring their work back into ``submitted/``
or the download, so every later ``grade`` run skips each student recorded
here (and says so in one line) until ``remove ID --undo`` takes the record
back. The file, one table per assignment, as the course keeps extensions::

    ["hw1"]
    tst = { removed = "2026-03-08 12:00:00 UTC", kept = "removed/tst/hw1/20260308-120000" }
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from nbgrader.utils import parse_utc

from autograder.pipeline.course import records
from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.errors import UserError

FILE = "removals.toml"  #: in the course folder, beside its config
ABOUT = (
    "Students taken out of an assignment (python -m autograder remove ID): no grading run\n"
    "grades them again. `python -m autograder remove ID --undo` brings one back."
)


@dataclass(frozen=True)
class Removal:
    """One student taken out: when, and where their folders were kept ("" if none were)."""

    student_id: str
    removed: datetime
    kept: str = ""

    def as_entry(self) -> dict[str, str]:
        """This removal as its entry in the file's table."""
        entry = {"removed": f"{self.removed:%Y-%m-%d %H:%M:%S} UTC"}
        if self.kept:
            entry["kept"] = self.kept
        return entry


def path(root: Path) -> Path:
    """The course's removals file."""
    return Path(root) / FILE


def recorded(assignment: Assignment) -> dict[str, Removal]:
    """``{student_id: Removal}`` of ``assignment`` (empty when no one was removed)."""
    file = path(assignment.root)
    found = {}
    for sid, entry in records.table(file, assignment.id).items():
        try:
            when = parse_utc(str(entry["removed"]))
        except (KeyError, TypeError, ValueError, OverflowError):
            raise UserError(
                f"{file}: {sid}: removed = a date, such as 2026-03-08 12:00 UTC"
            ) from None
        found[sid] = Removal(sid, when, str(entry.get("kept", "")))
    return found


def write(assignment: Assignment, removed: dict[str, Removal]) -> None:
    """Keep ``removed`` as ``assignment``'s table of the course's file."""
    entries = {sid: r.as_entry() for sid, r in removed.items()}
    records.write(path(assignment.root), assignment.id, entries, ABOUT)


def skipped_line(ids: list[str], assignment_id: str) -> str:
    """The one line a run prints about the removed students it found and did not grade."""
    named = ", ".join(ids[:12]) + (f" and {len(ids) - 12} more" if len(ids) > 12 else "")
    return (
        f"skipped {len(ids)} student(s) removed from {assignment_id}: {named} "
        f"(`python -m autograder remove ID --undo` brings one back)"
    )
