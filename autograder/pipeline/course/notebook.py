"""Reading and writing the lab notebook's cells by their nbgrader ``grade_id``.

Every tool that puts answers into a notebook (the sample class, the answer
corpus, the grader rebuilding a submission around the source's tests) goes
through these few functions, so cell ids are matched in one way only.
"""

from __future__ import annotations

import copy
import html
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def read(path: Path | str) -> Any:
    """The notebook at ``path``, as nbformat v4."""
    return nbformat.read(str(path), as_version=4)


#: a stand-in notebook's metadata key: why the notebook handed in could not be graded
UNREAD = "autograder_unread"


def stand_in(name: str, why: str) -> Any:
    """A notebook kept where a graded one goes, for one that could not be read (or is missing):
    formgrader lists only the submissions whose graded notebook exists, so this gives the
    student a row there, saying why."""
    note = (
        f"**{html.escape(name)} could not be graded**: the notebook handed in could not be "
        f"read, so every answer scored 0.\n\n<pre>{html.escape(why)}</pre>"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(note)])
    nb.metadata[UNREAD] = why
    return nb


def is_stand_in(nb: Any) -> bool:
    """Is ``nb`` a :func:`stand_in`, not a graded notebook?"""
    return UNREAD in (nb.get("metadata") or {})


def write(nb: Any, path: Path) -> None:
    """Write ``nb`` to ``path`` the way Jupyter does (one-space indent, final newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def nbgrader_meta(cell: Any) -> dict[str, Any]:
    """The cell's nbgrader metadata, or an empty dict (also when it is not a dict)."""
    metadata = cell.get("metadata", {})
    meta = metadata.get("nbgrader", {}) if isinstance(metadata, dict) else {}
    return meta if isinstance(meta, dict) else {}


def grade_id(cell: Any) -> Any:
    """The cell's nbgrader grade_id, or None."""
    return nbgrader_meta(cell).get("grade_id")


def is_answer(cell: Any) -> bool:
    """Is this a cell the student writes in (code answer or manual answer)?"""
    return bool(nbgrader_meta(cell).get("solution"))


def is_test(cell: Any) -> bool:
    """Is this an autograded test cell?"""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.cell_type == "code"


def answers(nb: Any) -> dict[str, str]:
    """``{grade_id: source}`` for every answer cell of ``nb``, in order."""
    return {grade_id(c): c.source for c in nb.cells if is_answer(c)}


def strip_solution_markers(source: str) -> str:
    """The source without nbgrader's ``### BEGIN/END SOLUTION`` lines."""
    lines = source.split("\n")
    return "\n".join(line for line in lines if line.strip() not in SOLUTION_MARKERS)


def fill(nb: Any, sources: dict[str, str]) -> Any:
    """A copy of ``nb`` whose answer cells named in ``sources`` hold the given text.

    sources: ``{grade_id: source}``; each must name an answer cell of ``nb``.
    """
    filled = copy.deepcopy(nb)
    cells = {grade_id(c): c for c in filled.cells if is_answer(c)}
    unknown = sorted(set(sources) - set(cells))
    if unknown:
        raise KeyError(f"no answer cell with grade_id {', '.join(unknown)}")
    for name, source in sources.items():
        cells[name].source = source
    return filled


def points(nb: Any) -> dict[str, float]:
    """``{grade_id: points possible}`` for every graded cell of ``nb``, in order."""
    return {
        grade_id(c): float(nbgrader_meta(c)["points"])
        for c in nb.cells
        if nbgrader_meta(c).get("grade")
    }


def answer_of(test_id: str, answer_ids: list[str]) -> str | None:
    """The answer a test cell grades: ``test_mean_empty`` grades ``mean``.

    A test's grade_id is ``test_`` + the answer id, optionally + ``_`` + a suffix;
    the longest answer id that fits wins. None if no answer fits.
    """
    fits = [a for a in answer_ids if test_id == f"test_{a}" or test_id.startswith(f"test_{a}_")]
    return max(fits, key=len, default=None)


