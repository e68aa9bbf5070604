"""Does ``python -m autograder grade`` survive a hostile class of any course?

One class of the toy numpy course is graded once (the ``hostile_class``
fixture): every case of tests/engine/hostile.py, an honest student and a
victim whose files the cheats try to reach. A local socket listens for
anything a submission sends.
"""

import functools
import html
import http.server
import json
import re
import threading
import time
from pathlib import Path

import nbformat
import pytest

from autograder.sandbox import Limits
from autograder.sandbox.launcher import PROCESS_SLACK

from . import class_checks, hostile, processes, toy

pytestmark = pytest.mark.slow


def _score(row: dict[str, str]) -> float:
    return float(row["score"])


def test_every_submission_gets_a_row(hostile_class):
    """Does the batch finish with exit 0 and one row per submission, whatever they held?"""
    done, rows = hostile_class["done"], hostile_class["rows"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(hostile.CASES) | {"honest", "victim"} <= set(hostile_class["ids"])
    assert set(rows) == set(hostile_class["ids"])


def test_csv_follows_the_contract(hostile_class, arrays_solution):
    """Is the CSV's header the contract's, then one column per graded cell?"""
    header = (hostile_class["out"] / "grades.csv").read_text().splitlines()[0].split(",")
    graded = [
        c.metadata.nbgrader["grade_id"]
        for c in arrays_solution.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    ]
    contract = ["student_id", "score", "max_score", "status", "raw_score", "late_penalty"]
    assert header == [*contract, *graded]


@pytest.mark.parametrize("student_id", sorted(hostile.CASES))
def test_hostile_submission(hostile_class, student_id):
    """Does this hostile submission get the status and the score it deserves?"""
    case, rows = hostile.CASES[student_id], hostile_class["rows"]
    row = rows[student_id]
    if case.status != "any":
        assert row["status"] == case.status, f"{case.what}: {row}"
    honest = _score(rows["honest"])
    assert honest == toy.ARRAYS_POINTS
    if case.score == "zero":
        assert _score(row) == 0, case.what
    elif case.score == "as_solution":
        assert _score(row) == honest, f"{case.what}: {row}"
    elif case.score == "partial":
        assert 0 < _score(row) < honest, f"{case.what}: {row}"
    elif case.score == "no_more_than_wrong":
        assert _score(row) <= _score(rows["honest_wrong"]), f"{case.what}: {row}"
    elif case.score == "as_baseline":
        # what does nothing scores as the stub, test by test
        baseline = rows[hostile.BASELINES[student_id]]
        for test, points in row.items():
            if test.startswith("test_"):
                assert points == baseline[test], (case.what, test)
    else:
        raise AssertionError(f"unknown expectation {case.score!r}")


def test_cheats_gain_nothing(hostile_class):
    """Does no cheat score more than the same wrong answers handed in honestly?"""
    rows = hostile_class["rows"]
    wrong = _score(rows["honest_wrong"])
    assert wrong < _score(rows["honest"])
    assert {k: _score(rows[k]) for k in hostile.CHEATS if _score(rows[k]) > wrong} == {}


def test_own_interrupt_is_not_a_timeout(hostile_class):
    """Is a KeyboardInterrupt the student raised reported as such, not as a timeout?"""
    page = (hostile_class["out"] / "feedback" / "raises_interrupt.html").read_text()
    assert "KeyboardInterrupt" in page and "Grading note" not in page


def _mib(path: Path) -> float:
    return path.stat().st_size / 2**20


@pytest.mark.parametrize("student_id", sorted(hostile.FLOODS))
def test_floods_are_cut_to_size(hostile_class, student_id):
    """Do a flood's graded notebook and feedback page stay small, and say what was cut?"""
    graded = hostile_class["course"] / "autograded" / hostile.submission_path(student_id)
    page = hostile_class["out"] / "feedback" / f"{student_id}.html"
    assert _mib(graded) < 12 and _mib(page) < 16
    if student_id in ("flood_big_displays", "flood_many_displays"):
        assert "the grader cut" in page.read_text()


def test_grader_memory_is_bounded(hostile_class):
    """Whatever the class holds (floods included), does the grader's memory stay bounded?

    The bound is the README's: the main process and each worker stay under 400 MiB.
    """
    class_checks.memory_bounded(hostile_class)


def test_nothing_outside_the_sandbox_changed(hostile_class):
    """Are the course's source, release, config and every submission byte-identical after?"""
    class_checks.nothing_changed_outside(hostile_class)


def test_network_heard_nothing(hostile_class):
    """Did the listening socket on the loopback hear nothing from any submission?"""
    assert hostile_class["heard"] == []


def test_no_student_process_outlives_grading(hostile_class):
    """Are all sandboxed processes (the forked sleepers included) gone after the run?"""
    assert processes.left_running(hostile_class["done"].pid) == []


def test_process_storm_is_capped(hostile_class):
    """Did the fork storm stop at the process limit instead of filling the machine?"""
    graded = hostile_class["course"] / "autograded" / hostile.submission_path("fork_storm")
    nb = nbformat.read(graded, 4)
    printed = "".join(
        o.get("text", "") for c in nb.cells if c.get("id") == "table" for o in c.outputs
    )
    count = int(printed.split("processes:")[1].split()[0])
    assert count <= Limits.processes + PROCESS_SLACK


def test_feedback_page_for_everyone(hostile_class):
    """Has every student a feedback page, with a grading note when the status is not ok?"""
    class_checks.a_page_for_everyone(hostile_class)


def test_feedback_hides_hidden_tests_as_the_course_says(hostile_class):
    """With ClearHiddenTests in the course's feedback steps: the messages, never the code?"""
    page = html.unescape((hostile_class["out"] / "feedback" / "honest_wrong.html").read_text())
    assert "BEGIN HIDDEN TESTS" not in page and "np.arange(3), -2" not in page
    assert re.search(r"test_scale_hidden.{0,400}AssertionError", page, re.DOTALL)


def test_feedback_runs_no_student_script(hostile_class):
    """Is a student's HTML output kept in the feedback page, but without its script?"""
    page = (hostile_class["out"] / "feedback" / "html_script.html").read_text()
    assert "<b>my table</b>" in page
    assert "<script>document.title" not in page  # the source shows it escaped, as code


def test_scores_land_in_the_gradebook(hostile_class):
    """Are the scores in the course's nbgrader gradebook, the written answer left to a TA?"""
    class_checks.scores_in_the_gradebook(hostile_class, hostile.ID)


LIVE = """
(() => {
  const live = [];
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.getAttributeNames()) {
      if (attr.startsWith('on')) live.push(el.tagName + ' ' + attr);
    }
  }
  for (const el of document.querySelectorAll('script, iframe, object, embed, svg[onload]'))
    live.push(el.tagName);
  for (const el of document.querySelectorAll('[href], [src]')) {
    const url = el.getAttribute('href') || el.getAttribute('src');
    if (/^\\s*(javascript|vbscript|data:text)/i.test(url)) live.push('link ' + url);
    if (/^\\s*(https?:)?\\/\\//i.test(url) && el.tagName !== 'A') live.push('request ' + url);
  }
  return {live: live, maths: document.querySelectorAll('math').length, title: document.title};
})()
"""


@pytest.mark.browser
def test_student_markup_is_never_live(hostile_class):
    """On the page of a student whose Markdown attacks, does nothing of it run or load?

    No script, frame, event handler or javascript: link from the student's text,
    no request to the network (its beacon, or MathJax), the maths drawn as MathML.
    """
    from . import browser

    page = hostile_class["out"] / "feedback" / "markup.html"
    with browser.Browser() as chromium:
        seen = chromium.look(page, LIVE)
    assert seen["live"] == [], seen["live"]
    assert seen["maths"] >= 2 and "pwned" not in seen["title"]
    text = page.read_text()
    assert "The spread is a difference." in text and "mathjax" not in text.lower()


SEEN_WITH_SCRIPTS = """
(() => {
  const shown = %s.filter(id => !document.getElementById(id));
  const covering = [...document.querySelectorAll('body *')].filter(el => {
    const style = getComputedStyle(el);
    return style.position === 'fixed' || style.backgroundImage !== 'none';
  }).map(el => el.tagName);
  const anchors = [...document.querySelectorAll('[id]')].filter(el => /^H[1-6]$/.test(el.tagName))
    .map(el => el.id).filter(id => %s.includes(id));
  return {title: document.title, missing: shown, covering: covering, live: %s.live,
          headings: anchors};
})()
"""


@pytest.mark.browser
def test_student_maths_never_runs_with_scripts_on(hostile_class, arrays_solution, tmp_path):
    """With scripts on, the page served over HTTP and a listener on the network, does the
    page of a student whose maths and images attack run nothing, fetch nothing (not through
    ``/\\host`` or ``\\\\host`` paths either), lend no test's anchor to a student's heading,
    and still show every test's result?"""
    from autograder.pipeline.course import notebook

    from . import browser
    from .listener import Listener

    listener = Listener()
    page = tmp_path / "markup.html"
    text = (hostile_class["out"] / "feedback" / "markup.html").read_text()
    page.write_text(re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{listener.port}", text))
    tests = [notebook.grade_id(c) for c in arrays_solution.cells if notebook.is_test(c)]
    # served over HTTP, as formgrader or a course's web server serves it: a path such as
    # /\host/x is then a network path to the browser
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        with browser.Browser() as chromium, chromium.tab() as tab:
            tab.go(f"http://127.0.0.1:{server.server_address[1]}/markup.html")
            time.sleep(1)  # what would load or run has had its chance
            seen = tab.run(SEEN_WITH_SCRIPTS % (json.dumps(tests), json.dumps(tests), LIVE.strip()))
    finally:
        listener.stop()
        server.shutdown()
        server.server_close()
    assert seen["title"] != "pwned" and listener.heard == [], (seen, listener.heard)
    assert seen["live"] == [] and seen["covering"] == [], seen
    assert seen["headings"] == [], f"a student's heading took a test's anchor: {seen}"
    assert seen["missing"] == [], f"results no longer shown: {seen['missing']}"
