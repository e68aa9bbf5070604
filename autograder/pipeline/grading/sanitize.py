"""From a student's file to a notebook that is safe to grade.

Reading: an empty file, truncated JSON, something that is not a notebook, or a
notebook nbformat cannot upgrade is ``unreadable``; an old notebook format is
upgraded. Inspecting: answer or test cells deleted, duplicated, edited or with
changed nbgrader metadata are noted, and the status says so. Sanitising: the
sanitising preprocessors ``nbgrader autograde`` runs, as the course configures
them (outputs cleared, duplicate ids dropped, kernelspec, test and read-only
cells put back from the source, deleted test cells re-added, cell metadata
validated), so scores agree with stock nbgrader's.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import nbformat
from traitlets.config import Config

from autograder.pipeline.course import notebook

COMPARED_METADATA = ("grade", "solution", "locked", "points", "task")


class Unreadable(Exception):
    """The file is not a notebook we can grade; the message says why, for the TA."""


@dataclass
class Findings:
    """What a submission changed that it should not have.

    deleted, duplicated, edited: grade_ids; renamed: grade_ids the source lacks;
    moved: instructor cells (tests, read-only cells) out of the source's order.
    A grade_id that is not a string is reported by its ``repr``.
    """

    deleted: list = field(default_factory=list)
    duplicated: list = field(default_factory=list)
    edited: list = field(default_factory=list)
    renamed: list = field(default_factory=list)
    moved: list = field(default_factory=list)

    @property
    def status(self) -> str:
        """``tampered``, ``cells_missing`` or ``ok``."""
        if self.duplicated or self.edited or self.renamed or self.moved:
            return "tampered"
        if self.deleted:
            return "cells_missing"
        return "ok"

    @property
    def detail(self) -> str:
        """One sentence for the TA and the feedback page."""
        parts = []
        for what, ids in (
            ("deleted", self.deleted),
            ("duplicated", self.duplicated),
            ("edited", self.edited),
            ("unknown", self.renamed),
            ("moved", self.moved),
        ):
            if ids:
                parts.append(f"{what} cells {', '.join(_shown(i) for i in ids)}")
        if self.moved:
            parts.append("graded in the source's order, with only the answers kept")
        elif parts:
            parts.append("test and read-only cells were restored from the source")
        return "; ".join(parts)


def _shown(grade_id: Any) -> str:
    return grade_id if isinstance(grade_id, str) else repr(grade_id)


def _key(grade_id: Any) -> tuple[bool, str]:
    return (not isinstance(grade_id, str), repr(grade_id))


def is_instructor(cell: Any) -> bool:
    """A test cell or a read-only cell: code the instructor wrote and students may not move."""
    return notebook.is_test(cell) or notebook.is_locked(cell)


def moved(nb: Any, release_nb: Any) -> list[str]:
    """Instructor cells of ``nb`` that are out of the release's order, as grade_ids.

    The cells kept in place are the longest run that is in the release's order;
    the others were moved. Cells the release lacks are not counted here.
    """
    rank = {notebook.grade_id(c): i for i, c in enumerate(release_nb.cells) if is_instructor(c)}
    seen, order = set(), []
    for cell in nb.cells:
        name = notebook.grade_id(cell)
        if is_instructor(cell) and isinstance(name, str) and name in rank and name not in seen:
            seen.add(name)
            order.append(name)
    ranks = [rank[name] for name in order]
    if all(a < b for a, b in zip(ranks, ranks[1:])):
        return []  # nearly every submission: nothing moved
    # longest increasing subsequence of ranks, O(n^2): a notebook has few cells
    length, before = [1] * len(order), [-1] * len(order)
    for i in range(len(order)):
        for j in range(i):
            if ranks[j] < ranks[i] and length[j] + 1 > length[i]:
                length[i], before[i] = length[j] + 1, j
    kept, i = set(), max(range(len(order)), key=length.__getitem__)
    while i >= 0:
        kept.add(order[i])
        i = before[i]
    return [name for name in order if name not in kept]


MAX_CELLS = 2_000  #: cells in one notebook; the lab has about 70, students add a few
MAX_DEPTH = 64  #: nesting of JSON arrays and objects; a notebook needs about 6


_QUOTE = ord('"')
#: a JSON string in UTF-8 bytes (no byte of a multibyte character is " or \\)
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
#: a JSON string, or a bracket
_TOKEN = re.compile(_STRING + rb"|[\[\]{}]")
_STRINGS = re.compile(_STRING)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: an opening bracket one level down, a closing one up (as 2 - 1 and 0 - 1)
_LEVEL_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
PLAIN_BRACKETS = 20_000  #: opening brackets (strings too) a file may hold for the quick check


def _plainly_small(data: bytes) -> bool:
    """Do the brackets of ``data`` outside its strings nest at most :data:`MAX_DEPTH`
    deep, and open at most :data:`MAX_CELLS` objects in all?

    Then no bound of :func:`_too_big` can be crossed. The same tokens as its scan,
    found by the regular expression engine and bytes methods alone: a third of
    the time of the scan, which remains for every file where this says no. Only
    for a file with at most :data:`PLAIN_BRACKETS` brackets in all (strings too),
    so what it builds stays small whatever was handed in.
    """
    if sum(data.count(bracket) for bracket in (b"[", b"{")) > PLAIN_BRACKETS:
        return False
    brackets = _STRINGS.sub(b"", data).translate(None, _NOT_BRACKETS)
    if brackets.count(b"{") > MAX_CELLS:
        return False
    levels = list(itertools.accumulate(map(operator.sub, brackets.translate(_LEVEL_STEP),
                                           itertools.repeat(1))))  # fmt: skip
    # a closing bracket with none open would lower every level after it: the scan's business
    return min(levels, default=0) >= 0 and max(levels, default=0) <= MAX_DEPTH


def _too_big(data: bytes) -> str:
    """Why the bytes ``data`` nest too deep or hold too many cells to parse ("" if neither).

    One streaming pass over its brackets and strings, stopping at the first
    bound crossed, before the bytes are even decoded: nothing is built per
    cell and nothing is copied, so a notebook of a million empty cells costs a
    few kilobytes here, not the memory of parsing it. A cell is
    an object directly inside an array under the key ``"cells"`` (at any
    depth, so nbformat 3's worksheets count too).
    """
    if _plainly_small(data):  # nearly every notebook handed in
        return ""
    in_cells: list[bool] = []  # per open bracket: is it an array of cells
    cells, last = 0, b""
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token[0] == _QUOTE:
            last = token
            continue
        if token in b"[{":
            if len(in_cells) >= MAX_DEPTH:
                return f"the file nests JSON deeper than {MAX_DEPTH} levels: not a notebook"
            if token == b"{" and in_cells and in_cells[-1]:
                cells += 1
                if cells > MAX_CELLS:
                    return f"the notebook has more than the {MAX_CELLS:,} cells graded"
            in_cells.append(token == b"[" and last == b'"cells"')
        elif in_cells:
            in_cells.pop()
        last = b""
    return ""


def _as_version_4(raw: dict[str, Any]) -> Any:
    """``nbformat.reads(json.dumps(raw), as_version=4)`` without writing and parsing the JSON
    again: the same reader for the notebook's version, conversion and validation (whose
    errors nbformat logs and lets pass, as ``reads`` does)."""
    major, minor = nbformat.reader.get_version(raw)
    if major not in nbformat.versions:
        raise nbformat.NBFormatError(f"Unsupported nbformat version {major}")
    nb = nbformat.convert(nbformat.versions[major].to_notebook_json(raw, minor=minor), 4)
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as error:
        nbformat.get_logger().error("Notebook JSON is invalid: %s", error)
    return nb


def read(data: bytes) -> tuple[Any, int]:
    """``(notebook, nbformat version it was written in)`` from ``data`` (bytes).

    The notebook is upgraded to nbformat 4; raises Unreadable with the reason.
    What is parsed is bounded first, in one streaming pass: nesting deeper than
    :data:`MAX_DEPTH`, or more than :data:`MAX_CELLS` cells, is unreadable at
    once, before the work (and memory) of building and validating such a
    notebook.
    """
    if not data or data.isspace():  # not data.strip(): that copies the whole file
        raise Unreadable("the file is empty")
    too_big = _too_big(data)
    if too_big:
        raise Unreadable(too_big)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise Unreadable(f"the file is not valid JSON (UnicodeDecodeError: {error})") from None
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise Unreadable(
            f"the file is not valid JSON ({error.__class__.__name__}: {error})"
        ) from None
    if (
        not isinstance(raw, dict)
        or "nbformat" not in raw
        or not isinstance(raw.get("nbformat"), int)
    ):
        raise Unreadable("the file is JSON but not a Jupyter notebook")
    cells = raw.get("cells")
    if not isinstance(cells, list):
        worksheets = raw.get("worksheets")
        cells = (
            worksheets[0].get("cells", []) if isinstance(worksheets, list) and worksheets else []
        )
    if isinstance(cells, list) and len(cells) > MAX_CELLS:
        raise Unreadable(
            f"the notebook has {len(cells):,} cells, more than the {MAX_CELLS:,} graded"
        )
    try:
        nb = _as_version_4(raw)
    except Exception as error:
        raise Unreadable(f"nbformat cannot read this notebook ({error})") from None
    if not isinstance(nb.get("cells"), list):
        raise Unreadable("the notebook has no cells")
    if nb.get("nbformat_minor", 0) >= 5:  # upgraded notebooks have no cell ids yet
        for number, cell in enumerate(nb.cells):
            cell.setdefault("id", f"cell-{number}")
    return nb, raw["nbformat"]


def _as_released(cell: Any) -> bool:
    """Is an instructor cell exactly as some release of the course gave it?

    nbgrader stamps every test and read-only cell of a release with a checksum
    of its source, kind, id and points (``compute_checksum``); Jupyter never
    updates it, so a cell a student edited no longer matches its own. A cell
    from a release published before the source changed (other points, other
    tests) still does: it is the student's notebook as handed out, not an edit.
    """
    from nbgrader.utils import compute_checksum

    stamped = notebook.nbgrader_meta(cell).get("checksum")
    try:
        return isinstance(stamped, str) and stamped == compute_checksum(cell)
    except Exception:  # metadata too damaged to checksum: not as released
        return False


def inspect(nb: Any, release_nb: Any) -> Findings:
    """Compare a submission's nbgrader cells with the release the student was given."""
    released = {notebook.grade_id(c): c for c in release_nb.cells if notebook.grade_id(c)}
    found = Findings()
    ids = [notebook.grade_id(c) for c in nb.cells if notebook.grade_id(c)]
    counts = Counter(g if isinstance(g, (str, int, float)) else repr(g) for g in ids)
    found.duplicated = sorted((g for g, n in counts.items() if n > 1), key=_key)
    found.deleted = [g for g in released if g not in counts]
    found.renamed = sorted((g for g in counts if g not in released), key=_key)
    found.moved = moved(nb, release_nb)
    edited = set()
    for cell in nb.cells:
        name = notebook.grade_id(cell)
        if not isinstance(name, str) or name not in released:
            continue
        original = released[name]
        mine, theirs = notebook.nbgrader_meta(cell), notebook.nbgrader_meta(original)
        differs = [k for k in COMPARED_METADATA if mine.get(k) != theirs.get(k)]
        if cell.cell_type != original.cell_type:
            edited.add(name)
        elif notebook.is_answer(original):
            # an answer's points come from the source whatever the cell says: a release
            # published before a rubric change carries other points, and that is no edit
            if [k for k in differs if k != "points"]:
                edited.add(name)
        elif (differs or cell.source != original.source) and not _as_released(cell):
            edited.add(name)
    found.edited = [g for g in released if g in edited]
    return found


def sanitize(nb: Any, steps: list[type], config: Config, resources: dict[str, Any]) -> Any:
    """Run nbgrader's sanitising ``steps`` on ``nb``, which they change in place; the
    sanitised notebook is returned. Give it a notebook of its own (:func:`read`'s):
    one the steps failed on is half-sanitised.

    resources: ``{"nbgrader": {"notebook", "assignment", "student", "db_url"}}``.
    """
    for preprocessor in steps:
        nb, resources = preprocessor(config=config)(nb, resources)
    return nb


def rebuild(release_nb: Any, nb: Any) -> Any:
    """The release with only the submission's answers, by grade_id.

    For a notebook whose nbgrader metadata is too damaged for stock nbgrader's
    preprocessors: nothing of the student's but their answers is kept. Sanitise
    the result, which puts the full test cells back from the gradebook.
    """
    theirs = {}
    for cell in nb.cells:  # a later copy of a cell wins, as it would when the notebook runs
        name = notebook.grade_id(cell)
        if name and isinstance(cell.get("source"), str):
            theirs[name] = cell.source
    mine = notebook.answers(release_nb)
    return notebook.fill(release_nb, {k: v for k, v in theirs.items() if k in mine})
