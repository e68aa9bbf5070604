"""Does a function that never returns cost one timeout, and every cell the points stock gives?

Stock nbgrader runs into the time limit in every cell that calls the loop and
goes on; ours stops calling it after the first. The loop is in ``concat_heads``,
which ``multi_head`` calls: ten test cells reach it. Stock's points for this
notebook, graded with the same cell limit, are in the golden file
(tests/golden.py); ours are graded here with the limit set where a TA sets it,
in ``course_config.py``, and no ``--timeout``.
"""

import pytest

from autograder.pipeline import results
from autograder.pipeline.results import Store
from autograder.tools.nbgrader_cli import scratch_course

from .. import hostile, lab
from ..golden import RUNAWAY_KEY, RUNAWAY_TIMEOUT

pytestmark = pytest.mark.slow


def test_runaway_scores_as_stock(tmp_path, release_nb, solution_nb, stock_golden):
    """Are a runaway student's per-cell points stock's, with only one timeout paid?"""
    course_dir = scratch_course(lab.ROOT, tmp_path / "course", release=True)
    with open(course_dir / "course_config.py", "a") as handle:
        handle.write(f"\nc.Execute.timeout = {RUNAWAY_TIMEOUT}\n")
    path = tmp_path / "subs" / lab.submission_path("runaway")
    path.parent.mkdir(parents=True)
    path.write_bytes(hostile.CASES["runaway_glue"].build(release_nb, solution_nb, {}))
    done = lab.grade_command(tmp_path / "subs", course_dir, tmp_path / "out", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    expected = stock_golden[RUNAWAY_KEY].points
    (row,) = results.read_csv(tmp_path / "out" / "grades.csv")
    assert {test: float(row[test]) for test in expected} == expected
    assert row["status"] == "timeout" and "test_concat_heads" in done.stdout
    # One timeout paid, where stock pays one in every cell that reaches the loop: the
    # run names the one cell that ran out of time at the course's limit...
    detail = Store(tmp_path / "out").load("runaway")["row"]["detail"]
    assert detail == f"ran longer than {RUNAWAY_TIMEOUT} s and was interrupted: test_concat_heads"
    # ...and every later cell that reached the loop was refused at once, not waited on.
    refused = [t for t, m in stock_golden[RUNAWAY_KEY].messages.items() if t != "test_concat_heads"]
    ours = Store(tmp_path / "out").load("runaway")["row"]["messages"]
    earlier = f"concat_heads ran past the {RUNAWAY_TIMEOUT} s limit in an earlier test"
    assert refused and all(earlier in ours[t] for t in refused), ours
