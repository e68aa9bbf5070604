"""Does each later stage (score, report, feedback, record) do its one job on a tiny notebook?

The notebook is built in the test: one answer, one passing and one failing
test cell, and a written answer, so a broken stage fails here by name.
"""

import copy
import json

import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from nbgrader.api import Gradebook

from autograder.pipeline import results
from autograder.pipeline.course import gradebook, internals, notebook
from autograder.pipeline.course.notebook import Columns
from autograder.pipeline.errors import Status
from autograder.pipeline.grading import score
from autograder.pipeline.reports import feedback_page, terminal
from autograder.pipeline.results import Graded

from . import toy


def graded_cell(kind, grade_id, points, source="", outputs=()):
    """An nbgrader cell (:func:`tests.engine.toy.cell`) with ``outputs`` if it is code."""
    cell = toy.cell(source, grade_id, kind, points)
    if kind != "manual":
        cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return cell


FAILED = {
    "output_type": "error",
    "ename": "AssertionError",
    "evalue": "wrong axis",
    "traceback": ["AssertionError: wrong axis"],
}


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    """A toy course's one assignment, its gradebook not yet made."""
    return toy.assignment(tmp_path_factory.mktemp("course"))


@pytest.fixture
def executed():
    """An executed notebook: a passing test (2 points), a failing one (1), a written answer (2)."""
    nb = nbformat.v4.new_notebook(
        cells=[
            graded_cell("answer", "mean", 0, "def mean(v):\n    return 0"),
            graded_cell("test", "test_mean", 2, "assert True"),
            graded_cell("test", "test_mean_more", 1, "assert False", [FAILED]),
            graded_cell("manual", "why", 2, "Because."),
        ]
    )
    nb.metadata.language_info = {"name": "python"}  # nbconvert shows errors only then
    return nb


def test_score_gives_nbgraders_points(executed):
    """Are passing tests full marks, failing ones zero, and the written answer left to a TA?"""
    assert score.points(executed) == {"test_mean": 2, "test_mean_more": 0, "why": None}
    assert score.messages(executed) == {"test_mean_more": "AssertionError: wrong axis"}


def test_columns_qualify_only_shared_ids(executed):
    """Is a grade_id used by two notebooks written with its notebook's name, and only then?"""
    columns = Columns({"a.ipynb": executed, "b.ipynb": executed})
    assert "a:test_mean" in columns.possible and "test_mean" not in columns.possible
    single = Columns({"a.ipynb": executed})
    assert list(single.possible) == ["test_mean", "test_mean_more", "why"]
    assert single.tests() == {"test_mean": 2, "test_mean_more": 1}


def test_report_writes_the_contract_csv(tmp_path):
    """Does the CSV have the contract's header, points per column, empty for ungraded?

    score is what is left after the late penalty (as ``nbgrader export`` has it),
    raw_score what the answers earned.
    """
    rows = [
        results.Outcome("ada", {"test_mean": 2.0, "why": None}, 5.0, "ok"),
        results.Outcome("bo", {"test_mean": 2.0, "why": 1.5}, 5.0, "ok", late_penalty=1.0),
        results.Outcome("cy", {"test_mean": 1.0, "why": None}, 5.0, "ok", late_penalty=2.0),
    ]
    results.write_csv(rows, ["test_mean", "why"], tmp_path / "grades.csv")
    text = (tmp_path / "grades.csv").read_text().splitlines()
    assert text == [
        "student_id,score,max_score,status,raw_score,late_penalty,test_mean,why",
        "ada,2,5,ok,2,0,2,",
        "bo,2.5,5,ok,3.5,1,2,1.5",
        "cy,0,5,ok,1,2,1,",
    ]
    assert "failed by 1 of 1" not in terminal.summary(rows[:1], {"test_mean": 2.0})
    assert "late: 3.5 less a penalty of 1" in terminal.table(rows)


def test_csv_cells_are_never_formulas(tmp_path):
    """Does an id a spreadsheet would run as a formula reach the CSV as plain text?"""
    rows = [results.Outcome(sid, {}, 1.0) for sid in ('=HYPERLINK("x")', "+1", "-2", "@sum")]
    results.write_csv(rows, [], tmp_path / "grades.csv")
    ids = [row["student_id"] for row in results.read_csv(tmp_path / "grades.csv")]
    assert all(i.startswith("'") for i in ids), ids


def test_feedback_page_shows_scores_and_notes(executed, assignment):
    """Does the page carry the points, the failing message, and a note when not ok?"""
    renderer = feedback_page.Renderer(assignment)
    columns = Columns({"n.ipynb": executed})
    result = Graded("ada", "", Status.TIMEOUT, "ran too long", {}, {}, {})
    page = renderer.render("ada", {"n.ipynb": executed}, columns, score.points(executed), result)
    assert "wrong axis" in page and "Grading note" in page and "Ran too long" in page
    assert "Score: <b>2.0 / 5.0</b>" in page


