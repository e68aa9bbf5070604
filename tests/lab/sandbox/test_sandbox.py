"""Does nothing a student of this lab does in the sandbox outlive that student?

The sandbox cases of tests/lab/hostile.py are graded with one worker, in order, so
the honest student after the planter runs in the very process tree the planter
left. The sandbox started directly, on no course: tests/engine/test_sandbox.py.
"""

import ast

import nbformat
import pytest

from autograder.pipeline import results
from autograder.sandbox import Limits

from .. import hostile, lab

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sandbox_class(tmp_path_factory, course_template, release_nb, solution_nb):
    """The sandbox cases graded in order by one worker, with a 512 MiB memory limit."""
    base = tmp_path_factory.mktemp("sandbox")
    course_dir = lab.copy_course(course_template, base / "course")
    context = {"course": course_dir, "out": base / "out", "submissions": base / "s", "port": 9}
    hostile.build_class(base / "s", release_nb, solution_nb, context, hostile.SANDBOX)
    done = lab.grade_command(base / "s", course_dir, base / "out", "--memory", "512", "--jobs", "1")
    rows = {row["student_id"]: row for row in results.read_csv(base / "out" / "grades.csv")}
    return {"done": done, "rows": rows, "course": course_dir}


def printed(sandbox_class, student_id, label):
    """What a student's cell printed after ``label``, read back as a Python value."""
    nb = nbformat.read(sandbox_class["course"] / "autograded" / lab.submission_path(student_id), 4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            if output.get("output_type") == "stream" and label in text:
                return ast.literal_eval(text.split(label, 1)[1].strip().splitlines()[0])
    raise AssertionError(f"{student_id} printed no {label!r}")


def test_the_next_student_finds_nothing(sandbox_class):
    """Does the student graded after the planter find no file and run no planted module?"""
    rows = sandbox_class["rows"]
    assert sandbox_class["done"].returncode == 0, sandbox_class["done"].stderr[-2000:]
    assert printed(sandbox_class, "sandbox_2_after_plant", "found:") == []
    after, honest = rows["sandbox_2_after_plant"], rows["honest"]
    assert (after["status"], after["score"]) == ("ok", honest["score"])


def test_student_code_has_no_capabilities(sandbox_class):
    """Does student code run with no capability, no_new_privs, a seccomp filter, not as root?"""
    status = printed(sandbox_class, "sandbox_3_capabilities", "status:")
    assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == "0" * 16
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"
    assert "0" not in status["Uid"].split()


def test_writes_are_bounded_by_the_scratch(sandbox_class):
    """Can a student write no more than its scratch size, whatever the memory limit says?"""
    written = printed(sandbox_class, "sandbox_4_disk_flood", "written:")
    assert written <= Limits.scratch_mb * 2**20


def pictures(sandbox_class, student_id):
    """The PNGs (base64) a student's graded notebook shows, in order."""
    nb = nbformat.read(sandbox_class["course"] / "autograded" / lab.submission_path(student_id), 4)
    return [
        output["data"]["image/png"]
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]


def test_figures_drawn_once_are_the_figures_a_student_draws(sandbox_class):
    """Are the lab's figures copied from the trusted run, byte for byte, whatever came before?

    "honest" is graded first, before the worker learns the figures, and draws
    them; the poisoner, after, replaced every entry and matplotlib's drawing in
    its own process; the student after it copies both figures, unchanged.
    """
    assert printed(sandbox_class, "sandbox_5_figure_poison", "known:") == 2
    assert printed(sandbox_class, "sandbox_6_after_figures", "reused:") == 2
    drawn = pictures(sandbox_class, "honest")
    assert len(drawn) == 2 and pictures(sandbox_class, "sandbox_6_after_figures") == drawn
    rows = sandbox_class["rows"]
    assert rows["sandbox_6_after_figures"]["score"] == rows["honest"]["score"]
