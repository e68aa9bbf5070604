"""Grades out to an LMS: ``python -m autograder export {canvas,moodle} ...``.

Both fill a file the LMS exported, so the LMS takes it back unchanged but for
the one column that holds this assignment's grades:

- **Canvas**: the gradebook export (``Student, ID, SIS User ID, SIS Login ID,
  Section``, one column per assignment titled ``Name (id)``, a ``Points
  Possible`` row). Students are matched by Canvas user id (the ``ID`` column;
  the grader keeps it from Canvas's submission file names), else by ``SIS Login
  ID``, else by ``SIS User ID``, against the course's student ids (a class
  collected through nbgrader's exchange is known by login).
- **Moodle**: the offline grading worksheet (``Identifier`` "Participant N",
  ``Full name``, ``Email address``, ``Status``, ``Grade``, ``Maximum Grade``,
  ..., ``Feedback comments``), matched by participant number (kept from
  Moodle's submission folder names); by full name or e-mail only when asked
  (``--match-names``), each such match named; plus a zip of the feedback pages
  in the layout Moodle's "Upload multiple feedback files in a zip" expects.

Totals come from the course's nbgrader gradebook (what formgrader shows: a
TA's manual points included, a late penalty taken off), scaled to the LMS's
maximum when the file states one (Canvas's ``Points Possible``, Moodle's
``Maximum Grade``). Every student of the file without a graded submission
keeps an empty cell, every graded student the file does not list is named, and
an LMS id two students claim is written for neither: nothing is dropped or
overwritten silently.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import database_file
from autograder.pipeline.errors import UserError
from autograder.pipeline.results import ClassFolder, after_penalty, ledger
from autograder.pipeline.submissions.collect import slug

_log = logging.getLogger(__name__)


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


def not_final(grades: dict[str, Total]) -> list[str]:
    """``student (why)`` for every grade that is not final yet, by student id."""
    return [f"{sid} ({grades[sid].pending})" for sid in sorted(grades) if grades[sid].pending]


def _final_or_refuse(grades: dict[str, Total], final: bool) -> list[str]:
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


def _number(value: float) -> str:
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
    """What an export did: students filled, listed without a grade, graded but not listed.

    scaled: ``(our maximum, the LMS's)`` when totals were scaled; notes: lines
    for the TA (matches by name, ids claimed twice).
    """

    filled: list[str]
    without_grade: list[str]
    unmatched: list[str]
    scaled: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)

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


# ------------------------------------------------------------------ Canvas

CANVAS_FIXED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


CANVAS_TOTALS = re.compile(r"\b(current|final|unposted)\b.*\b(score|grade|points)\b", re.I)


def canvas_column(
    header: list[str], assignment_id: str, column: str | None, flag: str = "--column"
) -> int:
    """The index of the assignment's column.

    ``column`` if given; else the only assignment column of the file; else the
    one naming the assignment id. flag: how the user names a column here.
    """
    if column is not None:
        if column not in header:
            raise UserError(f"no column {column!r} in the gradebook; choose one with {flag}")
        return header.index(column)
    graded = [h for h in header if h not in CANVAS_FIXED and not CANVAS_TOTALS.search(h)]
    if len(graded) == 1:
        return header.index(graded[0])
    named = [h for h in graded if assignment_id.lower() in h.lower()]
    if len(named) != 1:
        raise UserError(
            f"which column is {assignment_id}? the gradebook has "
            f"{', '.join(repr(h) for h in graded) or 'no assignment column'}: "
            f"choose one with {flag}=NAME"
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
    by_lms, notes = by_lms_id(grades)
    claimed = {t.student_id for t in grades.values() if t.lms_id and t.lms_id not in by_lms}
    by_id = {sid.lower(): t for sid, t in grades.items() if sid not in claimed}
    ours = max((t.max_score for t in grades.values()), default=0.0)
    possible = [
        r
        for r in rows
        if r and not r[at["ID"]].strip() and r[at["Student"]].lower().endswith("points possible")
    ]
    maximum = None
    if possible and len(possible[0]) > column:
        maximum = lms_maximum(possible[0][column], "the Points Possible row")
    filled, without, used = [], [], set()
    out = []
    for row in rows:
        row = row + [""] * (len(header) - len(row))
        name = row[at["Student"]].strip()
        if not row[at["ID"]].strip():  # "Points Possible" (or an old export's "Muted") row
            if name.lower().endswith("points possible") and not row[column].strip():
                row[column] = _number(ours)
            out.append(row)
            continue
        total = by_lms.get(row[at["ID"]].strip())
        for key in ("SIS Login ID", "SIS User ID"):
            total = total or by_id.get(row[at[key]].strip().lower())
        if total is None:
            without.append(name)
        else:
            row[column] = _number(scaled(total, maximum))
            filled.append(total.student_id)
            used.add(total.student_id)
        out.append(row)
    unmatched = sorted(set(grades) - used)
    rescaled = (ours, maximum) if maximum is not None and maximum != ours else None
    return out, Filled(filled, without, unmatched, rescaled, notes)


def write_canvas(
    template: Path,
    column: str | None,
    out: Path,
    assignment_id: str,
    grades: dict[str, Total],
    flag: str = "--column",
) -> Filled:
    """Fill ``template`` (a Canvas gradebook CSV) with ``grades`` into ``out``.

    flag: how the user names a column (the command's ``--column``, or the plugin's).
    """
    header, rows = _read_csv(template, "Canvas gradebook")
    index = canvas_column(header, assignment_id, column, flag)
    filled_rows, filled = fill_canvas(header, rows, grades, index)
    _write_csv(out, header, filled_rows)
    return filled


def canvas(
    *,
    template: Path | str,
    column: str | None = None,
    out: Path | str = ClassFolder.DEFAULT / "canvas.csv",
    final: bool = False,
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Fill the Canvas gradebook ``template`` with this assignment's totals into ``out``.

    final: refuse (exit 2, nothing written) while any grade is not final.
    """
    chosen = find_assignment(course, assignment)
    grades = totals(chosen)
    waiting = _final_or_refuse(grades, final)
    filled = write_canvas(Path(template), column, Path(out), chosen.id, grades)
    filled.notes += waiting
    _log.info(filled.summary(Path(out)))
    return 0


# ------------------------------------------------------------------ Moodle

MOODLE_NEEDED = ("Identifier", "Full name", "Grade")
PARTICIPANT = re.compile(r"(\d+)\s*$")


def fill_moodle(
    header: list[str],
    rows: list[list[str]],
    grades: dict[str, Total],
    match_names: bool = False,
    pages: Path | None = None,
) -> tuple[list[list[str]], Filled, dict[str, tuple[str, str]]]:
    """The worksheet with each matched student's grade; also ``{student_id: (name, number)}``.

    Matched by participant number; with ``match_names`` also by full name or
    e-mail, each such match named in the notes. pages: the feedback pages'
    folder; a row says its page is attached only when it will be (the page
    exists and the row has a participant number to file it under).
    """
    missing = [h for h in MOODLE_NEEDED if h not in header]
    if missing:
        raise UserError(f"not a Moodle grading worksheet: no column {', '.join(missing)}")
    at = {name: header.index(name) for name in header}
    by_lms, notes = by_lms_id(grades)
    rows = [row + [""] * (len(header) - len(row)) for row in rows]
    numbers = [PARTICIPANT.search(row[at["Identifier"]].strip()) for row in rows]
    keyed = [by_lms.get(n.group(1)) if n else None for n in numbers]
    by_name: dict[str, Total] = {}
    if match_names:  # only students no row names by its key
        taken = {t.student_id for t in keyed if t is not None}
        for candidate in grades.values():
            for name in candidate.names() if candidate.student_id not in taken else ():
                by_name[name] = candidate
    filled: list[str] = []
    without: list[str] = []
    used: set[str] = set()
    who: dict[str, tuple[str, str]] = {}
    out: list[list[str]] = []
    maxima: set[tuple[float, float]] = set()
    for row, number, found in zip(rows, numbers, keyed):
        identifier = row[at["Identifier"]].strip()
        name = row[at["Full name"]].strip()
        total: Total | None = found
        if total is None and by_name:
            total = by_name.get(slug(name))
            if total is None and "Email address" in at:
                total = by_name.get(slug(row[at["Email address"]].split("@")[0]))
            if total is not None:
                notes.append(f"{identifier} ({name}) matched {total.student_id} by name or e-mail")
        if total is None:
            without.append(name or identifier)
        else:
            maximum = None
            if "Maximum Grade" in at:
                maximum = lms_maximum(row[at["Maximum Grade"]], f"{identifier}'s Maximum Grade")
            row[at["Grade"]] = _number(scaled(total, maximum))
            if maximum is None and "Maximum Grade" in at:
                row[at["Maximum Grade"]] = _number(total.max_score)
            elif maximum is not None and maximum != total.max_score:
                maxima.add((total.max_score, maximum))
            attached = (
                pages is not None
                and number is not None
                and (pages / f"{total.student_id}.html").is_file()
            )
            if attached and "Feedback comments" in at and not row[at["Feedback comments"]].strip():
                row[at["Feedback comments"]] = "Your feedback page is attached."
            filled.append(total.student_id)
            used.add(total.student_id)
            who[total.student_id] = (name, number.group(1) if number else "")
        out.append(row)
    rescaled = sorted(maxima)[0] if len(maxima) == 1 else None
    if len(maxima) > 1:
        scales = ", ".join(f"{theirs:g}" for _, theirs in sorted(maxima))
        notes.append(f"totals scaled to each row's Maximum Grade: {scales}")
    return out, Filled(filled, without, sorted(set(grades) - used), rescaled, notes), who


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
    worksheet: Path,
    out: Path,
    feedback: Path,
    grades: dict[str, Total],
    match_names: bool = False,
) -> tuple[Filled, Path, int, list[str]]:
    """Fill ``worksheet`` into ``out`` and zip the ``feedback`` pages beside it.

    Returns what was filled, the zip's path, the pages zipped and the students
    whose page (or participant number) is missing.
    """
    header, rows = _read_csv(worksheet, "Moodle worksheet")
    filled_rows, filled, who = fill_moodle(header, rows, grades, match_names, feedback)
    _write_csv(out, header, filled_rows)
    pages = out.with_name(f"{out.stem}-feedback.zip")
    zipped, missing = moodle_feedback_zip(feedback, who, pages)
    return filled, pages, zipped, missing


def moodle(
    *,
    worksheet: Path | str,
    out: Path | str = ClassFolder.DEFAULT / "moodle.csv",
    feedback: Path | str = ClassFolder.DEFAULT / "feedback",
    match_names: bool = False,
    final: bool = False,
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Fill Moodle's grading ``worksheet`` into ``out``, feedback pages zipped beside it.

    final: refuse (exit 2, nothing written) while any grade is not final.
    """
    chosen = find_assignment(course, assignment)
    out = Path(out)
    grades = totals(chosen)
    waiting = _final_or_refuse(grades, final)
    filled, pages, zipped, missing = write_moodle(
        Path(worksheet), out, Path(feedback), grades, match_names
    )
    filled.notes += waiting
    _log.info(filled.summary(out))
    if not Path(feedback).is_dir():
        _log.warning(
            f"no feedback pages in {feedback}: pass --feedback DIR/feedback, where DIR is "
            "the grade run's --out (no row says a page is attached)"
        )
    _log.info(f"wrote {pages}: {zipped} feedback page(s) for Moodle's feedback upload")
    if missing:
        _log.warning(f"no feedback page (or no participant number) for: {', '.join(missing)}")
    return 0