def what_it_checks(source: str) -> str:
    """What a test cell says it checks: its opening docstring, or its opening comment.

    A hidden test opens with a comment (``# Hidden test: ...``) rather than a
    docstring, so that its placeholder in the release, all comment once the
    hidden code is cleared, prints nothing and scores as nbgrader expects.
    Returns "" when the cell says nothing.
    """
    text = source.lstrip()
    docstring = re.match(r'(?s)("""|\'\'\')(.*?)\1', text)
    if docstring:
        return " ".join(docstring.group(2).split())
    comment = re.match(r"(?:#(?!##)[^\n]*(?:\n|$))+", text)  # up to nbgrader's ### markers
    if comment:
        return " ".join(line.lstrip("#").strip() for line in comment.group(0).splitlines()).strip()
    return ""


def is_locked(cell: Any) -> bool:
    """Is this a read-only cell the instructor wrote (not an answer, not a test)?"""
    meta = nbgrader_meta(cell)
    return bool(meta.get("locked")) and not meta.get("grade") and not meta.get("solution")


class Columns:
    """The graded cells of an assignment's notebooks, as ``grades.csv`` names them.

    A cell's column is its ``grade_id``; only where two notebooks use the same
    ``grade_id`` is it written ``<notebook stem>:<grade_id>``.
    notebooks: ``{notebook file name: source notebook}``, in order.
    """

    def __init__(self, notebooks: dict[str, Any]) -> None:
        self.possible: dict[str, float] = {}  # column -> points possible
        self.of: dict[tuple[str, str], str] = {}  # (notebook, grade_id) -> column
        self.test_columns: set[str] = set()
        ids = [grade_id(c) for nb in notebooks.values() for c in nb.cells if is_graded(c)]
        shared = {g for g in ids if ids.count(g) > 1}
        for name, nb in notebooks.items():
            tests = {grade_id(c) for c in nb.cells if is_test(c)}
            for gid, possible in points(nb).items():
                column = f"{Path(name).stem}:{gid}" if gid in shared else gid
                self.of[(name, gid)] = column
                self.possible[column] = possible
                if gid in tests:
                    self.test_columns.add(column)

    def keyed(self, notebook: str, by_grade_id: dict[str, Any]) -> dict[str, Any]:
        """``by_grade_id`` of one notebook, keyed by column instead."""
        return {self.of.get((notebook, g), g): v for g, v in by_grade_id.items()}

    def tests(self) -> dict[str, float]:
        """``{column: points}`` of the autograded test cells (not the manual answers)."""
        return {c: p for c, p in self.possible.items() if c in self.test_columns}


def is_graded(cell: Any) -> bool:
    """Does this cell carry points (a test, or an answer graded by hand)?"""
    return bool(nbgrader_meta(cell).get("grade"))


def for_gradebook(nb: Any) -> dict[str, Any]:
    """``nb`` as the gradebook's steps read it: every cell, outputs only where graded.

    ``SaveAutoGrades`` scores a graded cell by its outputs (an error is no
    points); nothing else in the gradebook comes from an output, so a figure
    or printed text elsewhere need not travel to the main process. The cells
    are new dicts: ``nb`` is left as it was.
    """
    cells = [
        cell if is_graded(cell) or "outputs" not in cell else {**cell, "outputs": []}
        for cell in nb["cells"]
    ]
    return {**nb, "cells": cells}


def imports(nb: Any, modules: Sequence[str] = ()) -> str:
    """The top-level import statements of ``nb``'s code cells and of ``modules``, as code.

    modules: the texts of the helper modules beside the notebook, whose own
    imports the notebook's pull in. What a worker runs once before grading, so
    every student process starts with the modules the lab uses already
    imported. Cells and modules that do not parse are passed over.
    """
    import ast

    sources = [strip_solution_markers(c.source) for c in nb.cells if c.cell_type == "code"]
    found = []
    for source in [*sources, *modules]:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        found += [
            ast.unparse(node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
        ]
    return "\n".join(dict.fromkeys(found))
