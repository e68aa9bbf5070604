"""What each student gets, for an LMS: the gradebook's totals, and the files LMSs exchange.

Totals come from the course's nbgrader gradebook (what formgrader shows: a
TA's manual points included, a late penalty taken off), scaled to the LMS's
maximum when the file states one. Every student of the file without a graded
submission keeps an empty cell, every graded student the file does not list is
named, and an LMS id two students claim is written for neither: nothing is
dropped or overwritten silently. Each LMS's own module
(:mod:`~autograder.pipeline.lms.canvas`, :mod:`~autograder.pipeline.lms.moodle`)
reads its file names and fills its file.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.gradebook import database_file
from autograder.pipeline.errors import UserError
from autograder.pipeline.files import write_atomic
from autograder.pipeline.results import ClassFolder, after_penalty, ledger
from autograder.pipeline.results import read_csv as read_rows

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Identity:
    """Who an LMS file belongs to: the id, the LMS's key and the readable name."""

    student_id: str
    version: int = 0
    lms_id: str = ""
    name: str = ""
    late: bool = False  # the LMS marked the file late (Canvas's _LATE_), without a time


def slug(text: str) -> str:
    """A student id safe as a folder name, in any script: ``Jane Doe`` -> ``jane_doe``."""
    return re.sub(r"\W+", "_", text.casefold()).strip("_")[:80] or "unknown"


@dataclass(frozen=True)
class Total:
    """One student's grade for an assignment, as the gradebook holds it (points)."""

    student_id: str
    score: float
    max_score: float
    lms_id: str  # the student's id in the LMS ("" when not known)
    name: str = ""  # as the LMS gave it, kept in the gradebook
    pending: str = ""  # why the grade is not final yet ("" when it is)

    def names(self) -> set[str]:
        """How a person might name this student: the LMS's name, the id without its key."""
        bare = self.student_id.removesuffix(f"-{self.lms_id}") if self.lms_id else self.student_id
        return {slug(n) for n in (self.name, bare) if n}


def totals_in(gb: Gradebook, assignment_id: str) -> dict[str, Total]:
    """``{student_id: Total}`` for every graded submission of an assignment in ``gb``."""
    try:
        submissions = gb.find_assignment(assignment_id).submissions
    except MissingEntry:
        raise UserError(f"the gradebook has no grades for {assignment_id} yet") from None
    found = {}
    for sub in submissions:
        score = after_penalty(float(sub.score), float(sub.late_submission_penalty or 0))
        student = sub.student
        name = " ".join(filter(None, (student.first_name, student.last_name)))
        pending = "a written answer awaits a TA" if sub.needs_manual_grade else ""
        found[student.id] = Total(
            student.id, score, float(sub.max_score), student.lms_user_id or "", name, pending
        )
    if not found:
        raise UserError(f"the gradebook has no grades for {assignment_id} yet")
    return found


def totals(assignment: Assignment) -> dict[str, Total]:
    """:func:`totals_in` the course's gradebook, each with why it is not final, if it is not.

    Beside what the gradebook says (an ungraded written answer), the grader's
    own record of the last grading (:func:`~autograder.pipeline.results.ledger`)
    says whether the notebook was fully graded (status ``ok``).
    """
    db_url = str(assignment.coursedir.db_url)
    database = database_file(db_url)
    if database is not None and not database.is_file():
        raise UserError(f"no gradebook at {database}: grade the class first")
    with Gradebook(db_url) as gb:
        found = totals_in(gb, assignment.id)
    recorded = ledger(assignment)
    for student_id, total in found.items():
        saved = recorded.load(student_id) or {}
        status = str((saved.get("row") or {}).get("status", "ok"))
        if status != "ok":
            why = "; ".join(filter(None, [f"graded {status}", total.pending]))
            found[student_id] = replace(total, pending=why)
    return found


def of_class(grades: dict[str, Total], folder: Path) -> tuple[dict[str, Total], list[str]]:
    """``(totals, notes)``: the totals of the class graded into ``folder``, and what was left.

    The gradebook keeps every student ever graded for the assignment (an id an
    earlier run gave, a student since dropped); the class is the students of
    ``folder``'s ``grades.csv`` (a ``grade`` run's ``--out``). The rest are
    neither exported nor warned about one by one: one line counts them. Without
    a ``grades.csv`` there, every graded student is the class, and a line says
    where the export looked.
    """
    rows = ClassFolder(folder).csv
    if not rows.is_file():
        return grades, [f"no {rows} (the grade run's --out): exporting every graded student"]
    listed = {row["student_id"] for row in read_rows(rows)}
    others = sorted(set(grades) - listed)
    notes = []
    if others:
        notes.append(
            f"{len(others)} other student(s) in the gradebook, not in {rows}, were left out "
            "(`python -m autograder remove ID` takes a student out of the gradebook)"
        )
    return {sid: total for sid, total in grades.items() if sid in listed}, notes


