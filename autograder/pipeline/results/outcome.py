"""One student's grading outcome, as the course gradebook holds it, and its CSV line.

The worker's grading gives each test cell's points, the status and the
messages; the gradebook adds what people decided since: a TA's grade for a
written answer or over an autograded cell, comments on any cell, the late
penalty nbgrader assigned. :func:`from_gradebook` reads all of it back, so
every view (``grades.csv``, the pages, the report, the exports) shows the total
``nbgrader export`` shows: ``score = max(0, raw_score - late_penalty)``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook, MissingEntry

from autograder.pipeline.course import internals
from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.notebook import Columns
from autograder.pipeline.files import write_atomic
from autograder.pipeline.results.graded import Graded
from autograder.pipeline.results.rows import Written

HEADER = ("student_id", "score", "max_score", "status", "raw_score", "late_penalty")


def after_penalty(raw_score: float, late_penalty: float) -> float:
    """A student's total, as ``nbgrader export`` computes it: never below 0."""
    return max(0.0, raw_score - late_penalty)


@dataclass
class Outcome:
    """One student's grading: a line of ``grades.csv`` and what every page says.

    points: ``{column: points}``, the gradebook's (a TA's grade over the
    autograder's); None for an answer not graded yet. max_score: points possible.
    status: ``ok``, or one word saying why grading was incomplete; detail: a
    sentence for the TA and the page. messages: ``{column: "Error: message"}``
    of failing tests. comments: ``{column or cell id: a TA's comment}``.
    late_penalty: points nbgrader took off for lateness. not_attempted: the
    answers still holding their stub (``notebook: answer`` when there are several).
    """

    student_id: str
    points: dict
    max_score: float
    status: str = "ok"
    detail: str = ""
    messages: dict = field(default_factory=dict)
    comments: dict = field(default_factory=dict)
    late_penalty: float = 0.0
    not_attempted: list = field(default_factory=list)

    @property
    def raw_score(self) -> float:
        """Points earned before any late penalty; ungraded cells count 0, as in nbgrader."""
        return sum(p for p in self.points.values() if p is not None)

    @property
    def score(self) -> float:
        """The total after the late penalty, as ``nbgrader export`` computes it."""
        return after_penalty(self.raw_score, self.late_penalty)

    def as_dict(self) -> dict[str, Any]:
        """The outcome as plain data (what :class:`Outcome` takes back as keywords)."""
        return asdict(self)


def from_grading(graded: Graded, columns: Columns) -> Outcome:
    """What the worker's grading alone says: a notebook not graded scores 0 in every column."""
    points: dict[str, float | None] = dict.fromkeys(columns.possible)
    for (name, _grade_id), column in columns.of.items():
        if graded.notebooks.get(name) is None:
            points[column] = 0.0
    points.update(graded.points)
    return Outcome(
        graded.student_id,
        points,
        sum(columns.possible.values()),
        str(graded.status),
        graded.detail,
        graded.messages,
        not_attempted=list(graded.not_attempted),
    )


def from_gradebook(
    gb: Gradebook, assignment: Assignment, columns: Columns, graded: Outcome
) -> Outcome:
    """``graded`` (the worker's grading) with the points, comments and penalty the gradebook holds.

    columns: the assignment's :class:`~autograder.pipeline.course.notebook.Columns`.
    A student missing from the gradebook keeps ``graded`` as it is.
    """
    try:
        submission = gb.find_submission(assignment.id, graded.student_id)
    except MissingEntry:
        return graded
    grades, remarks = internals.submission_cells(gb, assignment.id, graded.student_id)
    held = {cell: (grade.auto_score, grade.manual_score) for cell, grade in grades.items()}
    comments = {}
    for (stem, cell), remark in remarks.items():
        if remark.manual_comment:
            comments[columns.of.get((f"{stem}.ipynb", cell), cell)] = remark.manual_comment
    penalty = float(submission.late_submission_penalty or 0.0)
    return replace(_held(graded, columns, held), comments=comments, late_penalty=penalty)


def from_written(written: Written, columns: Columns, graded: Outcome) -> Outcome:
    """``graded`` as the gradebook holds it once a new student's grading was written there.

    The same as :func:`from_gradebook` would read back: nothing of a TA's, no
    late penalty yet.
    """
    held: dict[tuple[str, str], tuple[float | None, float | None]] = {
        cell: (auto, None) for cell, auto in written.grades.items()
    }
    return replace(_held(graded, columns, held), comments={}, late_penalty=0.0)


def _held(
    graded: Outcome,
    columns: Columns,
    held: dict[tuple[str, str], tuple[float | None, float | None]],
) -> Outcome:
    """``graded`` with the points of ``held``: ``{(notebook stem, cell): (auto, manual)}``."""
    points = dict(graded.points)
    for (stem, cell), (auto, manual) in held.items():
        column = columns.of.get((f"{stem}.ipynb", cell))
        if column is None:
            continue
        if manual is not None:
            points[column] = float(manual)
        elif auto is not None:  # a test's, or a written answer left as released: 0, as nbgrader
            points[column] = float(auto)
        elif column not in columns.test_columns:
            points[column] = None  # a written answer no TA has graded yet
    return replace(graded, points=points)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell_text(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet runs as a formula (a leading ``'`` if needed)."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def write_csv(outcomes: Iterable[Outcome], grade_ids: list[str], path: Path | str) -> None:
    """Write ``grades.csv`` (the contract's header, then a column per graded cell), atomically."""
    text = io.StringIO(newline="")  # a class of 10,000 is about 2 MB of CSV
    writer = csv.writer(text)
    writer.writerow([*HEADER, *grade_ids])
    for row in outcomes:
        writer.writerow(
            [
                cell_text(row.student_id),
                _number(row.score),
                _number(row.max_score),
                row.status,
                _number(row.raw_score),
                _number(row.late_penalty),
                *(_number(row.points.get(g)) for g in grade_ids),
            ]
        )
    write_atomic(path, text.getvalue())


def read_csv(path: Path | str) -> list[dict[str, str]]:
    """The rows of a ``grades.csv`` as dicts of strings."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))
