"""Does ``python -m autograder grade`` grade this lab as stock nbgrader does, and hold?

One class is graded once: every answer set of the corpus, every case of
tests/lab/hostile.py (attacks on this lab's own checks), an honest student and a
victim. A local socket listens for anything a submission sends. How the grader
holds against broken files, runaway code, floods and the sandbox's attacks on
any course: tests/engine/test_hostile.py.
"""

import html

import pytest

from autograder.pipeline.course import dependencies, notebook

from ...engine import class_checks
from .. import hostile, lab
from ..classes import CORPUS, CORPUS_IDS, corpus_results

USES = dependencies.uses(notebook.read(lab.ROOT / lab.SOURCE))  # answer -> answers it uses

pytestmark = pytest.mark.slow

grade = lab.grade_command


def test_every_submission_gets_a_row(graded_class):
    """Does the batch finish with exit 0 and one row per submission, whatever they held?"""
    done, rows = graded_class["done"], graded_class["rows"]
    assert done.returncode == 0, done.stderr[-3000:]
    expected = set(graded_class["ids"])
    assert set(hostile.CASES) | {"honest", "victim"} | set(CORPUS_IDS) <= expected
    assert set(rows) == expected


def test_csv_follows_the_contract(graded_class, source_nb):
    """Is the CSV's header the contract's, then one column per graded cell?"""
    header = (graded_class["out"] / "grades.csv").read_text().splitlines()[0].split(",")
    graded = [
        c.metadata.nbgrader["grade_id"]
        for c in source_nb.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    ]
    contract = ["student_id", "score", "max_score", "status", "raw_score", "late_penalty"]
    assert header == [*contract, *graded]


@pytest.mark.parametrize("student_id", sorted(CORPUS_IDS))
def test_scores_equal_stock_nbgrader(graded_class, stock_golden, student_id):
    """Does every test cell get exactly the points (and message) stock nbgrader gives it?

    Stock's results on every corpus entry are the golden file's (`make golden`). A
    runaway answer (an entry with a ``timeout``) gets stock's points with one
    timeout paid; its messages are test_runaway.py's to check.
    """
    name = CORPUS_IDS[student_id]
    row, stock = graded_class["rows"][student_id], stock_golden[name]
    runaway = CORPUS[name].timeout is not None
    assert row["status"] == ("timeout" if runaway else "ok")
    ours = {test: float(row[test]) for test in stock.points}
    assert ours == stock.points
    if not runaway:
        assert corpus_results(graded_class)[name].messages == stock.messages


def _score(row):
    return float(row["score"])


@pytest.mark.parametrize("student_id", sorted(hostile.CASES))
def test_hostile_submission(graded_class, student_id):
    """Does this hostile submission get the status and the score it deserves?"""
    case, rows = hostile.CASES[student_id], graded_class["rows"]
    row = rows[student_id]
    if case.status != "any":
        assert row["status"] == case.status, f"{case.what}: {row}"
    honest = _score(rows["honest"])
    if case.score == "any":
        pass  # the status is what this case is about (or another test looks at its points)
    elif case.score == "zero":
        assert _score(row) == 0, case.what
    elif case.score == "as_solution":
        assert _score(row) == honest, f"{case.what}: {row}"
    elif case.score == "partial":
        assert 0 < _score(row) < honest, f"{case.what}: {row}"
    elif case.score == "no_more_than_wrong":
        assert _score(row) <= _score(rows["honest_wrong"]), f"{case.what}: {row}"
    elif case.score == "no_more_than_baseline":
        assert _score(row) <= _score(rows[hostile.BASELINES[student_id]]), f"{case.what}: {row}"
    elif case.score == "as_baseline":
        # What does nothing scores as the stub, in its own tests and everywhere else: an
        # answer that uses it is checked with the reference in its place.
        baseline = rows[hostile.BASELINES[student_id]]
        for test, points in row.items():
            if test.startswith("test_"):
                assert points == baseline[test], (case.what, test)
    else:
        raise AssertionError(f"unknown expectation {case.score!r}")


