"""When each student handed in, from a file the LMS gives (the download itself carries none).

An LMS download holds the notebooks but not when they came: Canvas marks a
late file ``_LATE_`` in its name and no more, Moodle's folders say nothing.
``grade --times FILE`` reads the hand-in times from a file the TA passes:

- Moodle's offline grading worksheet: ``Last modified (submission)`` per
  ``Identifier`` ("Participant N"), in the time zone of the TA who exported it;
- any CSV with ``student_id`` and ``handed_in`` columns (from Canvas's API, a
  form, a spreadsheet), matched by student id.

Times without a zone are read in the course's ``c.Exchange.timezone``
(nbgrader's, UTC unless set), and kept in UTC as nbgrader keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil import parser as dates

from autograder.pipeline.errors import UserError
from autograder.pipeline.lms import moodle
from autograder.pipeline.lms.grades import read_csv

STUDENT_COLUMNS = ("student_id", "handed_in")  #: a plain CSV of hand-in times


@dataclass
class HandIns:
    """Hand-in times (naive UTC, as nbgrader keeps them), by LMS id or by student id."""

    by_lms_id: dict[str, datetime] = field(default_factory=dict)
    by_student: dict[str, datetime] = field(default_factory=dict)

    def of(self, student_id: str, lms_id: str) -> datetime | None:
        """The time ``student_id`` (LMS id ``lms_id``) handed in, if the file says."""
        if lms_id and lms_id in self.by_lms_id:
            return self.by_lms_id[lms_id]
        return self.by_student.get(student_id)


def _utc(text: str, zone: ZoneInfo, where: str) -> datetime:
    try:
        when = dates.parse(text)
    except (ValueError, OverflowError):
        raise UserError(f"{where}: {text!r} is no time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone)
    return when.astimezone(UTC).replace(tzinfo=None)


def read(path: Path | str, timezone: str = "UTC") -> HandIns:
    """The hand-in times in ``path`` (a Moodle worksheet or a plain CSV; see the module).

    timezone: the zone of times that name none (the course's ``c.Exchange.timezone``).
    A file of neither kind, or a time that cannot be read, is the user's mistake.
    """
    path = Path(path)
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(f"c.Exchange.timezone = {timezone!r} is no time zone") from None
    header, body = read_csv(path, "file of hand-in times")
    found = HandIns()
    if all(name in header for name in moodle.HANDED_IN):
        for number, text in moodle.hand_in_times(header, body):
            found.by_lms_id[number] = _utc(text, zone, f"{path}: participant {number}")
    elif all(name in header for name in STUDENT_COLUMNS):
        at = {name: header.index(name) for name in STUDENT_COLUMNS}
        for row in body:
            if len(row) > max(at.values()) and row[at["handed_in"]].strip():
                student = row[at["student_id"]].strip()
                found.by_student[student] = _utc(row[at["handed_in"]], zone, f"{path}: {student}")
    else:
        raise UserError(
            f"{path}: not a Moodle grading worksheet ({', '.join(moodle.HANDED_IN)}) nor a CSV "
            f"of {', '.join(STUDENT_COLUMNS)}"
        )
    return found
