"""Is a notebook's text, with each cell's JSON remembered, exactly what nbformat writes?"""

import copy

import nbformat
import pytest

from autograder.pipeline.course import notebook_text
from autograder.pipeline.course.notebook_text import NotebookText

from . import toy


def _outputs() -> list:
    """Outputs of every kind nbformat splits into lines, or leaves alone."""
    return [
        nbformat.v4.new_output("stream", name="stdout", text="one\ntwo\n\nthree"),
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/plain": "a\nb",
                "text/html": "<b>x</b>\n<i>y</i>\n",
                "image/png": "iVBORw0KGgo=\n",
                "image/svg+xml": "<svg>\n</svg>",
                "application/json": {"k": ["v\n", 1.5, None, True]},
                "application/vnd.custom+json": {"deep": {"er": [1, 2]}},
            },
            metadata={"image/png": {"width": 300}},
        ),
        nbformat.v4.new_output("execute_result", data={"text/plain": "3"}, execution_count=4),
        nbformat.v4.new_output("error", ename="E", evalue="é ☃ \u2028", traceback=["l1", "l2"]),
    ]


def notebooks() -> dict[str, object]:
    """Notebooks that differ in every way the text depends on."""
    code = toy.cell('def f(x):\n    return x  # ünïcödé \u2028 \\ "\n', "f", "answer")
    code.outputs = _outputs()
    code.execution_count = 3
    code.metadata["trusted"] = True  # transient: never written
    tested = toy.cell("assert f(1) == 1", "test_f", "test", 2)
    prose = nbformat.v4.new_markdown_cell("# Title\n\nText with $x^2$\n")
    prose.attachments = {"a.png": {"image/png": "AAAA\nBBBB"}}
    raw = nbformat.v4.new_raw_cell("")
    full = nbformat.v4.new_notebook(cells=[code, tested, prose, raw])
    full.metadata.update(
        {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    full.metadata["orig_nbformat"] = 3  # transient, as are the next two
    full.metadata["orig_nbformat_minor"] = 0
    full.metadata["signature"] = "sha256:x"
    one_line = copy.deepcopy(full)
    one_line.cells[0].source = "x = 1"
    return {
        "empty": nbformat.v4.new_notebook(),
        "full": full,
        "one line": one_line,
        "only prose": nbformat.v4.new_notebook(cells=[copy.deepcopy(prose)]),
    }


@pytest.mark.parametrize("name", sorted(notebooks()))
def test_the_text_is_nbformats_and_the_notebook_is_left_alone(name):
    """The first time a cell is met and the next, is the text nbformat's, byte for byte?"""
    nb = notebooks()[name]
    before = copy.deepcopy(nb)
    writer = NotebookText()
    assert writer.writes(nb) == nbformat.v4.writes(before)
    assert writer.writes(nb) == nbformat.v4.writes(before)  # its cells remembered now
    assert nb == before


def test_a_cell_is_remembered_by_what_it_holds_not_by_where_it_is():
    """Does a cell edited after it was written, in place, come out with its new text, and
    are cells too long to share never remembered?"""
    nb = notebooks()["full"]
    writer = NotebookText()
    writer.writes(nb)
    remembered = len(writer._cells)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="changed\n")]
    nb.cells[0].metadata["tags"] = ["new"]
    assert writer.writes(nb) == nbformat.v4.writes(nb)
    assert len(writer._cells) == remembered + 2
    nb.cells[0].source = "x" * (notebook_text.CACHED_CELL_CHARACTERS + 1)
    assert writer.writes(nb) == nbformat.v4.writes(nb)
    assert len(writer._cells) == remembered + 2


@pytest.mark.parametrize("bound", ["CACHED_CELLS", "CACHED_CHARACTERS"])
def test_at_most_so_many_cells_are_remembered(monkeypatch, bound):
    """Does the memory keep the most recently written cells, within its bounds on cells and
    on characters?"""
    cells = [nbformat.v4.new_code_cell(f"x = {n}") for n in range(5)]
    nb = nbformat.v4.new_notebook(cells=cells)
    one = NotebookText()
    one.writes(nb)
    each = one._characters // 5
    monkeypatch.setattr(notebook_text, bound, 3 if bound == "CACHED_CELLS" else 3 * each + 1)
    writer = NotebookText()
    assert writer.writes(nb) == nbformat.v4.writes(nb)
    assert len(writer._cells) == 3 and writer._characters == 3 * each
    assert [f'"x = {n}"' in text for text in writer._cells.values() for n in (2, 3, 4)] == [
        True,
        False,
        False,
        False,
        True,
        False,
        False,
        False,
        True,
    ]  # the last three, in the order written
    assert writer.writes(nb) == nbformat.v4.writes(nb)
    assert len(writer._cells) == 3
