"""A graded submission's rows in nbgrader's gradebook, written a table at a time.

What nbgrader 0.9.6's ``update_or_create_student``, ``update_or_create_submission``
(``add_submission``: a submitted notebook per notebook, a grade per grade and
task cell, a comment per solution and task cell) and ``SaveAutoGrades`` write,
with the same values, as a few SQLAlchemy Core statements on nbgrader's own
tables instead of some 84 ORM objects and 40 queries a student. The main
process records every student of a class, so this is what bounds how many a
second any number of workers can grade.

:func:`auto_grades` runs in the worker: SaveAutoGrades' decisions about each
cell of one executed notebook. :class:`Rows` runs in the main process, in the
caller's transaction (the run commits students in batches). The rows it
wrote come back as :class:`Written`, from which the student's outcome is built
without reading the gradebook again. ``tests/engine/test_rows.py``
compares what it writes with nbgrader's own API, row by row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nbgrader import utils
from nbgrader.api import (
    Assignment,
    BaseCell,
    Comment,
    Grade,
    GradeCell,
    Notebook,
    SolutionCell,
    Student,
    SubmittedAssignment,
    SubmittedNotebook,
    TaskCell,
)
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session


@dataclass(frozen=True)
class AutoGrades:
    """What ``SaveAutoGrades`` records for one executed notebook.

    scores: ``{grade_id: auto_score}`` of its grade cells (None: a TA grades it);
    comments: ``{grade_id: auto_comment}`` of its solution and task cells
    ("No response." for an answer left as released).
    """

    scores: dict[str, float | None] = field(default_factory=dict)
    comments: dict[str, str | None] = field(default_factory=dict)


def auto_grades(nb: Any) -> AutoGrades:
    """SaveAutoGrades' ``_add_score`` and ``_add_comment``, cell by cell, for an executed ``nb``.

    nb: a NotebookNode. A grade_id met twice keeps its last cell's, as the
    gradebook would after nbgrader's writes one by one.
    """
    found = AutoGrades()
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        name = meta.get("grade_id")
        if utils.is_grade(cell):
            found.scores[name] = utils.determine_grade(cell)[0]
        if utils.is_solution(cell) or utils.is_task(cell):
            unchanged = meta.get("checksum", None) == utils.compute_checksum(cell)
            answered = not unchanged or utils.is_task(cell)
            found.comments[name] = None if answered else "No response."
    return found


@dataclass(frozen=True)
class Written:
    """What the gradebook holds for a student once :meth:`Rows.save` wrote their grading.

    grades: ``{(notebook stem, cell name): auto_score}``; nothing else is
    held yet (no TA's grade or comment, no late penalty).
    """

    grades: dict[tuple[str, str], float | None]


@dataclass(frozen=True)
class _NotebookCells:
    id: str
    grade_cells: dict[str, str]  # name -> cell id: the grade cells, then the task cells
    comment_cells: dict[str, str]  # name -> cell id: the solution cells, then the task cells


class Rows:
    """Writes graded submissions of one assignment into an open gradebook session.

    session: nbgrader's ``Gradebook.db``; nothing is committed here.
    """

    def __init__(self, session: Session, assignment: str) -> None:
        self.session = session
        found = session.execute(
            select(Assignment.id, Assignment.duedate).where(Assignment.name == assignment)
        ).one()
        self.assignment_id: str = found[0]
        self.duedate: datetime | None = found[1]  #: UTC, as nbgrader keeps it
        self.notebooks = self._layout()

    def _layout(self) -> dict[str, _NotebookCells]:
        """``{notebook stem: its cells}``, as ``add_submission`` mirrors them."""
        notebooks = self.session.execute(
            select(Notebook.id, Notebook.name).where(Notebook.assignment_id == self.assignment_id)
        ).all()
        layout = {}
        for notebook_id, stem in notebooks:

            def cells(model: Any, notebook_id: str = notebook_id) -> dict[str, str]:
                query = select(model.name, model.id).where(model.notebook_id == notebook_id)
                return dict(self.session.execute(query).all())

            tasks = cells(TaskCell)
            layout[stem] = _NotebookCells(
                notebook_id, {**cells(GradeCell), **tasks}, {**cells(SolutionCell), **tasks}
            )
        return layout

    def maybe_late(self, timestamp: datetime | None) -> bool:
        """Was work handed in at ``timestamp`` past the due date (any extension aside)?"""
        stamp = utils.parse_utc(timestamp)
        return stamp is not None and self.duedate is not None and stamp > self.duedate

    def check(self, notebooks: dict[str, AutoGrades | None]) -> None:
        """Raise KeyError, before anything is written, for a cell the assignment lacks."""
        for stem, graded in notebooks.items():
            cells = self.notebooks.get(stem)
            if cells is None:
                raise KeyError(f"no notebook {stem} in the gradebook")
            unknown = [] if graded is None else _unknown(graded, cells)
            if unknown:
                raise KeyError(f"{stem}: no such cells in the gradebook: {', '.join(unknown)}")

    def _student(self, student_id: str, known: dict[str, str | None]) -> None:
        """``update_or_create_student``: the student, with what is known of them."""
        table = Student.__table__
        exists = self.session.execute(select(Student.id).where(Student.id == student_id)).first()
        if exists is None:
            self.session.execute(insert(table).values(id=student_id, **known))
        elif known:
            self.session.execute(update(table).where(table.c.id == student_id).values(**known))

    def save(
        self,
        student_id: str,
        known: dict[str, str | None],
        timestamp: datetime | None,
        extension: timedelta | None,
        notebooks: dict[str, AutoGrades | None],
        standing: frozenset[tuple[str, str]] = frozenset(),
    ) -> Written | None:
        """Record one student's grading, as stock ``autograde`` would from scratch or again.

        known: what is known of the student (``update_or_create_student``'s
        keywords: names, email, LMS id). notebooks: ``{notebook stem:
        AutoGrades, or None for a notebook not graded}`` (every grade of it 0,
        nothing left to grade by hand). extension: the student's extension,
        kept on the submission. What the gradebook then holds, for a student
        recorded for the first time; None when they were recorded before (a
        TA's grades and comments, kept, are then read back with the rest).
        standing: ``(notebook stem, cell)`` of the TA's grades that stand
        (:mod:`~autograder.pipeline.results.ta_grades`): not flagged for a TA again,
        where stock flags every grade a TA gave.
        Raises KeyError, before anything of the student is written, for a cell
        the gradebook does not know, where nbgrader raises MissingEntry.
        """
        self.check(notebooks)
        self._student(student_id, known)
        stamp = utils.parse_utc(timestamp)
        found = self.session.execute(
            select(SubmittedAssignment.id).where(
                SubmittedAssignment.assignment_id == self.assignment_id,
                SubmittedAssignment.student_id == student_id,
            )
        ).first()
        if found is None:
            return self._create(student_id, stamp, extension, notebooks)
        self._update(found[0], stamp, extension, notebooks, standing)
        return None

    def _create(
        self,
        student_id: str,
        stamp: datetime | None,
        extension: timedelta | None,
        notebooks: dict[str, AutoGrades | None],
    ) -> Written:
        submission = _new_id()
        grade_rows: list[dict[str, Any]] = []
        comment_rows: list[dict[str, Any]] = []
        notebook_rows: list[dict[str, Any]] = []
        written_grades: dict[tuple[str, str], float | None] = {}
        for stem, cells in self.notebooks.items():
            graded = notebooks.get(stem, AutoGrades())
            notebook_id = _new_id()
            notebook_rows.append(
                {"id": notebook_id, "assignment_id": submission, "notebook_id": cells.id,
                 "flagged": False}
            )  # fmt: skip
            for name, cell_id in cells.grade_cells.items():
                auto: float | None
                if graded is None:
                    auto, needs_grading = 0.0, False
                else:
                    auto = graded.scores.get(name)
                    needs_grading = auto is None or name not in graded.scores
                grade_rows.append(
                    {"id": _new_id(), "notebook_id": notebook_id, "cell_id": cell_id,
                     "auto_score": auto, "needs_manual_grade": needs_grading}
                )  # fmt: skip
                written_grades[(stem, name)] = auto
            for name, cell_id in cells.comment_cells.items():
                remark = None if graded is None else graded.comments.get(name)
                comment_rows.append(
                    {"id": _new_id(), "notebook_id": notebook_id, "cell_id": cell_id,
                     "auto_comment": remark}
                )  # fmt: skip
        self.session.execute(
            insert(SubmittedAssignment.__table__).values(
                id=submission,
                assignment_id=self.assignment_id,
                student_id=student_id,
                timestamp=stamp,
                extension=extension,
            )
        )
        self.session.execute(insert(SubmittedNotebook.__table__), notebook_rows)
        if grade_rows:
            self.session.execute(insert(Grade.__table__), grade_rows)
        if comment_rows:
            self.session.execute(insert(Comment.__table__), comment_rows)
        return Written(written_grades)

    def _update(
        self,
        submission: str,
        stamp: datetime | None,
        extension: timedelta | None,
        notebooks: dict[str, AutoGrades | None],
        standing: frozenset[tuple[str, str]],
    ) -> None:
        grades = self._ids(Grade, submission)
        comments = self._ids(Comment, submission)
        for stem, graded in notebooks.items():
            missing = (
                []
                if graded is None
                else [n for n in graded.scores if (stem, n) not in grades]
                + [n for n in graded.comments if (stem, n) not in comments]
            )
            if missing:  # recorded before the source gained them: as nbgrader, refuse
                raise KeyError(f"{stem}: no such cells in the gradebook: {', '.join(missing)}")
        table = SubmittedAssignment.__table__
        self.session.execute(
            update(table)
            .where(table.c.id == submission)
            .values(timestamp=stamp, extension=extension)
        )
        grade_rows, comment_rows = [], []
        for stem, graded in notebooks.items():
            if graded is None:  # every grade of the notebook: 0, not to be graded by hand
                grade_rows += [
                    {"row": row, "auto": 0.0, "needs": False}
                    for (in_stem, _), (row, _) in grades.items()
                    if in_stem == stem
                ]
                continue
            for name, auto in graded.scores.items():
                row, manual = grades[(stem, name)]
                needs = (manual is not None or auto is None) and (stem, name) not in standing
                grade_rows.append({"row": row, "auto": auto, "needs": needs})
            comment_rows += [
                {"row": comments[(stem, name)][0], "remark": remark}
                for name, remark in graded.comments.items()
            ]
        if grade_rows:
            self.session.execute(_SET_GRADE, grade_rows)
        if comment_rows:
            self.session.execute(_SET_COMMENT, comment_rows)

    def _ids(self, model: Any, submission: str) -> dict[tuple[str, str], tuple[str, Any]]:
        """``{(notebook stem, cell name): (row id, what a TA gave)}`` of a submission's rows."""
        given = model.manual_score if model is Grade else model.manual_comment
        found = self.session.execute(
            select(model.id, Notebook.name, BaseCell.name, given)
            .join(BaseCell, BaseCell.id == model.cell_id)
            .join(SubmittedNotebook, SubmittedNotebook.id == model.notebook_id)
            .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
            .where(SubmittedNotebook.assignment_id == submission)
        )
        return {(stem, name): (row, manual) for row, stem, name, manual in found}


def _new_id() -> str:
    """nbgrader's ``new_uuid``: a row id."""
    return uuid.uuid4().hex


def _unknown(graded: AutoGrades, cells: _NotebookCells) -> list[str]:
    return [name for name in graded.scores if name not in cells.grade_cells] + [
        name for name in graded.comments if name not in cells.comment_cells
    ]


def _setter(model: Any, **values: str) -> Any:
    """``UPDATE`` of ``model``'s row ``:row``, each column set from the parameter named."""
    table = model.__table__
    return (
        update(table)
        .where(table.c.id == bindparam("row"))
        .values({column: bindparam(name) for column, name in values.items()})
    )


_SET_GRADE = _setter(Grade, auto_score="auto", needs_manual_grade="needs")
_SET_COMMENT = _setter(Comment, auto_comment="remark")
