"""Does sanitising refuse what nbgrader refuses, and catch cells moved or renamed?"""

import copy
import sys

import jsonschema
import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.preprocessors import CheckCellMetadata

from autograder.pipeline.course import dependencies, internals, notebook
from autograder.pipeline.grading import execute, sanitize

from . import toy


@pytest.fixture
def release_nb():
    """A released notebook: an answer stub, then two test cells and a written answer."""
    return toy.notebook(
        toy.cell("# The lesson: doubling."),
        toy.cell("def double(v):\n    raise NotImplementedError()", "double", "answer"),
        toy.cell("assert double(2) == 4", "test_double", "test", 1),
        toy.cell("assert double(-3) == -6", "test_double_negative", "test", 2),
        toy.cell("Why does doubling commute?", "why", "manual", 2),
    )


def _breakages():
    def drop_grade_id(meta):
        del meta["grade_id"]

    def empty_grade_id(meta):
        meta["grade_id"] = ""

    def drop_points(meta):
        del meta["points"]

    def points_as_text(meta):
        meta["points"] = "lots"

    def old_schema(meta):
        meta["schema_version"] = 1

    return [drop_grade_id, empty_grade_id, drop_points, points_as_text, old_schema]


@pytest.mark.parametrize("breakage", _breakages(), ids=lambda f: f.__name__)
def test_broken_cell_is_refused_after_valid_ones_passed(release_nb, breakage):
    internals.CheckCellMetadataOnce().preprocess(copy.deepcopy(release_nb), {})  # remembers all
    broken = copy.deepcopy(release_nb)
    test_cell = next(c for c in broken.cells if notebook.is_test(c))
    breakage(notebook.nbgrader_meta(test_cell))
    with pytest.raises(Exception) as stock:
        CheckCellMetadata().preprocess(copy.deepcopy(broken), {})
    with pytest.raises(Exception) as ours:
        internals.CheckCellMetadataOnce().preprocess(broken, {})
    assert type(ours.value) is type(stock.value)


def test_duplicate_grade_ids_are_refused_though_each_cell_passed(release_nb):
    nb = copy.deepcopy(release_nb)
    test_cell = next(c for c in nb.cells if notebook.is_test(c))
    nb.cells.append(copy.deepcopy(test_cell))
    with pytest.raises(ValidationError, match="Duplicate grade id"):
        internals.CheckCellMetadataOnce().preprocess(nb, {})


def test_names_a_student_may_supply():
    """May tests take what a student's cells bind, but never a name an instructor cell binds?"""
    source = toy.notebook(
        toy.cell("import math\n_table = {}", "setup", "locked"),
        toy.cell("def double(v):\n    return 2 * v", "double", "answer"),
        toy.cell("data = [1, 2]\nmath = None"),  # a plain cell: the student's to edit
        toy.cell("def _check(f):\n    assert f(1) == 2\n_check(double)", "test_double", "test", 1),
    )
    allowed = execute.student_names(source)
    assert {"double", "data"} <= allowed
    for instructor in ("_table", "_check", "math"):  # math: bound by a locked cell too
        assert instructor not in allowed


def test_binds_sees_top_level_names_only():
    """Are defs, imports and assignments counted, and names inside functions not?"""
    source = (
        "import numpy as np\nfrom a import b\nx, (y, z) = 1, (2, 3)\ndef f(q):\n    w = q\n%pwd"
    )
    assert dependencies.binds(source) == {"np", "b", "x", "y", "z", "f"}


def test_a_python_cell_is_read_without_ipython(monkeypatch):
    """Is IPython left unimported for a cell that is Python as it stands (the grader's main
    process reads every cell of the source), and still asked for one that is not?"""
    monkeypatch.setitem(sys.modules, "IPython.core.inputtransformer2", None)
    assert dependencies.binds("import numpy as np\ndef f(q):\n    w = q") == {"np", "f"}
    with pytest.raises(ImportError):
        dependencies.binds("x = 1\n%pwd")


