"""A TA's grades through a regrade: which stand, and which answers ask for a TA again.

Stock nbgrader's ``SaveAutoGrades`` flags every grade a TA gave as needing a
manual grade again whenever a submission is autograded again, so an appeal
(``grade --student amy --force``) or a rubric change put every written answer
back in formgrader's queue and held ``export --final``. Here a TA's grade
stands through any regrade while what it judged is unchanged; the grade is
flagged again only when that changed, and the run names each one.

What a grade judged (:func:`judged`): for an answer cell with points (a
written answer), its own text; for a test cell a TA overrode, the text of
every answer cell of the notebook and the test itself. Unchanged means the
same text as in the graded notebook the TA saw (``autograded/``, read before
it is replaced) and the same automatic score.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbgrader.api import (
    Assignment,
    BaseCell,
    Grade,
    Notebook,
    SubmittedAssignment,
    SubmittedNotebook,
)
from sqlalchemy import select
from sqlalchemy.orm import Session

from autograder.pipeline.files import read_bounded

#: a graded notebook read back to compare answers: larger ones count as changed
MAX_NOTEBOOK = 64 * 2**20

Cell = tuple[str, str]  #: (notebook stem, grade cell name)


@dataclass(frozen=True)
class Standing:
    """What a regrade keeps of one student's TA grades.

    stands: the grades whose answer is unchanged, kept as the TA graded them;
    again: the grades whose answer changed since a TA graded it (awaiting a TA).
    """

    stands: frozenset[Cell] = frozenset()
    again: tuple[Cell, ...] = ()


def submitted(session: Session, assignment: str) -> set[str]:
    """The students who have a submission of ``assignment`` in the gradebook: only they can
    hold a grade a TA gave (:func:`graded_by_ta`)."""
    found = session.execute(
        select(SubmittedAssignment.student_id)
        .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
        .where(Assignment.name == assignment)
    )
    return {student_id for (student_id,) in found}


def graded_by_ta(session: Session, assignment: str, student_id: str) -> dict[Cell, float | None]:
    """``{(stem, cell): automatic score}`` of the grades a TA gave ``student_id`` that await
    nothing (a manual score, not flagged for a TA)."""
    found = session.execute(
        select(Notebook.name, BaseCell.name, Grade.auto_score)
        .join(BaseCell, BaseCell.id == Grade.cell_id)
        .join(SubmittedNotebook, SubmittedNotebook.id == Grade.notebook_id)
        .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
        .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
        .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
        .where(
            Assignment.name == assignment,
            SubmittedAssignment.student_id == student_id,
            Grade.manual_score.is_not(None),
            Grade.needs_manual_grade.is_(False),
        )
    )
    return {(stem, name): auto for stem, name, auto in found}


def judged(nb: Any) -> dict[str, str]:
    """``{grade cell name: digest of what its grade judged}`` for one notebook (a dict or
    NotebookNode; see the module)."""
    cells = [c for c in nb.get("cells", []) if isinstance(c, dict)]
    answers = hashlib.sha256()
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            answers.update(_source(cell).encode() + b"\0")
    found = {}
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        name = meta.get("grade_id")
        if not meta.get("grade") or not isinstance(name, str):
            continue
        own = hashlib.sha256(_source(cell).encode())
        if not meta.get("solution"):
            own.update(answers.digest())
        found[name] = own.hexdigest()
    return found


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def read_graded(path: Path) -> Any | None:
    """The graded notebook at ``path`` as JSON, None when there is none or it is unreadable."""
    data = read_bounded(path, MAX_NOTEBOOK)
    if data is None:
        return None
    try:
        found = json.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def standing(
    ta: Mapping[Cell, float | None],
    before: Mapping[str, Any | None],
    after: Mapping[str, Any | None],
    scores: Mapping[str, Mapping[str, float | None] | None],
) -> Standing:
    """Which of the TA's grades ``ta`` (:func:`graded_by_ta`) stand through this regrade.

    before: ``{stem: the graded notebook the TA saw, or None}``; after:
    ``{stem: the notebook graded now, or None when it could not be read}``;
    scores: ``{stem: {cell: the automatic score now}}``.
    """
    stands, again = set(), []
    for stem in sorted({stem for stem, _ in ta}):
        old, new = before.get(stem), after.get(stem)
        was = judged(old) if old is not None else {}
        now = judged(new) if new is not None else {}
        scored = scores.get(stem) or {}
        for cell in sorted(c for c in ta if c[0] == stem):
            name = cell[1]
            same = name in was and was.get(name) == now.get(name)
            if same and _equal(scored.get(name), ta[cell]):
                stands.add(cell)
            else:
                again.append(cell)
    return Standing(frozenset(stands), tuple(again))


def _equal(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) < 1e-9
