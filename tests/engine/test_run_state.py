"""What a run keeps: a rerun grades only what changed; an interrupted run keeps what it graded.

Each test grades honest, victim and loop_at_top (an endless loop in an answer
cell) in a fresh copy of the toy course, with the real command.
"""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from autograder.pipeline import results
from autograder.pipeline.course import notebook

from . import processes
from .command_line import interruptible, run_command_line

pytestmark = pytest.mark.slow

ID, NOTEBOOK = "toy-1", "toy.ipynb"  #: the toy course's assignment (tests/engine/conftest.py)


def grade(submissions, course_dir, out, *extra):
    """``python -m autograder grade`` on one worker, as a TA types it."""
    argv = ["grade", str(submissions), "--course", str(course_dir), "--out", str(out),
            "--jobs", "1", *extra]  # fmt: skip
    return run_command_line(argv, timeout=900)


@pytest.fixture
def three_students(tmp_path, lesson_solved):
    """A folder of submissions: honest and victim (both solved), and loop_at_top."""
    folder = tmp_path / "class"
    looping = notebook.fill(lesson_solved, {"count_words": "while True:\n    pass"})
    for student, nb in (
        ("honest", lesson_solved),
        ("victim", lesson_solved),
        ("loop_at_top", looping),
    ):
        notebook.write(nb, folder / student / ID / NOTEBOOK)
    return folder


def test_rerun_skips_unchanged_and_regrades_changed(lesson_course, three_students, tmp_path):
    """Does a second run regrade only what changed, and --force everything?"""
    subs = tmp_path / "subs"
    for student_id in ("honest", "victim"):
        shutil.copytree(three_students / student_id, subs / student_id)
    out = tmp_path / "out"
    first = grade(subs, lesson_course, out)
    assert first.returncode == 0 and "2 to grade" in first.stderr
    again = grade(subs, lesson_course, out)
    assert "0 to grade, 2 unchanged" in again.stderr
    assert (out / "grades.csv").read_text().count("\n") == 3
    changed = subs / "victim" / ID / NOTEBOOK
    changed.write_bytes(changed.read_bytes().replace(b"return 2 * v", b"return 3 * v"))
    third = grade(subs, lesson_course, out)
    assert "1 to grade, 1 unchanged" in third.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert float(rows["victim"]["score"]) < float(rows["honest"]["score"])
    forced = grade(subs, lesson_course, out, "--force")
    assert "2 to grade" in forced.stderr
    other_limits = grade(subs, lesson_course, out, "--timeout", "7")
    assert "2 to grade, 0 unchanged" in other_limits.stderr  # graded with other limits before


def _start_and_wait_for_first(course, students, tmp_path):
    """A run over honest, loop_at_top and victim, once honest is recorded: (process, subs, out)."""
    subs = tmp_path / "subs"
    for student_id in ("honest", "loop_at_top", "victim"):  # graded in this order with one job
        shutil.copytree(students / student_id, subs / student_id)
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "autograder", "grade", str(subs), "--course",
        str(course), "--out", str(out), "--jobs", "1", "--timeout", "6",
    ]  # fmt: skip
    running = interruptible(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finished = out / ".state" / "honest.json"
    deadline = time.monotonic() + 120
    while not finished.exists() and running.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert finished.exists(), "the first student was never recorded"
    time.sleep(1)  # into the looping student's six seconds
    assert processes.left_running(running.pid), "the run's sandboxes are not to be found"
    assert processes.with_argument(str(subs)), "the run's own processes are not to be found"
    return running, subs, out


def _no_grading_processes_left(subs, run_pid):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # neither its grader's processes nor its sandboxes
        if not processes.with_argument(str(subs)) and not processes.left_running(run_pid):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_interrupted_run_keeps_what_was_graded(lesson_course, three_students, tmp_path, how):
    """Does Ctrl-C (or SIGTERM) stop at once, keep finished students, leave the rest for a rerun?"""
    running, subs, out = _start_and_wait_for_first(lesson_course, three_students, tmp_path)
    if how == "ctrl-c":  # a terminal interrupts the whole foreground process group
        os.killpg(running.pid, signal.SIGINT)
    else:  # a scheduler or `timeout` signals the command only
        running.terminate()
    stopped_at = time.monotonic()
    _, stderr = running.communicate(timeout=60)
    assert time.monotonic() - stopped_at < 20
    assert running.returncode == 130, stderr
    assert "interrupted: 1 of 3 submission(s) graded and kept" in stderr
    assert sorted(p.name for p in (out / ".state").iterdir()) == ["honest.json"]
    assert _no_grading_processes_left(subs, running.pid)
    if how != "ctrl-c":
        return  # what a rerun does after either is the same: checked once
    again = grade(subs, lesson_course, out, "--timeout", "6")  # the same limits
    assert again.returncode == 0 and "2 to grade, 1 unchanged" in again.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert rows["loop_at_top"]["status"] == "timeout" and rows["victim"]["status"] == "ok"


def test_killed_grader_leaves_no_process_behind(lesson_course, three_students, tmp_path):
    """If the main process is killed outright, do its workers and sandboxes die with it?"""
    running, subs, out = _start_and_wait_for_first(lesson_course, three_students, tmp_path)
    running.kill()
    running.communicate(timeout=60)
    assert _no_grading_processes_left(subs, running.pid)
    assert sorted(p.name for p in (out / ".state").iterdir()) == ["honest.json"]