def test_status_note_is_absent_when_ok(executed, assignment):
    """Is there no grading note on an ok page?"""
    renderer = feedback_page.Renderer(assignment)
    columns = Columns({"n.ipynb": executed})
    result = Graded("ada", "", Status.OK, "", {}, {}, {})
    page = renderer.render("ada", {"n.ipynb": executed}, columns, {}, result)
    assert "Grading note" not in page


def test_steps_come_from_nbgraders_configuration(assignment):
    """Are the steps nbgrader's configured lists, split around Execute and SaveAutoGrades?"""
    steps = internals.autograde_steps(assignment.config)
    names = [s.__name__ for s in steps.after_save]
    assert names[0] == "SaveAutoGrades" and "AssignLatePenalties" in names
    assert "CheckCellMetadataOnce" in [s.__name__ for s in steps.sanitize]
    assert "Execute" not in [s.__name__ for s in steps.after_execute]
    # the check after saving reads the notebook alone: the worker runs it
    assert [s.__name__ for s in steps.after_execute][-1] == "CheckCellMetadataOnce"
    assert steps.stock_saving


def test_record_writes_gradebook(tmp_path):
    """Does recording put the scores in the gradebook, nothing left to grade by hand?"""
    assignment = toy.assignment(tmp_path / "course")
    db_url = gradebook.ensure_gradebook(assignment)
    recorder = results.Recorder(assignment, db_url, tmp_path / "out")
    result = Graded("ada", "x", Status.UNREADABLE, "the file is empty", {}, {}, {})
    recorder.save(result)
    recorder.commit()
    recorder.close()
    with Gradebook(db_url) as gb:
        (submission,) = gb.assignment_submissions(assignment.id)
        assert submission.student_id == "ada" and submission.score == 0
        assert not submission.needs_manual_grade  # nothing to grade by hand in an empty file


def _cell_html(page, grade_id):
    """The HTML of the graded cell ``grade_id`` on ``page``, up to the next cell's."""
    start = page.index(f'id="{grade_id}"')
    return page[start : page.find('<a name="', start + 1)]


def test_a_cell_two_pages_share_shows_each_pages_own_grading(executed, assignment):
    """Is a cell's HTML reused from an earlier page only where it would come out the same?

    The written answer is the same text on both pages, graded by a TA on one and
    waiting on the other; a script's output gets a fresh id on every page.
    """
    executed.cells.append(
        graded_cell(
            "answer",
            "shown",
            0,
            "display(Javascript('1'))",
            [
                {
                    "output_type": "display_data",
                    "data": {"application/javascript": "1"},
                    "metadata": {},
                }
            ],
        )
    )
    renderer = feedback_page.Renderer(assignment)
    columns = Columns({"n.ipynb": executed})
    ok = Graded("", "", Status.OK, "", {}, {}, {})
    points = score.points(executed)
    graded = renderer.render("ada", {"n.ipynb": executed}, columns, {**points, "why": 1.5}, ok)
    waiting = renderer.render("bob", {"n.ipynb": executed}, columns, {**points, "why": None}, ok)
    again = renderer.render("cy", {"n.ipynb": executed}, columns, {**points, "why": 1.5}, ok)
    assert "1.5 / 2.0" in _cell_html(graded, "why")
    assert "1.5" not in _cell_html(waiting, "why")
    assert _cell_html(again, "why") == _cell_html(graded, "why")
    assert _cell_html(again, "test_mean_more") == _cell_html(graded, "test_mean_more")
    assert _cell_html(again, "shown") != _cell_html(graded, "shown")  # each with its own id


def test_hidden_tests_are_cut_alike_every_time():
    """Does the feedback step that remembers what it cut cut as nbgrader's does, every time,
    and refuse a region never closed every time?"""
    plain = internals.ClearHiddenTests()
    remembering = internals.ClearHiddenTestsOnce()
    hidden = "a = 1\n### BEGIN HIDDEN TESTS\nassert a\n### END HIDDEN TESTS\nprint(a)"
    for _ in range(2):
        cells = [toy.cell(hidden, "test_a", "test", 1) for _ in range(2)]
        plain.preprocess_cell(cells[0], {}, 0)
        remembering.preprocess_cell(cells[1], {}, 0)
        assert cells[1].source == cells[0].source == "a = 1\nprint(a)"
    for _ in range(2):
        with pytest.raises(RuntimeError, match="No end hidden tests"):
            remembering.preprocess_cell(toy.cell("### BEGIN HIDDEN TESTS", "t", "test", 1), {}, 0)


