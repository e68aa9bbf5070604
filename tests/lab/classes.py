"""The hostile class: every case of tests/lab/hostile.py and every corpus entry, graded once.

What the end-to-end tests of grading this lab (``tests/lab/pipeline/test_grader.py``)
look at; built and graded once per test session (the ``graded_class`` fixture in
conftest).
A local socket listens for anything a submission sends.
"""

from pathlib import Path

import nbformat

from autograder.pipeline import results
from autograder.tools import corpus

from ..engine.listener import Listener
from ..engine.toy import tree_hash
from . import hostile, lab

CORPUS = corpus.load_corpus(lab.ROOT / lab.CORPUS)
# corpus names hold a slash; as student ids they are e.g. corpus--mistakes--no_scale
CORPUS_IDS = {f"corpus--{name.replace('/', '--')}": name for name in CORPUS}
# Every entry is compared cell by cell with stock nbgrader's golden file
# (corpus/<assignment>/stock.json, `make golden`); these few are also graded by stock live on every
# run, so the golden file cannot drift from what stock really does: a correct style,
# the wrong axis, and a mistake that crashes.
STOCK_LIVE = ["correct/column_stack", "mistakes/concat_axis0", "mistakes/multi_head_global_input"]
# Seconds per cell for the class: the limit the corpus's runaway answers are graded
# with by stock (so their points compare). An honest cell takes under 0.6 s here (the
# setup cell's imports), so a machine at a quarter of the speed, both cores busy,
# still passes with room; only the loops that never end run into it.
RUNAWAY = {name: entry for name, entry in CORPUS.items() if entry.timeout is not None}
(_LIMIT,) = {entry.timeout for entry in RUNAWAY.values()}
CELL_TIMEOUT = f"{_LIMIT:g}"


def corpus_results(graded):
    """``{corpus entry: StockResult}`` of this grader's run over the hostile class.

    The same shape as stock nbgrader's results (points and messages per test
    cell), read from the run's saved rows.
    """
    from autograder.pipeline.course import notebook
    from autograder.pipeline.results import Store
    from autograder.tools.stock import StockResult

    tests = notebook.Columns({lab.NOTEBOOK: notebook.read(lab.ROOT / lab.SOURCE)}).tests()
    state = Store(graded["out"])
    found = {}
    for student_id, name in CORPUS_IDS.items():
        row = state.load(student_id)["row"]
        points = {test: float(row["points"][test] or 0) for test in tests}
        messages = {t: row["messages"][t] for t in tests if t in row["messages"]}  # notebook order
        found[name] = StockResult(points, dict(tests), messages)
    return found


def build_and_grade(tmp_path_factory, template, release_nb, solution_nb):
    """The whole class graded once: rows, the command's output, and what changed around it.

    template: the course to copy (the ``course_template`` fixture).
    """
    base = tmp_path_factory.mktemp("class")
    course_dir = lab.copy_course(template, base / "course")
    submissions, out = base / "submissions", base / "grades"
    listener = Listener()
    context = {"course": course_dir, "out": out, "submissions": submissions, "port": listener.port}
    hostile.build_class(submissions, release_nb, solution_nb, context)
    for student_id, name in CORPUS_IDS.items():
        nb = corpus.build({name: CORPUS[name]}, release_nb, solution_nb)[name]
        path = submissions / lab.submission_path(student_id)
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(nb))
    ids = sorted(p.name for p in submissions.iterdir())
    Path("/tmp/pwned").unlink(missing_ok=True)
    watched = ("source", "release", *lab.CONFIG_FILES)
    before = {
        "course": {k: v for k, v in tree_hash(course_dir).items() if k.split("/")[0] in watched},
        "submissions": tree_hash(submissions),
    }
    done = lab.grade_command(submissions, course_dir, out, "--timeout", CELL_TIMEOUT, jobs=2)
    listener.stop()
    after = {
        "course": {k: v for k, v in tree_hash(course_dir).items() if k.split("/")[0] in watched},
        "submissions": tree_hash(submissions),
    }
    rows = {row["student_id"]: row for row in results.read_csv(out / "grades.csv")}
    return {
        "done": done, "rows": rows, "before": before, "after": after, "heard": listener.heard,
        "course": course_dir, "out": out, "submissions": submissions, "ids": ids,
    }  # fmt: skip
