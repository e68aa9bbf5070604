"""Does the self-check say what an answer does when a lesson cell fails because of it?

A toy notebook whose answers pass their own tests but misbehave where the
lesson uses them: one changes its argument, one keeps state between calls,
and a third is done and innocent. Each failing lesson cell is run once more
with the answers watched, so its line names the answer it really called and
what it did; a cell that calls no answer blames none; a failing test cell
that grades no answer still means "not ready".
"""

import re

import nbformat
import pytest

from autograder.tools import self_check

from . import toy

pytestmark = pytest.mark.slow

STUB = "def {}(values):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
CELLS = [
    nbformat.v4.new_markdown_cell("## Totals"),
    toy.cell("def total(values):\n    values.append(0)\n    return sum(values)", "total", "answer"),
    toy.cell("assert total([1, 2]) == 3", "test_total", "test", 1),
    toy.cell("calls = [0]\ndef tick(n):\n    calls[0] += 1\n    return n + calls[0] - 1", "tick",
             "answer"),
    toy.cell("assert tick(5) == 5", "test_tick", "test", 1),
    toy.cell("def square(n):\n    return n * n", "square", "answer"),
    toy.cell("assert square(3) == 9", "test_square", "test", 1),
    nbformat.v4.new_markdown_cell("## Using them"),
    toy.cell("v = [1, 2]\ntotal(v)\nsquare(2)\nassert v == [1, 2], f'v is now {v}'"),
    toy.cell("assert tick(1) == 1, 'tick(1) is not 1'"),
    toy.cell("# square( is named here but never called\n1 / 0"),
    toy.cell("assert False, 'an orphan test'", "test_orphan", "test", 1),
]  # fmt: skip
STUBS = {name: STUB.format(name) for name in ("total", "tick", "square")}


def test_a_failing_lesson_cell_names_what_the_answer_it_called_did(tmp_path, capsys):
    toy.write_notebook(CELLS, tmp_path / "n.ipynb")
    status = self_check.check_notebook(tmp_path / "n.ipynb", STUBS)
    out = capsys.readouterr().out
    lines = out.splitlines()
    changes = next(line for line in lines if "v is now" in line)
    assert "your total changes its arguments" in changes and "square" not in changes, changes
    state = next(line for line in lines if "tick(1) is not 1" in line)
    assert "your tick keeps state between calls" in state, state
    zero = next(line for line in lines if "ZeroDivisionError" in line)
    assert "your" not in zero and "square" not in zero, zero  # called nothing: blames nothing
    assert any("(test_orphan) fails: AssertionError: an orphan test" in line for line in lines)
    assert "answers below that fail" not in out  # every answer passes its own tests
    assert all(re.search(rf"^{name} +done$", out, re.M) for name in ("total", "tick", "square"))
    assert status == 1 and "ready to submit" not in out.replace("not ready to submit", "")


def test_a_kernel_that_dies_while_watched_still_gets_its_report(tmp_path, capsys):
    """An answer that ends the kernel on its third call: the notebook ran, so its report
    stands (the lesson cell named, without what the watch could not see)."""
    cells = [
        toy.cell(
            "import os\ncount = [0]\ndef boom(n):\n    count[0] += 1\n"
            "    if count[0] >= 3:\n        os._exit(1)\n    return n",
            "boom",
            "answer",
        ),
        toy.cell("assert boom(1) == 1", "test_boom", "test", 1),
        toy.cell("assert boom(2) == 0, 'boom(2) is not 0'"),
    ]
    toy.write_notebook(cells, tmp_path / "n.ipynb")
    stubs = {"boom": STUB.format("boom")}
    assert self_check.check_notebook(tmp_path / "n.ipynb", stubs) == 1
    out = capsys.readouterr().out
    assert "fails: AssertionError: boom(2) is not 0" in out
    assert re.search(r"^boom +done$", out, re.M)
