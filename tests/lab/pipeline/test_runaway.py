"""Does a function that never returns cost one timeout, and every cell the points stock gives?

Stock nbgrader runs into the time limit in every cell that calls the loop and
goes on; ours stops calling it after the first. The corpus's runaway answers
(an entry with a ``timeout``) are graded by stock with that cell limit, in the
golden file; ours are graded here with the limit set where a TA sets it, in
``course_config.py``, and no ``--timeout``.
"""

import pytest

from autograder.pipeline import results
from autograder.pipeline.course import notebook
from autograder.pipeline.results import Store
from autograder.tools import corpus
from autograder.tools.nbgrader_cli import scratch_course

from .. import lab
from ..classes import RUNAWAY

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", sorted(RUNAWAY))
def test_runaway_scores_as_stock(tmp_path, release_nb, solution_nb, stock_golden, name):
    """Are a runaway student's per-cell points stock's, with only one timeout paid?"""
    entry = RUNAWAY[name]
    limit = f"{entry.timeout:g}"
    course_dir = scratch_course(lab.ROOT, tmp_path / "course", release=True)
    with open(course_dir / "course_config.py", "a") as handle:
        handle.write(f"\nc.Execute.timeout = {limit}\n")
    path = tmp_path / "subs" / lab.submission_path("runaway")
    path.parent.mkdir(parents=True)
    nb = corpus.build({name: entry}, release_nb, solution_nb)[name]
    notebook.write(nb, path)
    done = lab.grade_command(tmp_path / "subs", course_dir, tmp_path / "out", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    expected = stock_golden[name].points
    (row,) = results.read_csv(tmp_path / "out" / "grades.csv")
    assert {test: float(row[test]) for test in expected} == expected
    (answer,) = entry.loses
    first = f"test_{answer}"
    assert row["status"] == "timeout" and first in done.stdout
    # One timeout paid, where stock pays one in every cell that reaches the loop: the
    # run names the one cell that ran out of time at the course's limit...
    saved = Store(tmp_path / "out").load("runaway")["row"]
    assert saved["detail"] == f"ran longer than {limit} s and was interrupted: {first}"
    # ...and every later cell that reached the loop was refused at once, not waited on.
    lost = [t for t, points in stock_golden[name].points.items() if t != first and not points]
    earlier = f"{answer} ran past the {limit} s limit in an earlier test"
    assert lost and all(earlier in saved["messages"][t] for t in lost), saved["messages"]
