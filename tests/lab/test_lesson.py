"""Does the notebook teach what the tutorial page teaches, and leave the deriving to the student?

The lab's prose and demonstration cells, checked as a student reads them in the
release: no formula given away where the student is to work it out, the
motivation before the example, the wrong axis seen to break something, the
column blocks and the output projection shown, and the stretch answer stated.
"""

import re
import shutil
from xml.etree import ElementTree

import nbformat
import pytest

from autograder.pipeline.course import notebook
from autograder.tools import corpus

from . import lab

# Formulas the prose leads the student to, which no docstring or comment may state.
GIVEN_AWAY = [
    r"3\s*\*\s*n_heads\s*\*\s*d_model\s*\*\s*d_head",
    r"0\.5\s*\*\s*sum over",
    r"sum over i of weights\[i\]",
    r"Our solution is",
]


def _printed(nb, demos_only=False):
    """Everything the executed notebook's cells printed (only non-nbgrader cells if asked)."""
    return "\n".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code" and not (demos_only and notebook.nbgrader_meta(c))
        for o in c.get("outputs", [])
    )


def _text(release_nb, kinds=("markdown", "code")):
    return [c.source for c in release_nb.cells if c.cell_type in kinds]


def test_no_formula_given_away(release_nb):
    """Do the stubs, docstrings and visible cells leave the formulas to the student?"""
    for source in _text(release_nb):
        for pattern in GIVEN_AWAY:
            assert not re.search(pattern, source), (pattern, source[:200])


def test_the_cat_and_the_mat_come_before_the_two_worlds(release_nb):
    """Is the tutorial's motivation (two needs at once: grammar, and what 'it' means) told first?"""
    prose = "\n".join(_text(release_nb, ("markdown",)))
    motivation = prose.find("the cat sat on the mat")
    table = prose.find("| world |")
    assert 0 <= motivation < table, "the cat and the mat belong before the two-worlds table"
    assert "`it`" in prose[motivation:table]


def test_the_wrong_axis_is_seen_to_break_downstream(solution_nb):
    """Does a cell show the (24, 2) glue failing in the next layer, and a reshape mixing rows?"""
    printed = _printed(solution_nb, demos_only=True)
    assert "glued on axis 0: (24, 2)" in printed
    assert "the next step fails:" in printed and "mismatch" in printed
    assert "for positions 0 to 3: True" in printed


def test_w_q_is_shown_as_column_blocks(solution_nb):
    """Are the four heads' W_q shown to be column blocks of one (8, 8) matrix, outputs agreeing?"""
    printed = _printed(solution_nb)
    assert "its four (8, 2) blocks are the heads' W_q: True" in printed
    assert "each head's two columns of x @ W_q_all are its queries: True" in printed


def test_the_output_projection_is_explained_and_run(solution_nb):
    """Is W_o explained in prose and shown mixing every head into every output column?"""
    prose = "\n".join(c.source for c in solution_nb.cells if c.cell_type == "markdown")
    assert "`W_o`" in prose and "output projection" in prose
    printed = _printed(solution_nb)
    assert "output columns that move when head 2 is silenced: 8 of 8" in printed


def test_the_stretch_answer_is_stated_and_checked_against_multi_head(solution_nb):
    """Is batched_heads worth its own stated points, and equal to multi_head on the lab's heads?"""
    opening = solution_nb.cells[0].source
    assert re.search(r"stretch .*`batched_heads` \| 4 \|", opening)
    printed = _printed(solution_nb)
    assert "equal to multi_head on the lab's heads: True" in printed


def test_specialists_keep_the_worlds_apart_and_like_heads_do_not(solution_nb):
    """Do heads with their own W_v but alike shares collide, and hand-built specialists not?"""
    printed = _printed(solution_nb)
    assert re.search(r"three uniform heads: A .* apart: False", printed), printed
    assert re.search(r"three specialists +: A .* apart: True", printed), printed
    prose = " ".join(c.source for c in solution_nb.cells if c.cell_type == "markdown")
    assert "different *shares* are what give them different things to report" in " ".join(
        prose.split()
    )


def test_batching_is_timed_not_asserted(solution_nb):
    """Is there a cell that times the loop against the batch, its output left out of nbval?"""
    timed = [c for c in solution_nb.cells if "timeit" in c.source and "batched_heads" in c.source]
    assert len(timed) == 1 and "nbval-ignore-output" in timed[0].metadata.get("tags", [])
    stretch = next(c.source for c in solution_nb.cells if c.get("id") == "stretch")
    assert "No loop over heads." not in stretch  # a loop is not refused, so not claimed


@pytest.mark.slow
def test_the_last_cell_names_the_answer_that_changed_its_inputs(tmp_path, release_nb, solution_nb):
    """attention_weights scaling W_q in place: is that named, not a correct batched_heads?"""
    from nbclient import NotebookClient

    entries = corpus.load_corpus(lab.ROOT / lab.CORPUS)
    name = "mistakes/scales_w_q_in_place"
    nb = corpus.build({name: entries[name]}, release_nb, solution_nb)[name]
    folder = tmp_path / "my-lab"
    shutil.copytree((lab.ROOT / lab.RELEASE).parent, folder)
    nbformat.write(nb, folder / lab.NOTEBOOK)
    NotebookClient(nb, allow_errors=True, resources={"metadata": {"path": str(folder)}}).execute()
    last = next(c for c in nb.cells if c.get("id") == "stretch-check")
    said = "".join(o.get("text", "") for o in last.outputs)
    assert "multi_head changed the matrices it was given" in said, said


