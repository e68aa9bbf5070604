"""Does the student notebook leak nothing, and grade as it should?"""

import ast
import re

import numpy as np
import pytest

from autograder.pipeline.course import notebook
from autograder.pipeline.grading import execute
from autograder.tools import points_table
from autograder.tools.golden import RELEASE_KEY, SOURCE_KEY

from . import lab

MARKERS = (
    "BEGIN SOLUTION",
    "END SOLUTION",
    "BEGIN HIDDEN TESTS",
    "END HIDDEN TESTS",
    "MARK SCHEME",
)


def _split_lines(source):
    """(lines inside solution or hidden-test regions, lines outside them), stripped."""
    inside, outside, within = set(), set(), False
    for line in source.split("\n"):
        if "BEGIN SOLUTION" in line or "BEGIN HIDDEN TESTS" in line:
            within = True
        elif "END SOLUTION" in line or "END HIDDEN TESTS" in line:
            within = False
        elif line.strip():
            (inside if within else outside).add(line.strip())
    return inside, outside


def test_no_markers_in_release(release_nb):
    """Are all of nbgrader's solution and hidden-test markers gone from the release?"""
    text = "\n".join(c.source for c in release_nb.cells)
    assert not [m for m in MARKERS if m in text]


def test_no_solution_or_hidden_text_in_release(source_nb, release_nb):
    """Does no line of a solution or hidden-test region appear anywhere in the release?"""
    secret, public = set(), set()
    for cell in source_nb.cells:
        inside, outside = _split_lines(cell.source)
        secret |= inside
        public |= outside
    helper = (lab.ROOT / lab.RELEASE).with_name("lab_checks.py").read_text()
    public |= {line.strip() for line in helper.split("\n")}
    # A line that also stands outside every region (an import, a shape check
    # shared with a visible test, a line of the public helper) gives nothing away.
    secret = {line for line in secret - public if len(line) > 12}
    released = "\n".join(c.source for c in release_nb.cells)
    released += (lab.ROOT / lab.RELEASE).with_name("self_check.py").read_text()
    leaked = sorted(line for line in secret if line in released or line in helper)
    assert not leaked, f"solution or hidden-test lines in the release: {leaked[:5]}"


def test_every_answer_is_a_stub(release_nb):
    """Is every answer cell of the release a stub for the student to fill in?"""
    for cell in release_nb.cells:
        if not notebook.is_answer(cell):
            continue
        if cell.cell_type == "code":
            assert "# YOUR CODE HERE" in cell.source, notebook.grade_id(cell)
            assert "raise NotImplementedError()" in cell.source, notebook.grade_id(cell)
        else:
            assert cell.source.strip() == "YOUR ANSWER HERE", notebook.grade_id(cell)


