"""Grades out to an LMS: ``python -m autograder export {canvas,moodle} ...``.

Both fill a file the LMS exported, so the LMS takes it back unchanged but for
the one column that holds this assignment's grades:

- **Canvas**: the gradebook export (``Student, ID, SIS User ID, SIS Login ID,
  Section``, one column per assignment titled ``Name (id)``, a ``Points
  Possible`` row). Students are matched by Canvas user id (the ``ID`` column;
  the grader keeps it from Canvas's submission file names), else by ``SIS Login
  ID``, else by ``SIS User ID``, against the course's student ids.
- **Moodle**: the offline grading worksheet (``Identifier`` "Participant N",
  ``Full name``, ``Email address``, ``Status``, ``Grade``, ``Maximum Grade``,
  ..., ``Feedback comments``), matched by participant number (kept from
  Moodle's submission folder names), else by full name, else by e-mail; plus a
  zip of the feedback pages in the layout Moodle's "Upload multiple feedback
  files in a zip" expects.

Totals come from the course's nbgrader gradebook (what formgrader shows: a
TA's manual points included, a late penalty taken off). Every student of the
file without a graded submission keeps an empty cell, and every graded student
the file does not list is named: nothing is dropped silently.
"""

from __future__ import annotations

import csv
import io
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ..pipeline.collect import slug
from ..pipeline.course import Assignment, find_assignment
from ..pipeline.errors import UserError


@dataclass(frozen=True)
class Total:
    """One student's grade for an assignment, as the gradebook holds it (points)."""

    student_id: str
    score: float
    max_score: float
    lms_id: str  # the student's id in the LMS ("" when not known)


def totals_in(gb: Gradebook, assignment_id: str) -> dict[str, Total]:
    """``{student_id: Total}`` for every graded submission of an assignment in ``gb``."""
    try:
        submissions = gb.find_assignment(assignment_id).submissions
    except MissingEntry:
        raise UserError(f"the gradebook has no grades for {assignment_id} yet") from None
    found = {}
    for sub in submissions:
        score = max(0.0, float(sub.score) - float(sub.late_submission_penalty or 0))
        found[sub.student.id] = Total(
            sub.student.id, score, float(sub.max_score), sub.student.lms_user_id or ""
        )
    if not found:
        raise UserError(f"the gradebook has no grades for {assignment_id} yet")
    return found


def totals(assignment: Assignment) -> dict[str, Total]:
    """:func:`totals_in` the course's gradebook."""
    db_url = str(assignment.coursedir.db_url)
    database = Path(db_url.removeprefix("sqlite:///"))
    if db_url.startswith("sqlite:///") and not database.is_file():
        raise UserError(f"no gradebook at {database}: grade the class first")
    with Gradebook(db_url) as gb:
        return totals_in(gb, assignment.id)


def _number(value: float) -> str:
    return f"{value:g}"


def _read_csv(path: Path, what: str) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of a CSV an LMS exported (a byte-order mark is allowed)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as why:
        raise UserError(f"cannot read the {what} {path}: {why}") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise UserError(f"the {what} {path} is empty")
    return rows[0], rows[1:]


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)


@dataclass
class Filled:
    """What an export did: students filled, listed without a grade, graded but not listed."""

    filled: list[str]
    without_grade: list[str]
    unmatched: list[str]

    def summary(self, path: Path) -> str:
        """Lines for the terminal, ending with where the file is."""
        lines = [f"{len(self.filled)} student(s) filled in"]
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


# ------------------------------------------------------------------ Canvas

CANVAS_FIXED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def canvas_column(header: list[str], assignment_id: str, column: str | None) -> int:
    """The index of the assignment's column: ``column`` if given, else the one naming the id."""
    if column is not None:
        if column not in header:
            raise UserError(f"no column {column!r} in the gradebook; its columns: {header}")
        return header.index(column)
    graded = [h for h in header if h not in CANVAS_FIXED]
    named = [h for h in graded if assignment_id.lower() in h.lower()]
    if len(named) != 1:
        which = "none" if not named else "several"
        raise UserError(
            f"{which} of the gradebook's columns name {assignment_id!r}; "
            f"choose one with --column (columns: {', '.join(graded) or 'none'})"
        )
    return header.index(named[0])


def fill_canvas(
    header: list[str], rows: list[list[str]], grades: dict[str, Total], column: int
) -> tuple[list[list[str]], Filled]:
    """``rows`` of a Canvas gradebook with ``column`` holding each matched student's total."""
    missing = [h for h in CANVAS_FIXED[:4] if h not in header]
    if missing:
        raise UserError(f"not a Canvas gradebook export: no column {', '.join(missing)}")
    at = {name: header.index(name) for name in CANVAS_FIXED[:4]}
    by_lms = {t.lms_id: t for t in grades.values() if t.lms_id}
    by_id = {sid.lower(): t for sid, t in grades.items()}
    filled, without, used = [], [], set()
    out = []
    for row in rows:
        row = row + [""] * (len(header) - len(row))
        name = row[at["Student"]].strip()
        if not row[at["ID"]].strip():  # "Points Possible" (or an old export's "Muted") row
            if name.lower().endswith("points possible") and not row[column].strip():
                row[column] = _number(next(iter(grades.values())).max_score)
            out.append(row)
            continue
        total = by_lms.get(row[at["ID"]].strip())
        for key in ("SIS Login ID", "SIS User ID"):
            total = total or by_id.get(row[at[key]].strip().lower())
        if total is None:
            without.append(name)
        else:
            row[column] = _number(total.score)
            filled.append(total.student_id)
            used.add(total.student_id)
        out.append(row)
    unmatched = sorted(set(grades) - used)
    return out, Filled(filled, without, unmatched)


