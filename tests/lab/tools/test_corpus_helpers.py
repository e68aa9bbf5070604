"""Do the helpers behind the corpus and the sample class do what they say?"""

import pytest

from autograder.pipeline.course import dependencies, notebook
from autograder.tools import corpus

from .. import lab


def test_fill_replaces_answer_cells_by_grade_id(release_nb):
    """Does fill put new source into the named answer cell and leave the rest alone?"""
    filled = notebook.fill(release_nb, {"blend": "def blend(weights, values):\n    return 0"})
    assert notebook.answers(filled)["blend"].endswith("return 0")
    assert notebook.answers(filled)["head"] == notebook.answers(release_nb)["head"]
    assert notebook.answers(release_nb)["blend"] != notebook.answers(filled)["blend"]


def test_fill_rejects_unknown_cells(release_nb):
    """Does fill refuse a grade_id the notebook has no answer cell for?"""
    with pytest.raises(KeyError, match="no answer cell"):
        notebook.fill(release_nb, {"test_blend": "pass"})


def test_answer_of_picks_the_tested_answer(answer_ids):
    """Is each test traced to the answer it grades, suffix or not?"""
    assert notebook.answer_of("test_head_causal", answer_ids) == "head"
    assert notebook.answer_of("test_attention_weights", answer_ids) == "attention_weights"
    assert notebook.answer_of("test_multi_head_values", answer_ids) == "multi_head"
    assert notebook.answer_of("setup", answer_ids) is None


def test_uses_are_read_from_the_solution(solution_nb):
    """Are the answers each answer uses read from the solution's code?"""
    uses = dependencies.uses(solution_nb)
    assert uses["multi_head"] == {"head", "concat_heads"}
    assert uses["head"] == {"attention_weights"} and uses["blend"] == set()


def test_affected_follows_callers(solution_nb):
    """Does a mistake in attention_weights reach head and multi_head, and no more?

    (wrong_axis glues stand-ins for the heads' answers: it calls no answer.)
    """
    uses = dependencies.uses(solution_nb)
    assert dependencies.upstream("multi_head", uses) == {
        "head",
        "concat_heads",
        "attention_weights",
    }
    assert dependencies.affected(["attention_weights"], uses) == {
        "attention_weights",
        "head",
        "multi_head",
    }
    assert dependencies.affected(["blend"], uses) == {"blend"}


def test_corpus_cells_name_real_answers(entries, answer_ids):
    """Does every corpus entry change only answer cells the release really has?"""
    for name, entry in entries.items():
        assert set(entry.cells) <= set(answer_ids), name
        assert set(entry.loses) <= set(answer_ids), name


def test_readme_table_markers_round_trip():
    """Does replacing the README's table keep everything around it?"""
    readme = f"intro\n{corpus.README_BEGIN}\nold\n{corpus.README_END}\noutro"
    updated = corpus.with_table(readme, "new")
    assert corpus.table_in(updated) == "new"
    assert updated.startswith("intro\n") and updated.endswith("\noutro")


def test_table_cells_keep_their_pipes_inside():
    """A mistake or message holding |a - b|: one row of four cells, the pipes escaped?"""
    from autograder.tools.stock import StockResult

    entry = corpus.AnswerSet("m/gap", "takes the largest |a - b|", {}, loses=("f",), says="x")
    result = StockResult({"test_f": 0.0}, {"test_f": 1.0}, {"test_f": "AssertionError: |a - b|"})
    row = corpus.table({"m/gap": entry}, {"m/gap": result}, ["f"]).splitlines()[-1]
    assert row.replace("\\|", "").count("|") == 5, row
    assert "largest \\|a - b\\| |" in row and row.endswith("| \\|a - b\\| |")


@pytest.fixture(scope="module")
def every_cell(entries):
    """The text of every code cell of the lab's notebooks and of every answer in the corpus."""
    paths = [lab.SOURCE, lab.RELEASE, lab.SOLUTION, *(lab.ROOT / lab.SAMPLE_CLASS).rglob("*.ipynb")]
    sources = [
        cell.source
        for path in paths
        for cell in notebook.read(lab.ROOT / path).cells
        if cell.cell_type == "code"
    ]
    sources += [text for entry in entries.values() for text in entry.cells.values()]
    assert len(sources) > 500
    return sources


def test_a_cell_binds_the_same_names_read_as_python_or_as_ipython_rewrites_it(every_cell):
    """Do the names each cell binds, read without IPython where it parses as Python, equal
    those of IPython's reading?"""
    from IPython.core.inputtransformer2 import TransformerManager

    def as_ipython(source):  # as binds read every cell before: its text as IPython rewrites it
        return dependencies.binds(TransformerManager().transform_cell(source))

    for source in every_cell:
        assert dependencies.binds(source) == as_ipython(source), source


def test_every_cell_transforms_in_a_students_process_as_ipython_does(every_cell):
    """Does each cell come out of the student's shortcut for plain Python exactly as out of
    IPython's own static transforms?"""
    from IPython.core.inputtransformer2 import TransformerManager

    from autograder.sandbox import transforms

    ipython = TransformerManager().transform_cell
    plain = transforms.PlainPython(TransformerManager())
    for source in every_cell:
        assert plain.transform_cell(source) == ipython(source), source
