"""Do the sample class's feedback pages read at a glance, in a browser 1280 px wide?"""

import html
import re

import pytest

from autograder.pipeline.course import notebook

from ...engine import browser
from .. import lab
from ..lab import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.browser]

STUDENTS = sorted(p.name for p in (lab.ROOT / lab.SAMPLE_CLASS).iterdir())
SUMMARY = """
[...document.querySelectorAll('#summary tr.answer-row')].map(row => [
  row.dataset.answer, row.cells[1].textContent.trim(), row.cells[2].textContent.trim()
])
"""

# In the notebook's own Markdown tables, each two neighbouring cells of a row:
# [the pixels between the first's text and the second's, the two texts].
TABLE_GAPS = """
[...document.querySelectorAll('.rendered_html table tr')].flatMap(tr => {
  const boxes = [...tr.cells].map(cell => {
    const text = document.createRange();
    text.selectNodeContents(cell);
    const box = text.getBoundingClientRect();
    return [box.left, box.right, cell.textContent.trim()];
  });
  const gaps = [];
  for (let i = 1; i < boxes.length; i++) {
    if (boxes[i - 1][2] && boxes[i][2]) {
      gaps.push([boxes[i][0] - boxes[i - 1][1], boxes[i - 1][2], boxes[i][2]]);
    }
  }
  return gaps;
})
"""

# Drawn images (the student's heatmap), by their rendered width in pixels.
IMAGES = "[...document.images].filter(i => i.complete).map(i => i.naturalWidth)"


@pytest.fixture(scope="module")
def pages(graded_samples):
    """``{sample name: (path, html)}`` of every sample student's feedback page."""
    folder = graded_samples["out"] / "feedback"
    paths = {name: folder / f"{graded_samples['ids'][name]}.html" for name in STUDENTS}
    return {name: (path, path.read_text()) for name, path in paths.items()}


@pytest.fixture(scope="module")
def seen(pages):
    """``{student_id: (what overflows, the summary's rows)}`` as Chromium shows each page."""
    if browser.CHROMIUM is None:
        pytest.fail(
            "chromium is not installed: run make setup as root, or apt-get install chromium"
        )
    with browser.Browser() as chromium:
        return {
            sid: (
                chromium.look(path, browser.OVERFLOW),
                chromium.look(path, SUMMARY),
                chromium.look(path, IMAGES),
                chromium.look(path, TABLE_GAPS),
            )
            for sid, (path, _) in pages.items()
        }


@pytest.mark.parametrize("student_id", STUDENTS)
def test_nothing_hides_behind_a_scrollbar(seen, student_id):
    """At 1280 px, does every message wrap, with nothing wider than the page?"""
    overflowing = seen[student_id][0]
    assert overflowing == [], overflowing[:5]


def test_the_notebooks_tables_keep_their_columns_apart(seen):
    """Does every column of the lesson's tables (the points table, the two worlds) stand apart
    from the next, as a reader sees it, instead of running into it ("stretchall heads")?"""
    gaps = [gap for looked in seen.values() for gap in looked[3]]
    assert gaps, "no table of the notebook was found on the pages"
    crowded = [(round(px), a, b) for px, a, b in gaps if px < 8]
    assert crowded == [], crowded[:5]


@pytest.mark.parametrize("student_id", STUDENTS)
def test_summary_lists_every_answer(seen, student_id, answer_ids):
    """Does the summary list every answer, with points and what the tests found?"""
    rows = seen[student_id][1]
    assert [row[0] for row in rows] == answer_ids
    for answer, points, found in rows:
        assert re.fullmatch(r"(–|[0-9.]+) / [0-9.]+", points), (answer, points)
        assert found, answer


@pytest.mark.parametrize("student_id", STUDENTS)
def test_no_path_of_the_grading_machine(pages, student_id):
    """Does no page show a path of the TA's machine (the repository, a venv, the sandbox)?"""
    _, page = pages[student_id]
    text = html.unescape(page)
    for path in (str(ROOT), "site-packages", "/autograder/", "student.py", "/tmp/lab"):
        assert path not in text, path


def test_title_names_the_notebook_and_the_student(pages):
    """Does the page's title hold the notebook and the student id?"""
    _, page = pages["dara"]
    title = re.search(r"<title>(.*?)</title>", page).group(1)
    assert lab.NOTEBOOK in title and "dara" in title


def test_a_stub_reads_not_attempted(seen, pages):
    """Does the blank submission read "not attempted" for every answer, never a crash?"""
    rows = seen["fay"][1]
    assert all("not attempted" in found for _, _, found in rows), rows
    assert "crashed on arguments" not in pages["fay"][1]


def test_wrong_axis_is_named_in_the_summary(seen):
    """Does the wrong glue's failing test say, in the summary, which axis it used?"""
    rows = seen["dara"][1]
    concat = next(found for answer, _, found in rows if answer == "concat_heads")
    assert "failing" in concat and "axis 0" in concat and "(24, 2)" in concat
    assert "Do four (6, 2) answers" in concat  # what the failing test checks


def test_the_heatmap_stays(seen):
    """Does a solved student's page still show the heatmap their notebook drew?"""
    assert any(width > 100 for width in seen["ada"][2]), seen["ada"][2]


def test_written_answer_awaits_a_ta(seen, release_nb):
    """Is the written answer "awaiting a TA" until a TA grades it, never 0?"""
    written = [notebook.grade_id(c) for c in release_nb.cells if c.cell_type == "markdown"]
    written = [w for w in written if w in notebook.answers(release_nb)]
    assert written
    for sid in ("ada", "dara"):
        found = {answer: (points, text) for answer, points, text in seen[sid][1]}
        for answer in written:
            assert found[answer][0].startswith("–") and "awaiting a TA" in found[answer][1]


def test_student_traceback_shows_only_their_code(pages):
    """Does a crash inside the student's function show their frames, not the grader's?"""
    _, page = pages["dara"]
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "In your code:" in text and "Cell In[" in text
    assert "shell.user_ns" not in text and 'File "/' not in text
    # numpy's words are explained in the student's: what they joined, and the rule (once)
    said = "np.concatenate(answers): answers is a tuple of 3: [a (4, 1) array of floats"
    assert said in text
    assert "Why: joining along axis 0 needs every other axis to agree" in text
    test = text.split("Test test_concat_heads_widths", 1)[1].split("In [", 1)[0]
    assert test.count(said) == 1, test