def test_moved_instructor_cells(release_nb):
    """Is an instructor cell moved out of the release's order found, and only that one?"""
    nb = copy.deepcopy(release_nb)
    assert sanitize.moved(nb, release_nb) == []
    index = next(i for i, c in enumerate(nb.cells) if notebook.grade_id(c) == "test_double")
    nb.cells.append(nb.cells.pop(index))
    assert sanitize.moved(nb, release_nb) == ["test_double"]
    found = sanitize.inspect(nb, release_nb)
    assert found.status == "tampered" and "moved cells test_double" in found.detail


def test_whole_number_grade_id_is_tampering(release_nb):
    """Is a grade_id that is a number reported as tampering, not a crash?"""
    nb = copy.deepcopy(release_nb)
    cell = next(c for c in nb.cells if notebook.grade_id(c) == "test_double_negative")
    cell.metadata.nbgrader["grade_id"] = 7
    found = sanitize.inspect(nb, release_nb)
    assert found.status == "tampered" and "unknown cells 7" in found.detail


@pytest.mark.parametrize(
    "data, says",
    [
        (b"[" * 50_000 + b"]" * 50_000, "nests JSON deeper than"),
        (b'{"nbformat": 4, "x": ' + b"[" * 5_000 + b"]" * 5_000 + b"}", "nests JSON deeper than"),
        (
            b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": ['
            + b",".join([b'{"cell_type": "markdown", "metadata": {}, "source": ""}'] * 2_001)
            + b"]}",
            "more than the 2,000 cells graded",
        ),
    ],
    ids=["nested-lists", "nested-metadata", "too-many-cells"],
)
def test_what_is_parsed_is_bounded(data, says):
    """Is a deeply nested or huge notebook unreadable, with the reason, not a grader error?"""
    with pytest.raises(sanitize.Unreadable, match=says):
        sanitize.read(data)