def test_only_cells_of_a_bounded_size_are_remembered(executed, assignment, monkeypatch):
    """Does a page remember a cell's HTML only up to ``MAX_CELL_HTML`` characters?"""
    ok = Graded("", "", Status.OK, "", {}, {}, {})
    pages = []
    for limit in (internals.FeedbackExporter.MAX_CELL_HTML, 10):
        monkeypatch.setattr(internals.FeedbackExporter, "MAX_CELL_HTML", limit)
        renderer = feedback_page.Renderer(assignment)
        columns = Columns({"n.ipynb": executed})
        pages.append(renderer.render("ada", {"n.ipynb": executed}, columns, {}, ok))
        remembered = renderer.exporter._cells
        assert (len(remembered) == len(executed.cells)) if limit > 10 else not remembered
    assert pages[0] == pages[1]


def test_a_page_is_what_nbconverts_own_preprocessing_makes(executed, assignment, monkeypatch):
    """Without nbconvert's copies and validation, is a page the same, the notebook it
    renders valid, and the CSS header made once per preprocessor for every later page?"""
    ok = Graded("", "", Status.OK, "", {}, {}, {})
    columns = Columns({"n.ipynb": executed})
    points = score.points(executed)
    made, rendered = [], []
    generate = internals.CSSHTMLHeaderPreprocessor._generate_header
    preprocess = internals.FeedbackExporter._preprocess

    def counted(self, resources):
        made.append(self)
        return generate(self, resources)

    def kept(self, nb, resources):
        rendered.append(preprocess(self, nb, resources)[0])
        return rendered[-1], resources

    monkeypatch.setattr(internals.CSSHTMLHeaderPreprocessor, "_generate_header", counted)
    monkeypatch.setattr(internals.FeedbackExporter, "_preprocess", kept)
    renderer = feedback_page.Renderer(assignment)
    ours = [renderer.render(sid, {"n.ipynb": executed}, columns, points, ok) for sid in "ab"]
    headers = [p for p in renderer.exporter._preprocessors if p.__class__ is made[0].__class__]
    assert len(made) == len(headers) >= 1  # the second page made none
    for nb in rendered:
        nbformat.validate(nb)
    monkeypatch.setattr(internals.FeedbackExporter, "_preprocess", HTMLExporter._preprocess)
    theirs = feedback_page.Renderer(assignment)
    assert [theirs.render(s, {"n.ipynb": executed}, columns, points, ok) for s in "ab"] == ours


def test_warming_up_highlights_the_code_and_renders_only_the_prose(assignment):
    """Does the warm-up leave every release code cell's text highlighted, and render whole
    only the cells a student's page can share (its prose), not code a page never shows as
    released?"""
    release = notebook.read(assignment.release("toy.ipynb"))
    release.cells.insert(0, nbformat.v4.new_markdown_cell("# Doubling", id="intro"))
    renderer = feedback_page.Renderer(assignment)
    renderer.warm_up({"toy.ipynb": release}, Columns({"toy.ipynb": release}))
    exporter = renderer.exporter
    code = [c for c in release.cells if c.cell_type == "code"]
    assert code and all((c.source, None) in exporter._code for c in code)
    rendered = [json.loads(key)[0]["cell_type"] for key in exporter._cells]
    assert rendered == ["markdown"]
    # a student's page then highlights only what the student wrote
    nb = copy.deepcopy(release)
    nb.cells[1].source = "def double(v):\n    return 4 * v / 2"
    fresh = []
    highlight = exporter._highlight
    exporter._highlight = lambda source, *args: fresh.append(source) or highlight(source, *args)
    graded = Graded("ada", "", Status.OK, "", {}, {}, {})
    renderer.render("ada", {"toy.ipynb": nb}, Columns({"toy.ipynb": nb}), {}, graded)
    assert fresh == [nb.cells[1].source]


def test_a_summary_counts_a_test_named_otherwise_for_the_answer_above_it():
    """nbgrader's own naming (``squares``, then ``correct_squares``): the failing test counts
    against the answer above it, never "all tests pass"; an answer with no test says so."""
    nb = nbformat.v4.new_notebook(
        cells=[
            graded_cell("answer", "squares", 0, "def squares(n):\n    return []"),
            graded_cell("test", "correct_squares", 1, "assert squares(1) == [1]", [FAILED]),
            graded_cell("answer", "helper", 0, "def helper():\n    pass"),
        ]
    )
    columns = Columns({"n.ipynb": nb})
    stubs = {"n.ipynb": {"squares": "# YOUR CODE HERE", "helper": "# YOUR CODE HERE"}}
    answers, cells = feedback_page.summary({"n.ipynb": nb}, columns, score.points(nb), {}, stubs)
    states = {a["id"]: a["state"] for a in answers}
    assert states == {"squares": "failing", "helper": "done"}
    assert cells["squares"]["state"] == "1 test failing"
    assert cells["helper"]["state"] == "no tests of its own"