@pytest.mark.parametrize("student_id", sorted(hostile.ALONE))
def test_answer_points_depend_on_its_own_code(graded_class, student_id):
    """Does an answer keep every point when every other answer is a stub, nan or junk?"""
    row = graded_class["rows"][student_id]
    kept = student_id.removeprefix("alone_").rsplit("_", 1)[0]
    own = [t for t in row if t.startswith("test_") and notebook.answer_of(t, list(USES)) == kept]
    honest = graded_class["rows"]["honest"]
    assert own, f"no test of {kept}"
    assert {t: row[t] for t in own} == {t: honest[t] for t in own}, hostile.CASES[student_id].what


def test_cheats_gain_nothing(graded_class):
    """Does no cheat score more than the same wrong answers handed in honestly?"""
    rows = graded_class["rows"]
    wrong = _score(rows["honest_wrong"])
    assert wrong < _score(rows["honest"])
    assert {k: _score(rows[k]) for k in hostile.LAB_CHEATS if _score(rows[k]) > wrong} == {}


def test_moved_cells_are_named(graded_class):
    """Is a moved instructor cell reported as tampering, with the cell it moved?"""
    for student_id, moved in [
        ("moved_reference", "test_attention_weights_values"),
        ("moved_setup", "setup"),
    ]:
        assert graded_class["rows"][student_id]["status"] == "tampered"
        page = html.unescape((graded_class["out"] / "feedback" / f"{student_id}.html").read_text())
        assert f"moved cells {moved}" in page.lower() and "the source's order" in page


def test_runaway_function_costs_only_its_own_tests(graded_class):
    """Does a looping attention_weights cost its own tests only, as in stock?

    Answers that call it (head, multi_head) are checked with the reference in
    its place, so they keep every point too.
    """
    row = graded_class["rows"]["runaway_attention"]
    for answer in ("head", "blend", "disagreement", "concat_heads", "count_params", "multi_head"):
        earned = {k: v for k, v in row.items() if k.startswith(f"test_{answer}")}
        honest = {k: graded_class["rows"]["honest"][k] for k in earned}
        assert earned == honest, answer
    assert row["test_attention_weights"] == "0" and row["test_attention_weights_values"] == "0"


def test_grader_memory_is_bounded(graded_class):
    """Whatever the class holds (floods included), does the grader's memory stay bounded?

    The bound is the README's: the main process and each worker stay under 400 MiB.
    """
    class_checks.memory_bounded(graded_class)


def test_nothing_outside_the_sandbox_changed(graded_class):
    """Are the course's source, release, config and every submission byte-identical after?"""
    class_checks.nothing_changed_outside(graded_class)


def test_network_heard_nothing(graded_class):
    """Did the listening socket on the loopback hear nothing from any submission?"""
    assert graded_class["heard"] == []


def test_feedback_page_for_everyone(graded_class):
    """Has every student a feedback page, with a grading note when the status is not ok?"""
    class_checks.a_page_for_everyone(graded_class)


def test_feedback_hides_hidden_tests(graded_class):
    """Does a feedback page show hidden tests' messages but never their code?"""
    page = (graded_class["out"] / "feedback" / "corpus--mistakes--no_scale.html").read_text()
    assert "_reference_weights" not in page and "BEGIN HIDDEN TESTS" not in page
    assert "wrong values: the scores are not divided by sqrt(d_head)" in page


def test_scores_land_in_the_gradebook(graded_class):
    """Are the scores in the course's nbgrader gradebook, the manual answer left to a TA?"""
    class_checks.scores_in_the_gradebook(graded_class, lab.ASSIGNMENT.id)


def _report_groups(page):
    """``[(answer, key, {students})]`` of the report's mistake groups, as the page lists them."""
    import html as html_module
    import re

    found = []
    for match in re.finditer(
        r"<div class='mistake' data-answer='([^']*)' data-students='([^']*)'>.*?"
        r"<span class='key'>(.*?)</span>",
        page,
        re.DOTALL,
    ):
        answer, students, key = (html_module.unescape(g) for g in match.groups())
        found.append((answer, key, set(students.split())))
    return found


