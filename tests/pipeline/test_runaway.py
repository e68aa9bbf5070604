"""Does a function that never returns cost one timeout, and every cell the points stock gives?

Stock nbgrader runs into the time limit in every cell that calls the loop and
goes on; ours stops calling it after the first. Both run here with a 2 s cell
limit (set in a scratch copy of the course), and their points must agree cell
by cell. The loop is in ``concat_heads``, which ``multi_head`` calls: ten test
cells reach it (a loop in ``attention_weights``, reached by twenty, grades the
same way in the hostile class, but costs stock nearly a minute here).
"""

import time
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from autograder.pipeline import report
from autograder.pipeline.course import find_assignment
from autograder.tools import stock
from autograder.tools.nbgrader_cli import scratch_course

from .. import hostile, lab

pytestmark = pytest.mark.slow


def test_runaway_scores_as_stock(tmp_path, release_nb, solution_nb):
    """Are a runaway student's per-cell points stock's, with only one timeout paid?"""
    course_dir = scratch_course(lab.ROOT, tmp_path / "course", release=True)
    with open(course_dir / "course_config.py", "a") as handle:
        handle.write("\nc.Execute.timeout = 2\n")
    data = hostile.CASES["runaway_glue"].build(release_nb, solution_nb, {})
    path = tmp_path / "subs" / lab.submission_path("runaway")
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    assignment = find_assignment(course_dir)
    with ThreadPoolExecutor(1) as pool:  # stock grades in its own scratch courses meanwhile
        stocks = pool.submit(stock.autograde, {"runaway": nbformat.reads(data, 4)}, 1, assignment)
        started = time.monotonic()
        done = lab.grade_command(tmp_path / "subs", course_dir, tmp_path / "out", "--jobs", "1")
        seconds = time.monotonic() - started
        expected = stocks.result()["runaway"].points
    assert done.returncode == 0, done.stderr
    (row,) = report.read_csv(tmp_path / "out" / "grades.csv")
    assert {test: float(row[test]) for test in expected} == expected
    assert row["status"] == "timeout" and "test_concat_heads" in done.stdout
    assert seconds < 30  # one 2 s timeout (and its grace), not one per cell that calls it
