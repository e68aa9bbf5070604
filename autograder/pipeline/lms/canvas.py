"""Canvas: the names of its submission files, and its gradebook export filled with totals.

- Submission files: ``doejane_LATE_1234_5678_hw1-1.ipynb`` is the student
  ``doejane`` (Canvas user id 1234, submission 5678, a late hand-in, the
  second version); the student's id here is ``doejane-1234``.
- The gradebook export (``Student, ID, SIS User ID, SIS Login ID, Section``,
  one column per assignment titled ``Name (id)``, a ``Points Possible`` row).
  Students are matched by Canvas user id (the ``ID`` column; kept from the
  submission file names), else by ``SIS Login ID``, else by ``SIS User ID``,
  against the course's student ids (a class collected through nbgrader's
  exchange is known by login).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from autograder.pipeline.course import turns
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import UserError
from autograder.pipeline.lms import exported
from autograder.pipeline.lms.grades import (
    Filled,
    Identity,
    Total,
    by_lms_id,
    final_or_refuse,
    lms_maximum,
    of_class,
    points,
    read_csv,
    scaled,
    slug,
    totals,
    write_csv,
)
from autograder.pipeline.settings import class_folder

_log = logging.getLogger(__name__)

FILE_NAME = re.compile(
    r"^(?P<student>[^\W_]+)_(?P<late>late_)?(?P<lms>\d+)_\d+_.*?(?:-(?P<version>\d+))?\.\w+$",
    re.IGNORECASE,
)  #: a submission file's name, as "Download Submissions" writes it: the name in any script


def identity(name: str) -> Identity | None:
    """Who handed in the file ``name`` (one path part), if Canvas named it."""
    match = FILE_NAME.match(name)
    if match is None:
        return None
    version = int(match.group("version") or 0)
    key = match.group("lms")
    late = match.group("late") is not None  # Canvas says late, not when: no time
    return Identity(f"{slug(match['student'])}-{key}", version, key, match["student"], late)


FIXED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


TOTALS = re.compile(r"\b(current|final|unposted)\b.*\b(score|grade|points)\b", re.I)


def assignment_column(
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
    graded = [h for h in header if h not in FIXED and not TOTALS.search(h)]
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


def fill(
    header: list[str], rows: list[list[str]], grades: dict[str, Total], column: int
) -> tuple[list[list[str]], Filled]:
    """``rows`` of a Canvas gradebook with ``column`` holding each matched student's total."""
    missing = [h for h in FIXED[:4] if h not in header]
    if missing:
        raise UserError(f"not a Canvas gradebook export: no column {', '.join(missing)}")
    at = {name: header.index(name) for name in FIXED[:4]}
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
                row[column] = points(ours)
            out.append(row)
            continue
        total = by_lms.get(row[at["ID"]].strip())
        for key in ("SIS Login ID", "SIS User ID"):
            total = total or by_id.get(row[at[key]].strip().lower())
        if total is None:
            without.append(name)
        else:
            row[column] = points(scaled(total, maximum))
            filled.append(total.student_id)
            used.add(total.student_id)
        out.append(row)
    unmatched = sorted(set(grades) - used)
    rescaled = (ours, maximum) if maximum is not None and maximum != ours else None
    return out, Filled(filled, without, unmatched, rescaled, notes)


def write(
    template: Path,
    column: str | None,
    out: Path,
    assignment_id: str,
    grades: dict[str, Total],
    flag: str = "--column",
    chosen_before: str = "",
) -> Filled:
    """Fill ``template`` (a Canvas gradebook CSV) with ``grades`` into ``out``.

    flag: how the user names a column (the command's ``--column``, or the plugin's);
    chosen_before: the column the course's last export filled, used when ``column``
    is not given and the file still has it (Canvas's titles rarely name the id).
    """
    header, rows = read_csv(template, "Canvas gradebook")
    remembered = column is None and chosen_before in header and bool(chosen_before)
    index = assignment_column(header, assignment_id, chosen_before if remembered else column, flag)
    filled_rows, filled = fill(header, rows, grades, index)
    write_csv(out, header, filled_rows)
    filled.column = header[index]
    if remembered:
        filled.notes.append(f"filled the column {chosen_before!r}, as last time ({flag} to change)")
    return filled


def export(
    *,
    template: Path | str,
    column: str | None = None,
    out: Path | str | None = None,
    grades: Path | str | None = None,
    final: bool = False,
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Fill the Canvas gradebook ``template`` with this class's totals into ``out``.

    grades: the grade run's ``--out``, whose students are the class
    (:func:`~autograder.pipeline.lms.grades.of_class`); out: default
    ``canvas.csv`` beside them. column: default the one the last export
    filled, else the only one, else the one naming the assignment. final:
    refuse (exit 2, nothing written) while any grade is not final.
    """
    chosen = find_assignment(course, assignment)
    grades = class_folder(chosen, grades)
    target = Path(out) if out is not None else Path(grades) / "canvas.csv"
    with turns.turn(chosen.root, "export canvas"):  # the course's totals hold still
        totals_of, left_out = of_class(totals(chosen), Path(grades))
        waiting = final_or_refuse(totals_of, final)
        last = exported.read(chosen).get("canvas")
        filled = write(
            Path(template),
            column,
            target,
            chosen.id,
            totals_of,
            chosen_before=last.column if last else "",
        )
        filled.notes += left_out + waiting
        scores = {s: totals_of[s].score for s in filled.filled}
        exported.record(chosen, "canvas", target, scores, filled.column)
        _log.info(filled.summary(target))
        return 0
