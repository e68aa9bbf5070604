"""Extra time granted to a student, kept by the course in ``extensions.toml``.

nbgrader keeps an extension on each submission in its gradebook
(``SubmittedAssignment.extension``: its late penalties, formgrader and
``nbgrader export`` all go by the due date plus it) but offers no way to grant
one. The course keeps them in a file beside its config, one table per
assignment, as it keeps its roster::

    ["hw1"]
    "jane_doe-4711" = { until = "2026-03-08 12:00:00 UTC", why = "medical" }
    "doejane-1234" = { days = 2 }

``until`` is a new due date for that student; ``days`` and ``hours`` add to
the assignment's. Every grading run writes each student's extension into the
gradebook before it assigns late penalties, so the file is the one place an
extension is granted, changed or taken back; ``python -m autograder extend``
writes it for a TA.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.utils import parse_utc

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.errors import UserError

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

    def as_toml(self) -> str:
        """This extension as one line of the file's table."""
        fields = []
        if self.until is not None:
            fields.append(f'until = "{self.until.strftime("%Y-%m-%d %H:%M:%S")} UTC"')
        if self.more is not None:
            hours = self.more / timedelta(hours=1)
            fields.append(f"hours = {hours:g}")
        if self.why:
            fields.append(f"why = {_quoted(self.why)}")
        return f"{_quoted(self.student_id)} = {{ {', '.join(fields)} }}"


def _quoted(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return f'"{escaped}"'


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
    if not file.is_file():
        return {}
    try:
        data = tomllib.loads(file.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{file}: not TOML: {error}") from None
    table = data.get(assignment.id, {})
    if not isinstance(table, dict):
        raise UserError(f"{file}: [{assignment.id}] must be a table of students")
    return {sid: _one(sid, entry, str(file)) for sid, entry in table.items()}


def write(assignment: Assignment, extensions: dict[str, Extension]) -> str:
    """The course's file with ``assignment``'s table replaced by ``extensions`` (its text)."""
    file = path(assignment.root)
    tables: dict[str, list[str]] = {}
    if file.is_file():
        data = tomllib.loads(file.read_text())
        for other, table in data.items():
            if other != assignment.id and isinstance(table, dict):
                tables[other] = [
                    _one(sid, entry, str(file)).as_toml() for sid, entry in table.items()
                ]
    tables[assignment.id] = [e.as_toml() for _, e in sorted(extensions.items())]
    lines = [
        "# Extra time granted, per assignment and student (python -m autograder extend):",
        "# until = a new due date, or days / hours added to the assignment's.",
    ]
    for name, rows in sorted(tables.items()):
        if rows:
            lines += ["", f"[{_quoted(name)}]", *rows]
    return "\n".join(lines) + "\n"