def test_a_huge_notebook_is_refused_before_it_is_parsed():
    """300,000 empty cells: refused without copying the file (nor decoding, nor parsing it)?"""
    import tracemalloc

    data = (
        b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": ['
        + b",".join([b'{"cell_type": "markdown", "metadata": {}, "source": ""}'] * 300_000)
        + b"]}\n"  # as editors end files: stripping the whitespace would copy it all
    )
    tracemalloc.start()
    try:
        with pytest.raises(sanitize.Unreadable, match="more than the 2,000 cells graded"):
            sanitize.read(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(data) // 8, f"{peak / 2**20:.0f} MiB to refuse {len(data) / 2**20:.0f} MiB"


def test_brackets_in_strings_are_not_nesting(release_nb):
    """Does text full of brackets inside a cell still read (strings are not nesting)?"""
    import nbformat

    nb = copy.deepcopy(release_nb)
    nb.cells[0].source = "[[[[{{{{" * 1_000 + '\\"[[[['
    read, _ = sanitize.read(nbformat.writes(nb).encode())
    assert read.cells[0].source == nb.cells[0].source


def _bracket_soup(seed: int) -> bytes:
    """Bytes of brackets, strings (escapes, unterminated ones), ``"cells"`` keys and stray
    closing brackets, nested around the bounds of :func:`sanitize._too_big`."""
    import random

    pick = random.Random(seed)
    pieces = [b"[", b"{", b"]", b"}", b'"cells": [', b'"a\\"[{"', b'"\\\\"', b'"', b"1,", b"\\"]
    opening = pick.choice([14, 30])  # against 12 each closing: level, or climbing
    weights = [opening, opening, 12, 12, 4, 3, 2, 1, 5, 1]
    size = pick.choice([10, 100, 1_000, 5_000])
    return b"".join(pick.choices(pieces, weights, k=size))


def _at_the_bounds() -> list[bytes]:
    """Bytes just inside and just past each bound, plainly and behind stray closings."""
    deep, cells = sanitize.MAX_DEPTH, sanitize.MAX_CELLS
    found = []
    for extra in (0, 1):
        found += [
            b"[" * (deep + extra),
            b"]]" + b"[" * (deep + extra),
            b"}" + b"{" * (deep + extra),
        ]
        found.append(b'{"cells": [' + b"{}," * (cells + extra) + b"]}")
        found.append(b'"cells": [' + b"{}," * (cells + extra) + b"]")
        found.append(b'{"cells": ["]]]",' + b"{}," * (cells + extra) + b"]}")
        found.append(b'"\\"' + b"[" * (deep + extra) + b'"' + b"[" * (deep + extra))
    return found


def test_the_quick_check_agrees_with_the_scan(monkeypatch):
    """On generated bytes and at the bounds, does the quick check decide as the scan does?"""
    cases = [_bracket_soup(seed) for seed in range(400)] + _at_the_bounds()
    quick = [sanitize._too_big(data) for data in cases]
    monkeypatch.setattr(sanitize, "_plainly_small", lambda data: False)
    assert [i for i, data in enumerate(cases) if quick[i] != sanitize._too_big(data)] == []
    assert sum(1 for said in quick if said == "") > 20  # both answers are reached
    assert sum(1 for said in quick if said) > 20


def _nbgrader_cells() -> list:
    """Cells whose nbgrader metadata is right, or wrong in each way nbgrader checks."""
    good = toy.cell("x = 1", "a", "answer")
    cells = [good, toy.cell("assert x", "t", "test", 2), toy.cell("Why.", "m", "manual", 1)]
    cells.append(nbformat.v4.new_code_cell("plain"))  # no nbgrader metadata at all
    changes = [
        {"points": "two"},  # not a number
        {"grade_id": ""},
        {"grade_id": 7},
        {"schema_version": 2},
        {"schema_version": 4},
        {"schema_version": "3"},
        {"grade": "yes"},
        {"locked": None},
        {"checksum": 5},
        {"extra": True},
    ]
    for change in changes:
        cell = copy.deepcopy(good)
        cell.metadata.nbgrader.update(change)
        cells.append(cell)
    for drop in ("grade", "solution", "grade_id", "schema_version"):
        cell = copy.deepcopy(cells[1])
        del cell.metadata.nbgrader[drop]
        cells.append(cell)
    points_less = copy.deepcopy(cells[1])
    del points_less.metadata.nbgrader["points"]
    not_a_dict = copy.deepcopy(good)
    not_a_dict.metadata["nbgrader"] = ["grade"]
    markdown = copy.deepcopy(cells[2])
    markdown.metadata.nbgrader["solution"] = False  # a graded Markdown cell must be a solution
    return [*cells, points_less, not_a_dict, markdown]


def _outcome(validate, cell) -> tuple:
    try:
        validate(copy.deepcopy(cell))
    except Exception as error:
        return type(error), str(error)
    return None, ""


def test_metadata_is_checked_as_nbgrader_checks_it_with_the_schema_checked_once(monkeypatch):
    """Does every cell pass or fail as nbgrader's own validator has it, with the same error,
    while the schema itself is checked once, not once a cell?"""
    monkeypatch.setattr(internals.RememberingValidator, "passed", set())
    monkeypatch.setattr(internals._SchemaCheckedOnce, "checked", {})
    checks = []
    check_schema = jsonschema.Draft4Validator.check_schema.__func__

    def counted(cls, schema, *args, **kwargs):
        checks.append(cls)
        return check_schema(cls, schema, *args, **kwargs)

    cells = _nbgrader_cells()
    theirs = [_outcome(MetadataValidator().validate_cell, cell) for cell in cells]
    monkeypatch.setattr(jsonschema.Draft4Validator, "check_schema", classmethod(counted))
    ours = [_outcome(internals.RememberingValidator().validate_cell, cell) for cell in cells]
    assert ours == theirs
    assert sum(1 for kind, _ in theirs if kind is not None) >= 15  # the wrong ones failed
    assert len(checks) == 1