def not_final(grades: dict[str, Total]) -> list[str]:
    """``student (why)`` for every grade that is not final yet, by student id."""
    return [f"{sid} ({grades[sid].pending})" for sid in sorted(grades) if grades[sid].pending]


def final_or_refuse(grades: dict[str, Total], final: bool) -> list[str]:
    """The summary's line on grades not final; with ``final``, a UserError while any remain."""
    waiting = not_final(grades)
    if not waiting:
        return []
    if final:
        raise UserError(
            f"--final: {len(waiting)} grade(s) are not final, nothing written: "
            + ", ".join(waiting)
        )
    return [
        f"{len(waiting)} grade(s) not final yet (exported as they stand): " + ", ".join(waiting)
    ]


def points(value: float) -> str:
    """A total as an LMS file shows it: at most two decimals, no trailing zeros."""
    return f"{round(value, 2):g}"


def by_lms_id(grades: dict[str, Total]) -> tuple[dict[str, Total], list[str]]:
    """``({LMS id: Total}, notes)``: an LMS id two students claim belongs to neither."""
    claims: dict[str, list[Total]] = {}
    for total in grades.values():
        if total.lms_id:
            claims.setdefault(total.lms_id, []).append(total)
    found, notes = {}, []
    for lms_id, claimed in sorted(claims.items()):
        if len(claimed) == 1:
            found[lms_id] = claimed[0]
        else:
            names = " and ".join(sorted(t.student_id for t in claimed))
            notes.append(f"LMS id {lms_id} is claimed by {names}: written for neither; check")
    return found, notes


def lms_maximum(text: str, where: str) -> float | None:
    """The maximum an LMS file states (``"100.00"``), None when empty; UserError if unreadable."""
    text = text.strip().replace(",", "")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"cannot read the maximum grade {text!r} in {where}") from None
    if value <= 0:
        raise UserError(f"the maximum grade in {where} is {text}, not a positive number")
    return value


def scaled(total: Total, maximum: float | None) -> float:
    """``total``'s score on the LMS's scale (its own when the LMS states none)."""
    if maximum is None or total.max_score <= 0:
        return total.score
    return total.score * maximum / total.max_score


#: how a workbook starts: an .xlsx (a zip) and an old .xls (an OLE file)
WORKBOOKS = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0")


def read_text(path: Path, what: str) -> str:
    """The text of a CSV an LMS or a spreadsheet wrote: UTF-8 (a byte-order mark allowed),
    else Windows-1252 as Excel saves a plain "CSV", said in a note.

    A workbook (.xlsx, .xls) or a file neither decodes is the user's mistake, said in one
    line with what to do.
    """
    try:
        data = path.read_bytes()
    except OSError as why:
        raise UserError(f"cannot read the {what} {path}: {why.strerror}") from None
    if data.startswith(WORKBOOKS):
        raise UserError(
            f"the {what} {path} is an Excel workbook, not a CSV: save it as CSV UTF-8 "
            "(File > Save As > CSV UTF-8) and give that file"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        raise UserError(f"the {what} {path} is not UTF-8 text: save it as CSV UTF-8") from None
    _log.warning(
        f"note: the {what} {path} is not UTF-8: read as Windows-1252, as Excel saves a plain "
        "CSV (save it as CSV UTF-8 if a name looks wrong)"
    )
    return text


def read_csv(path: Path, what: str) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of a CSV an LMS exported (:func:`read_text`)."""
    rows = list(csv.reader(io.StringIO(read_text(path, what), newline="")))
    if not rows:
        raise UserError(f"the {what} {path} is empty")
    return rows[0], rows[1:]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    """Write an LMS's CSV (UTF-8), replacing ``path`` in one step."""
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(header)
    writer.writerows(rows)
    write_atomic(path, text.getvalue())


@dataclass
class Filled:
    """What an export did: students filled, listed without a grade, graded but not listed.

    scaled: ``(our maximum, the LMS's)`` when totals were scaled; notes: lines
    for the TA (matches by name, ids claimed twice).
    """

    filled: list[str]
    without_grade: list[str]
    unmatched: list[str]
    scaled: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)
    column: str = ""  # the column filled, where the file has a choice of them

    def summary(self, path: Path) -> str:
        """Lines for the terminal, ending with where the file is."""
        lines = [f"{len(self.filled)} student(s) filled in"]
        if self.scaled:
            ours, theirs = self.scaled
            lines.append(f"totals scaled from {ours:g} points to the LMS's {theirs:g}")
        lines += self.notes
        if self.without_grade:
            lines.append(
                f"{len(self.without_grade)} student(s) of the file have no graded submission "
                "(left empty): " + ", ".join(self.without_grade)
            )
        if self.unmatched:
            lines.append(
                f"{len(self.unmatched)} graded student(s) match no one in the file (not exported): "
                + ", ".join(self.unmatched)
            )
        lines.append(f"wrote {path}")
        return "\n".join(lines)
