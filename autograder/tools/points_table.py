"""The points tables in a notebook's prose, kept equal to the points its cells carry.

An assignment's introduction often lists its parts with their points in a
Markdown table; a rubric change (a test cell's points) leaves that table
behind. A table counts here when its header has a ``points`` column. In it:

- a row naming answer cells in Markdown code spans (`` `double` ``) is worth the points
  of those answers: the answer cell's own (a written answer) and its test
  cells' (``test_<answer>`` and ``test_<answer>_<suffix>``);
- a row whose points are bold (``**41**``) is a total: the sum of every row
  above it that is not a total;
- every other row is left as it is.

:func:`updated` gives the notebook with each table's points made true, and
what changed; ``python -m autograder generate`` writes that into the source
and says so before it builds the release.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from autograder.pipeline.course import notebook

NAMED = re.compile(r"`([^`\n]+)`")  #: an answer named in a row
BOLD = re.compile(r"^\*\*\s*[\d.]+\s*\*\*$")  #: a total's points


def worth(nb: Any) -> dict[str, float]:
    """``{answer grade_id: points}``: each answer cell's own and its test cells' points."""
    answers = [notebook.grade_id(c) for c in nb.cells if notebook.is_answer(c)]
    found = dict.fromkeys(answers, 0.0)
    for cell in nb.cells:
        if not notebook.is_graded(cell):
            continue
        points = float(notebook.nbgrader_meta(cell).get("points", 0))
        name = notebook.grade_id(cell)
        owner = name if name in found else notebook.answer_of(name, answers)
        if owner is not None:
            found[owner] += points
    return found


def _cells(line: str) -> list[str] | None:
    """The cells of a Markdown table row (None: not a row)."""
    text = line.strip()
    if not (text.startswith("|") and text.endswith("|") and len(text) > 1):
        return None
    return [cell.strip() for cell in text[1:-1].split("|")]


def _points(value: float) -> str:
    return f"{value:g}"


def _table(lines: list[str], start: int, worth_of: dict[str, float]) -> list[str]:
    """Lines ``start``.. of one table (header at ``start``), points made true: changes said."""
    header = _cells(lines[start]) or []
    names = [h.lower() for h in header]
    if "points" not in names:
        return []
    column = names.index("points")
    said, running = [], 0.0
    for at in range(start + 2, len(lines)):
        cells = _cells(lines[at])
        if cells is None or len(cells) != len(header):
            break
        answers = [n for text in cells for n in NAMED.findall(text) if n in worth_of]
        old = cells[column]
        if answers:
            value = sum(worth_of[a] for a in answers)
            new = _points(value)
            running += value
        elif BOLD.match(old):
            new = f"**{_points(running)}**"
        else:
            continue
        if old != new:
            label = next((c for c in cells if c and c != old), "")
            said.append(f"{label.strip('*')}: {old.strip('*')} -> {new.strip('*')}")
            cells[column] = new
            lines[at] = "| " + " | ".join(cells) + " |"
    return said


def updated(nb: Any) -> tuple[Any, list[str]]:
    """``(nb with every points table true, one line per row changed)``; ``nb`` itself is
    left as it was."""
    worth_of = worth(nb)
    fixed, said = copy.deepcopy(nb), []
    for cell in fixed.cells:
        if cell.cell_type != "markdown" or "|" not in cell.source:
            continue
        lines = cell.source.split("\n")
        for at in range(len(lines) - 1):
            below = _cells(lines[at + 1])
            if _cells(lines[at]) and below and all(set(c) <= set(":- ") and c for c in below):
                if at == 0 or _cells(lines[at - 1]) is None:
                    said += _table(lines, at, worth_of)
        cell.source = "\n".join(lines)
    return fixed, said