def test_release_folder_holds_what_students_get():
    """Does the release hold the notebook, its helpers, the self-check (with what explains a
    crash beside it) and a README, nothing else, and do the helpers define none of the
    answers (nor compute one: no reference)?"""
    folder = (lab.ROOT / lab.RELEASE).parent
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [lab.NOTEBOOK, "lab_checks.py", "lab_diagnoses.py", "self_check.py", "crash_reasons.py",
         "README.md"]
    )  # fmt: skip
    answers = set(notebook.answers(notebook.read(lab.ROOT / lab.SOURCE)))
    for helper in ("lab_checks.py", "lab_diagnoses.py"):
        tree = ast.parse((folder / helper).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert not defined & answers and not any("reference" in d for d in defined), helper


def test_students_readme_says_what_to_do():
    """Does the students' README name each file, the self-check, the name to keep, submitting?"""
    folder = (lab.ROOT / lab.RELEASE).parent
    text = (folder / "README.md").read_text()
    for path in folder.iterdir():
        assert path.name == "README.md" or f"`{path.name}`" in text, path.name
    for words in ("python self_check.py", "Keep the name", "Submit", "feedback", "Run All"):
        assert words in text, words
    assert "ANSWER" not in text and "BEGIN SOLUTION" not in text


def test_students_readme_says_how_the_points_count(source_nb):
    """Does the students' README give the notebook's total and say nothing is extra credit?"""
    total = sum(float(notebook.nbgrader_meta(c).get("points", 0)) for c in source_nb.cells)
    text = " ".join(((lab.ROOT / lab.RELEASE).parent / "README.md").read_text().split())
    assert f"worth {total:g} points" in text and "none is extra credit" in text, text


def test_hidden_test_placeholders_run_nothing(release_nb):
    """Is a hidden test's placeholder all comment, so running it prints nothing?"""
    for cell in release_nb.cells:
        if notebook.is_test(cell):
            body = ast.parse(cell.source).body
            if not body:
                assert cell.source.startswith("# Hidden test: "), notebook.grade_id(cell)
            else:  # a visible test: a docstring, then code that checks something
                assert len(body) > 1, notebook.grade_id(cell)


def test_release_has_no_outputs(release_nb):
    """Is the release committed without outputs or execution counts?"""
    for cell in release_nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.slow
@pytest.mark.stock
def test_source_gets_full_marks(stock_graded):
    """Does the instructor's source, handed in as a submission, earn every autograded point?"""
    result = stock_graded[SOURCE_KEY]
    assert result.messages == {}
    assert result.score == sum(result.max_points.values()) > 0


@pytest.mark.slow
@pytest.mark.stock
def test_untouched_release_gets_zero(stock_graded):
    """Does the untouched release earn no points at all?"""
    result = stock_graded[RELEASE_KEY]
    assert result.score == 0
    assert set(result.messages) == set(result.max_points)


def test_stated_total_matches_points(source_nb):
    """Does the opening table state the total the metadata really adds up to?"""
    total = sum(float(notebook.nbgrader_meta(c).get("points", 0)) for c in source_nb.cells)
    stated = re.search(r"\*\*total\*\* \| \| \*\*(\d+)\*\*", source_nb.cells[0].source)
    assert stated, "the opening cell has no total row"
    assert float(stated.group(1)) == total
    assert points_table.updated(source_nb)[1] == []  # each step's row too: make generate
    stretch = sum(
        float(notebook.nbgrader_meta(c).get("points", 0))
        for c in source_nb.cells
        if notebook.grade_id(c) and "batched_heads" in str(notebook.grade_id(c))
    )
    lab = re.search(r"\*\*the lab\*\* \| \| \*\*(\d+)\*\*", source_nb.cells[0].source)
    assert lab and float(lab.group(1)) == total - stretch, (
        "the lab's row is the total less the stretch"
    )
    opening = " ".join(source_nb.cells[0].source.split())
    lab_points = total - stretch
    for said in (
        f"on top of the lab's {lab_points:g}",
        "it is not extra credit",
        f"count out of {total:g}",
        f"tops out at {lab_points:g} of {total:g}",
    ):
        assert said in opening, f"the opening should say {said!r}"


def test_no_cell_hands_over_the_wrong_axis_answer(release_nb):
    """Does no cell the student can read glue the stand-ins on numpy's default axis for them?"""
    given = [
        notebook.grade_id(c) or c.get("id")
        for c in release_nb.cells
        if c.cell_type == "code" and re.search(r"np\.concatenate\(answers\)", c.source)
    ]
    assert given == [], f"these cells show np.concatenate(answers): {given}"


#: answers whose arguments are whole numbers, which no call can change in place
WHOLE_NUMBER_ARGUMENTS = {"count_params"}


def test_every_function_has_its_arguments_checked_unchanged(source_nb, release_nb):
    """Rule (docs/visible-checks.md): is every answer function's every call checked to leave
    its arguments as they were, by a visible test (self-check sees it) and a hidden one?"""
    functions = [
        node.name
        for cell in source_nb.cells
        if notebook.is_answer(cell) and cell.cell_type == "code"
        for node in ast.parse(notebook.strip_solution_markers(cell.source)).body
        if isinstance(node, ast.FunctionDef) and node.args.args
    ]
    assert len(functions) >= 7

    def owned(nb, name):
        return [
            c.source
            for c in nb.cells
            if notebook.is_test(c)
            and re.fullmatch(rf"test_{name}(_\w+)?", notebook.grade_id(c) or "")
        ]

    missing = []
    for name in sorted(set(functions) - WHOLE_NUMBER_ARGUMENTS):
        checked = re.compile(rf"check_unmodified\(\s*{name}\b")
        if not any(checked.search(text) for text in owned(release_nb, name)):
            missing.append(f"{name}: no visible check")
        hidden = [
            region
            for text in owned(source_nb, name)
            for region in re.findall(r"BEGIN HIDDEN TESTS(.*?)END HIDDEN TESTS", text, re.S)
        ]
        if not any(checked.search(region) for region in hidden):
            missing.append(f"{name}: no hidden check")
    assert missing == []


def _visible_calls(source_nb, release_nb, monkeypatch):
    """``{answer: [arguments of each call its own visible tests made]}``, from running the
    notebook as a student who solved it would: the solutions, then the release's tests."""
    import copy
    import sys

    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")  # the timing cell skips its loop
    monkeypatch.syspath_prepend(str((lab.ROOT / lab.SOURCE).parent))
    monkeypatch.delitem(sys.modules, "lab_checks", raising=False)
    visible = {notebook.grade_id(c): c.source for c in release_nb.cells if notebook.is_test(c)}
    calls: dict[str, list] = {}
    testing: list[str | None] = [None]

    def recorded(name, function):
        def call(*args):
            owner = testing[0] or ""
            if owner == f"test_{name}" or owner.startswith(f"test_{name}_"):
                calls.setdefault(name, []).append(copy.deepcopy(args))
            return function(*args)

        call.__name__ = name
        return call

    namespace: dict = {"__name__": "__main__"}
    for cell in source_nb.cells:
        if cell.cell_type != "code":
            continue
        grade_id = notebook.grade_id(cell)
        if notebook.is_test(cell):
            testing[0] = grade_id
            exec(visible[grade_id], namespace)
            testing[0] = None
            continue
        exec(notebook.strip_solution_markers(cell.source), namespace)
        if notebook.is_answer(cell) and callable(namespace.get(grade_id)):
            namespace[grade_id] = recorded(grade_id, namespace[grade_id])
    return calls


def _same_call(a, b):
    import numpy as np

    if isinstance(a, (list, tuple)):
        return (
            type(a) is type(b) and len(a) == len(b) and all(_same_call(x, y) for x, y in zip(a, b))
        )
    return np.shape(a) == np.shape(b) and np.array_equal(a, b)


@pytest.mark.slow
def test_visible_checks_call_twice_and_with_every_sequence_type(source_nb, release_nb, monkeypatch):
    """Rules 4 and 5 (docs/course-authors.md), as a student's notebook runs the visible tests:
    is each answer function called at least twice with different arguments, and is an
    argument that is a sequence given both as a list and as a tuple?"""
    calls = _visible_calls(source_nb, release_nb, monkeypatch)
    functions = [
        node.name
        for cell in source_nb.cells
        if notebook.is_answer(cell) and cell.cell_type == "code"
        for node in ast.parse(notebook.strip_solution_markers(cell.source)).body
        if isinstance(node, ast.FunctionDef)
    ]
    broken = []
    for name in functions:
        made = calls.get(name, [])
        if not any(not _same_call(a, b) for a in made for b in made):
            broken.append(f"{name}: not called twice with different arguments")
        for position in range(max((len(args) for args in made), default=0)):
            kinds = {type(args[position]) for args in made if position < len(args)}
            if kinds & {list, tuple} and not {list, tuple} <= kinds:
                broken.append(f"{name}: argument {position + 1} never given as a list and a tuple")
    assert broken == []


def _d_head(d_model, n_heads, d_head=None):
    return d_head if d_head is not None else d_model // max(n_heads, 1)


#: Rule 1: answer -> the sizes a call uses, by name, from its arguments
SIZES = {
    "attention_weights": lambda x, W_q, W_k: {"T": len(x), "d_model": x.shape[1],
                                              "d_head": W_q.shape[1]},
    "head": lambda x, W_q, W_k, W_v: {"T": len(x), "d_model": x.shape[1], "d_head": W_q.shape[1],
                                      "value width": W_v.shape[1]},
    "blend": lambda weights, values: {"T": len(weights), "width": values.shape[1]},
    "disagreement": lambda a, b: {"T": len(a), "positions seen": a.shape[1]},
    "concat_heads": lambda answers: {"n_heads": len(answers), "T": len(answers[0]),
                                     "d_head": answers[0].shape[1]},
    "count_params": lambda d_model, n_heads, *d_head: {
        "d_model": d_model, "n_heads": n_heads, "d_head": _d_head(d_model, n_heads, *d_head)},
    "multi_head": lambda x, heads: {"T": len(x), "d_model": x.shape[1], "n_heads": len(heads),
                                    "d_head": heads[0][0].shape[1],
                                    "value width": heads[0][2].shape[1]},
    "batched_heads": lambda x, W_q, W_k, W_v, n_heads: {
        "T": len(x), "d_model": x.shape[1], "n_heads": n_heads,
        "d_head": x.shape[1] // max(n_heads, 1)},
}  # fmt: skip
#: Rule 2: answer -> the largest attention score a call makes, for answers that score
SCORES = {
    "attention_weights": lambda x, W_q, W_k: (x @ W_q) @ (x @ W_k).T / np.sqrt(W_k.shape[1]),
    "batched_heads": lambda x, W_q, W_k, W_v, n_heads: (
        (x @ W_q) @ (x @ W_k).T / np.sqrt(x.shape[1] // n_heads)
    ),  # every head's scores summed: as large as the largest head's, within the heads' count
}


def _arrays(value):
    """Every numpy array in ``value`` (an array, or lists and tuples of them)."""
    if isinstance(value, (list, tuple)):
        return [a for item in value for a in _arrays(item)]
    return [value] if isinstance(value, np.ndarray) else []


def _rule_findings(calls):
    """What the recorded visible calls break of rules 1 to 4, one line per answer and rule."""
    broken = []
    for name, sizes_of in SIZES.items():
        made = calls.get(name, [])
        sizes = [sizes_of(*args) for args in made]
        if not any(len(set(s.values())) == len(s) for s in sizes):
            broken.append(f"{name}: rule 1, no call with every size distinct: {sizes}")
        matrices = [a for args in made for a in _arrays(args) if a.ndim == 2]
        if matrices and not any(len(set(row.tolist())) >= 3 for a in matrices for row in a):
            broken.append(f"{name}: rule 3, no row of three or more unequal entries")
    for name, scores_of in SCORES.items():
        largest = max((np.abs(scores_of(*args)).max() for args in calls.get(name, [])), default=0)
        if largest < 1000:
            broken.append(f"{name}: rule 2, its scores never reach the thousands ({largest:.0f})")
    gaps = [np.abs(a - b) for a, b in calls.get("disagreement", [])]
    if not any(not np.isclose(g.max(), g.sum() / 2) for gap in gaps for g in gap):
        broken.append("disagreement: rule 3, in every row the largest gap is half the sum")
    defaults = [args for args in calls.get("count_params", []) if len(args) == 3]
    if not any(d >= 1 and d != args[0] // args[1] for args in defaults for d in args[2:]):
        broken.append("count_params: rule 4, d_head is never given a value the default lacks")
    return broken


@pytest.mark.slow
def test_visible_checks_tell_sizes_magnitudes_and_reductions_apart(
    source_nb, release_nb, monkeypatch
):
    """Rules 1 to 4 (docs/course-authors.md), as a student's notebook runs the visible tests:
    for each answer, a call with every size distinct; scores in the thousands where an
    answer scores; rows of three or more unequal entries (and a row whose largest gap is
    not half its sum); an optional argument given a value its default would not give?"""
    assert _rule_findings(_visible_calls(source_nb, release_nb, monkeypatch)) == []


def test_the_rules_catch_what_they_are_about():
    """Do the rules' checks find a check that breaks each rule (the checks can fail)?"""
    worked = np.eye(3, 4), np.ones((4, 3)), np.ones((4, 3))  # T = d_head = 3, small scores
    flat = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]), np.array([[0.0, 0.5, 0.5]] * 2)
    findings = _rule_findings(
        {"attention_weights": [worked], "disagreement": [flat], "count_params": [(8, 4, 2)]}
    )
    said = "\n".join(findings)
    for expected in ("attention_weights: rule 1", "attention_weights: rule 2",
                     "disagreement: rule 3, in every row", "count_params: rule 4",
                     "head: rule 1"):  # fmt: skip
        assert expected in said, said


def test_names_the_students_code_may_supply(source_nb):
    """May tests take answers and lab data from the student, but never an instructor's name?"""
    allowed = execute.student_names(source_nb)
    assert {
        "attention_weights",
        "multi_head",
        "world_a",
        "wrong_shape",
        "x",
        "lab_heads",
    } <= allowed
    for instructor in ("_reference_weights", "_diagnose_weights", "check_close", "quietly", "np"):
        assert instructor not in allowed
    assert "answers" not in allowed  # bound by a test cell too: it must come from the test


def test_every_test_of_the_lab_runs_in_the_grader(source_nb):
    """Does no test of the lab act on the student's process (rebind a student's name, seed a
    shared generator, read the working folder)? Then all run in the grader, where no student
    code reaches a verdict, and none beside the student's code as stock runs them."""
    from autograder.pipeline.course import placement

    assert placement.reasons(source_nb, lab.ASSIGNMENT.helper_files()) == []