@pytest.mark.slow
def test_nothing_is_timed_while_graded(graded_samples):
    """Does the timing cell skip its second of work when the grader runs it, and say so?"""
    page = (graded_samples["out"] / "feedback" / f"{graded_samples['ids']['ada']}.html").read_text()
    assert "not timed while the notebook is graded or checked" in page


def test_pictures_are_text_with_their_words(solution_nb):
    """Is each lesson picture one SVG (show_heatmaps), its alt text its title, its shares text?"""
    code = [c for c in solution_nb.cells if c.cell_type == "code"]
    drawing = [c for c in code if "show_heatmaps(" in c.source]
    assert len(drawing) == 2
    for cell in drawing:
        assert "matplotlib" not in cell.source and "plt." not in cell.source, cell.source
        images = [o for o in cell.outputs if "image/svg+xml" in o.get("data", {})]
        assert len(images) == 1, cell.outputs
        svg, alt = images[0].data["image/svg+xml"], images[0].metadata["image/svg+xml"]["alt"]
        root = ElementTree.fromstring(svg)
        title = root.find("{http://www.w3.org/2000/svg}title")
        assert title is not None and title.text == alt and root.get("role") == "img"
        shares = re.findall(r">(\d\.\d\d)</text>", svg)
        assert len(shares) >= 9 and all(0 <= float(s) <= 1 for s in shares), shares
    assert not any("matplotlib" in c.source for c in code)


def _cell(nb, cell_id):
    return next(c.source for c in nb.cells if c.get("id") == cell_id)


def _assigned(source, names):
    """The values ``source``'s top-level assignments give ``names`` (numpy only, nothing run)."""
    import ast

    import numpy as np

    values = {}
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name) and target.id in names and target.id not in values:
                values[target.id] = eval(  # the course's own locked cell, literals and np only
                    compile(ast.Expression(statement.value), "<cell>", "eval"), {"np": np}
                )
    return values


@pytest.fixture(scope="module")
def reference(solution_nb):
    """The solution's attention_weights, to compute what the lesson's comments quote."""
    import numpy as np

    space = {"np": np}
    exec(_cell(solution_nb, "attention_weights"), space)  # the course's own solution
    return space["attention_weights"]


def test_the_worked_examples_numbers_are_what_the_code_computes(solution_nb, reference):
    """Do the scores and shares quoted in attention_weights' test comment come from its arrays?"""
    import numpy as np

    source = _cell(solution_nb, "test_attention_weights")
    v = _assigned(source, {"x_w", "W_q_w", "W_k_w"})
    comment = "\n".join(line for line in source.splitlines() if line.startswith("#"))
    quoted_scores = re.search(r"are (\[\[.*?\]\]) before scaling", comment.replace("\n# ", " "))
    scores = (v["x_w"] @ v["W_q_w"]) @ (v["x_w"] @ v["W_k_w"]).T
    assert np.array_equal(np.array(eval(quoted_scores.group(1))), scores), scores
    row_1 = re.search(r"they become (\d\.\d+) and (\d\.\d+)", comment.replace("\n# ", " "))
    shares = reference(v["x_w"], v["W_q_w"], v["W_k_w"])
    assert [float(n) for n in row_1.groups()] == list(np.round(shares[1, :2], 4))

    # x scaled by 40: "row 1: 0 and 2771", and position 0's future scores "(1847)"
    def scaled_scores(x):
        return (x @ v["W_q_w"]) @ (x @ v["W_k_w"]).T / np.sqrt(v["W_k_w"].shape[1])

    scaled = scaled_scores(40 * v["x_w"])
    assert f"row 1: 0 and {round(scaled[1, 1])}" in comment.replace("\n# ", " "), scaled
    future = scaled_scores(40 * v["x_w"][::-1])[0, 1:]  # position 0's, in reverse order
    quoted = " and ".join(str(round(f)) for f in future)
    assert f"future scores ({quoted}) dwarf its own (0)" in comment.replace("\n# ", " "), future


def test_heads_stand_in_shares_are_what_attention_weights_gives(solution_nb, reference):
    """Are head's stand-in shares for its worked example a right attention_weights' to 8
    decimals, as its comment says, and the blend its comment quotes their numbers?"""
    import numpy as np

    source = _cell(solution_nb, "test_head")
    v = _assigned(source, {"x_w", "W_q_w", "W_k_w", "shares_w"})
    computed = reference(v["x_w"], v["W_q_w"], v["W_k_w"])
    assert np.allclose(v["shares_w"], computed, atol=5e-9), computed
    assert "to\n# 8 decimals" in source or "to 8 decimals" in source
    blend = re.search(r"Position 1 blends (\d\.\d+) of value row 0 with (\d\.\d+) of", source)
    assert [float(n) for n in blend.groups()] == list(np.round(computed[1, :2], 4))


def test_heads_are_counted_from_1_everywhere(release_nb):
    """One numbering for heads: head 1 is the first, in prose, comments and printed words."""
    text = "\n".join(_text(release_nb))
    assert not re.search(r"\bhead 0\b|head `?i`? in columns `?2i\b|head i's queries", text)
    assert "head 1" in text


def test_the_proses_arithmetic_is_true(release_nb):
    """Does every product the prose works out (`3 · 16 = 48`, `0.5 · (...) = 0.5`) hold?"""
    prose = "\n".join(_text(release_nb, ("markdown",)))
    worked = re.findall(r"`([\d.]+ · (?:[\d.]+|\([^`]*\))) = ([\d.]+)`", prose)
    assert len(worked) >= 4, worked
    for product, result in worked:
        # the prose's notation as Python: · a product, − a minus, |a| a size
        python = re.sub(r"\|([^|]+)\|", r"abs(\1)", product.replace("·", "*").replace("−", "-"))
        assert eval(python) == float(result), (product, result)  # the course's own prose