def write_canvas(
    template: Path, column: str | None, out: Path, assignment_id: str, grades: dict[str, Total]
) -> Filled:
    """Fill ``template`` (a Canvas gradebook CSV) with ``grades`` into ``out``."""
    header, rows = _read_csv(template, "Canvas gradebook")
    index = canvas_column(header, assignment_id, column)
    filled_rows, filled = fill_canvas(header, rows, grades, index)
    _write_csv(out, header, filled_rows)
    return filled


def canvas(
    *,
    template: Path | str,
    column: str | None = None,
    out: Path | str = Path("grades") / "canvas.csv",
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Fill the Canvas gradebook ``template`` with this assignment's totals into ``out``."""
    chosen = find_assignment(course, assignment)
    filled = write_canvas(Path(template), column, Path(out), chosen.id, totals(chosen))
    print(filled.summary(Path(out)))
    return 0


# ------------------------------------------------------------------ Moodle

MOODLE_NEEDED = ("Identifier", "Full name", "Grade")
PARTICIPANT = re.compile(r"(\d+)\s*$")


def fill_moodle(
    header: list[str], rows: list[list[str]], grades: dict[str, Total]
) -> tuple[list[list[str]], Filled, dict[str, tuple[str, str]]]:
    """The worksheet with each matched student's grade; also ``{student_id: (name, number)}``."""
    missing = [h for h in MOODLE_NEEDED if h not in header]
    if missing:
        raise UserError(f"not a Moodle grading worksheet: no column {', '.join(missing)}")
    at = {name: header.index(name) for name in header}
    by_lms = {t.lms_id: t for t in grades.values() if t.lms_id}
    by_id = {sid.lower(): t for sid, t in grades.items()}
    filled, without, used, who = [], [], set(), {}
    out = []
    for row in rows:
        row = row + [""] * (len(header) - len(row))
        identifier = row[at["Identifier"]].strip()
        number = PARTICIPANT.search(identifier)
        total = by_lms.get(number.group(1)) if number else None
        name = row[at["Full name"]].strip()
        total = total or by_id.get(slug(name))
        if total is None and "Email address" in at:
            total = by_id.get(row[at["Email address"]].split("@")[0].strip().lower())
        if total is None:
            without.append(name or identifier)
        else:
            row[at["Grade"]] = _number(total.score)
            if "Maximum Grade" in at and not row[at["Maximum Grade"]].strip():
                row[at["Maximum Grade"]] = _number(total.max_score)
            if "Feedback comments" in at and not row[at["Feedback comments"]].strip():
                row[at["Feedback comments"]] = "Your feedback page is attached."
            filled.append(total.student_id)
            used.add(total.student_id)
            who[total.student_id] = (name, number.group(1) if number else "")
        out.append(row)
    return out, Filled(filled, without, sorted(set(grades) - used)), who


def moodle_feedback_zip(
    pages: Path, who: dict[str, tuple[str, str]], into: Path
) -> tuple[int, list[str]]:
    """Zip each student's feedback page as Moodle's feedback upload wants it.

    One folder per participant, named as in Moodle's submission download
    (``Jane Doe_1234_assignsubmission_file_/feedback.html``). Returns the
    number of pages zipped and the students whose page is missing.
    """
    zipped, missing = 0, []
    into.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(into, "w", zipfile.ZIP_DEFLATED) as archive:
        for student_id, (name, number) in sorted(who.items()):
            page = pages / f"{student_id}.html"
            if not number or not page.is_file():
                missing.append(student_id)
                continue
            archive.write(page, f"{name}_{number}_assignsubmission_file_/feedback.html")
            zipped += 1
    return zipped, missing


def write_moodle(
    worksheet: Path, out: Path, feedback: Path, grades: dict[str, Total]
) -> tuple[Filled, Path, int, list[str]]:
    """Fill ``worksheet`` into ``out`` and zip the ``feedback`` pages beside it.

    Returns what was filled, the zip's path, the pages zipped and the students
    whose page (or participant number) is missing.
    """
    header, rows = _read_csv(worksheet, "Moodle worksheet")
    filled_rows, filled, who = fill_moodle(header, rows, grades)
    _write_csv(out, header, filled_rows)
    pages = out.with_name(f"{out.stem}-feedback.zip")
    zipped, missing = moodle_feedback_zip(feedback, who, pages)
    return filled, pages, zipped, missing


def moodle(
    *,
    worksheet: Path | str,
    out: Path | str = Path("grades") / "moodle.csv",
    feedback: Path | str = Path("grades") / "feedback",
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Fill Moodle's grading ``worksheet`` into ``out``, feedback pages zipped beside it."""
    chosen = find_assignment(course, assignment)
    out = Path(out)
    filled, pages, zipped, missing = write_moodle(
        Path(worksheet), out, Path(feedback), totals(chosen)
    )
    print(filled.summary(out))
    print(f"wrote {pages}: {zipped} feedback page(s) for Moodle's feedback upload")
    if missing:
        print(
            f"no feedback page (or no participant number) for: {', '.join(missing)}",
            file=sys.stderr,
        )
    return 0
