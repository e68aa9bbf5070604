"""Does the notebook keep the interfaces of ../shared/CONTRACT.md?"""

import re

from autograder.pipeline.course import notebook

ANSWERS = [
    "attention_weights",
    "head",
    "blend",
    "two_worlds",
    "disagreement",
    "concat_heads",
    "wrong_axis",
    "count_params",
    "multi_head",
    "why_not_average",
    "batched_heads",
]
SIGNATURES = {
    "attention_weights": "def attention_weights(x, W_q, W_k):",
    "head": "def head(x, W_q, W_k, W_v):",
    "blend": "def blend(weights, values):",
    "disagreement": "def disagreement(shares_a, shares_b):",
    "concat_heads": "def concat_heads(answers):",
    "count_params": "def count_params(d_model, n_heads, d_head=None):",
    "multi_head": "def multi_head(x, heads):",
    "batched_heads": "def batched_heads(x, W_q, W_k, W_v, n_heads):",
}


def test_answer_cells_in_order(release_nb):
    """Are the contract's answer cells all present, once each, in the contract's order?"""
    found = [notebook.grade_id(c) for c in release_nb.cells if notebook.is_answer(c)]
    assert found == ANSWERS


def test_signatures(release_nb):
    """Does every function stub keep the contract's signature?"""
    cells = {notebook.grade_id(c): c.source for c in release_nb.cells}
    for grade_id, signature in SIGNATURES.items():
        assert signature in cells[grade_id], grade_id


def test_manual_answer_is_markdown(release_nb):
    """Is why_not_average a manually graded markdown cell?"""
    (cell,) = [c for c in release_nb.cells if notebook.grade_id(c) == "why_not_average"]
    meta = notebook.nbgrader_meta(cell)
    assert cell.cell_type == "markdown" and meta["grade"] and meta["solution"]


def test_tests_follow_each_answer(source_nb):
    """Has every code answer a visible and a hidden test after it, named after it?"""
    cells = source_nb.cells
    for grade_id in [a for a in ANSWERS if a != "why_not_average"]:  # graded by hand
        position = next(i for i, c in enumerate(cells) if notebook.grade_id(c) == grade_id)
        mine = [
            c
            for c in cells[position + 1 :]
            if notebook.is_test(c)
            and re.fullmatch(rf"test_{grade_id}(_[a-z0-9_]+)?", notebook.grade_id(c))
        ]
        hidden = [c for c in mine if "BEGIN HIDDEN TESTS" in c.source]
        visible = [c for c in mine if "BEGIN HIDDEN TESTS" not in c.source]
        assert visible, f"{grade_id} has no visible test"
        assert hidden, f"{grade_id} has no hidden test"


def test_every_test_is_named_after_an_answer(source_nb):
    """Can every test cell's score be traced to the answer it grades?"""
    pattern = re.compile(rf"test_({'|'.join(ANSWERS)})(_[a-z0-9_]+)?")
    for cell in source_nb.cells:
        if notebook.is_test(cell):
            assert pattern.fullmatch(notebook.grade_id(cell)), notebook.grade_id(cell)


def test_test_cells_open_with_what_they_check(source_nb):
    """Does every test cell say, first, what it checks (a hidden one in a comment)?"""
    for cell in source_nb.cells:
        if notebook.is_test(cell):
            hidden = "BEGIN HIDDEN TESTS" in cell.source
            assert cell.source.startswith("# Hidden test: " if hidden else '"""'), (
                notebook.grade_id(cell)
            )
            assert len(notebook.what_it_checks(cell.source)) > 20, notebook.grade_id(cell)


def test_notebook_metadata_is_minimal(source_nb):
    """Does the notebook's metadata hold the kernelspec and little else?"""
    assert set(source_nb.metadata) <= {"kernelspec", "language_info"}