def test_class_report_groups_the_wrong_axis(graded_class, source_nb):
    """Does report.html name every test, and hold exactly the wrong-axis students in one group?"""
    page = (graded_class["out"] / "report.html").read_text()
    for cell in source_nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            assert f"data-test='{cell.metadata.nbgrader['grade_id']}'" in page or (
                cell.metadata.nbgrader.get("solution")
            )
    wrong_axis = {
        sid
        for sid, name in CORPUS_IDS.items()
        if "concat_heads" in CORPUS[name].cells and CORPUS[name].says == "axis 0"
    }
    assert len(wrong_axis) >= 2
    groups = [
        students & set(CORPUS_IDS)
        for answer, key, students in _report_groups(page)
        if answer == "concat_heads" and "glued along axis N, the positions" in key
    ]
    assert groups == [wrong_axis]
    assert "what the class got wrong" in graded_class["done"].stdout


def test_class_report_names_each_mistake_by_its_answer(graded_class):
    """Is every corpus student under exactly the answers their mistake is in, never a symptom?

    A mistake fails only its own answer's tests (others are checked with the
    reference in its place), so each student sits under exactly that answer.
    """
    import html as html_module
    import re

    page = (graded_class["out"] / "report.html").read_text()
    under: dict[str, set[str]] = {}
    for answer, students in re.findall(
        r'<section class="cause" data-answer="([^"]*)" data-students="([^"]*)">', page
    ):
        for student in html_module.unescape(students).split():
            under.setdefault(student, set()).add(html_module.unescape(answer))
    for sid, name in CORPUS_IDS.items():
        assert under.get(sid, set()) == set(CORPUS[name].loses), (name, under.get(sid))
    assert '<h2 id="not-attempted">Not attempted</h2>' in page


@pytest.mark.browser
def test_class_report_in_a_browser(graded_class):
    """Does the report open offline without scripts, its histogram drawn, nothing cut off?"""
    from ...engine import browser

    page = graded_class["out"] / "report.html"
    import re

    text = page.read_text()
    assert "<script" not in text and not re.search(r"(src|href)=[\"']?(https?:|//)", text)
    with browser.Browser() as chromium:
        seen = chromium.look(
            page,
            "({image: document.getElementById('histogram').getBoundingClientRect().width"
            " * (document.querySelectorAll('#histogram rect').length > 0),"
            " groups: document.querySelectorAll('.mistake').length,"
            " tests: document.querySelectorAll('tr.test').length})",
        )
        overflowing = chromium.look(page, browser.OVERFLOW)
    assert seen["image"] > 100 and seen["groups"] > 5 and seen["tests"] > 20, seen
    assert overflowing == [], overflowing[:5]


def _printed(graded_class, student_id, label):
    """What a student's cell printed after ``label``, read back as a Python value."""
    import ast

    import nbformat

    path = graded_class["course"] / "autograded" / lab.submission_path(student_id)
    for cell in nbformat.read(path, 4).cells:
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            if output.get("output_type") == "stream" and label in text:
                return ast.literal_eval(text.split(label, 1)[1].strip().splitlines()[0])
    raise AssertionError(f"{student_id} printed no {label!r}")


def test_no_solution_reaches_a_students_process(graded_class):
    """After the hidden tests served it the references, does a student's process hold no
    solution line, in its memory, the processes it sees or the files it can read?"""
    found = _printed(graded_class, "solution_hunt", "found:")
    scanned = _printed(graded_class, "solution_hunt", "scanned:")
    assert ("control", "memory") in found  # the search finds what is there
    assert [hit for hit in found if hit[0] != "control"] == []
    assert scanned["memory"] > 20 * 2**20 and scanned["files"] > 0
    rows = graded_class["rows"]["solution_hunt"]
    assert float(rows["test_multi_head_values"]) > 0  # its answers were called, served answers too
