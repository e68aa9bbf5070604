"""Does a student's process killed from outside the grader never become that student's grade?

The host's out-of-memory killer, an operator or another grader's clean-up can
kill a sandboxed process. The grader tells such a death from one the student
caused, grades the notebook again at once, and where it still cannot, writes
``grader_error``: graded again on the next run, never a score.
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder.pipeline import results
from autograder.pipeline.course import notebook
from autograder.sandbox.launcher import ZYGOTE

from . import toy
from .command_line import run_command_line

pytestmark = pytest.mark.slow


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid")))
        if pid == ancestor:
            return True
    return False


def sandboxed_of(run_pid: int) -> tuple[list[int], list[int]]:
    """``(students, sandbox)``: a grading run's student processes, and those that hold them.

    Students are pid 1 of their own namespace; the sandbox is bubblewrap, the
    zygote and each student's watcher. Both are only ever killed from outside.
    """
    students, sandbox = [], []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
            status = (entry / "status").read_text()
        except (OSError, ValueError):
            continue
        if ZYGOTE.encode() not in command or not _descends_from(int(entry.name), run_pid):
            continue
        nspid = next(line.split()[1:] for line in status.splitlines() if line.startswith("NSpid"))
        student = nspid[-1] == "1" and not command.startswith(b"bwrap")
        (students if student else sandbox).append(int(entry.name))
    return sorted(students), sorted(sandbox)


class Killer(threading.Thread):
    """Kills a run's processes from outside, ``times`` times, ``every`` seconds apart.

    Every third kill takes part of the sandbox (bubblewrap, the zygote, a watcher),
    the others the newest student process.
    """

    def __init__(self, run_pid: int, times: int, every: float) -> None:
        super().__init__(daemon=True)
        self.run_pid, self.times, self.every = run_pid, times, every
        self.killed: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        while len(self.killed) < self.times and not self.done.is_set():
            students, sandbox = sandboxed_of(self.run_pid)
            targets = sandbox if len(self.killed) % 3 == 2 else students
            fresh = [p for p in targets if p not in self.killed]
            if not fresh:
                time.sleep(0.02)
                continue
            try:  # as the host's out-of-memory killer or an operator would
                os.kill(fresh[-1], signal.SIGKILL)
                self.killed.append(fresh[-1])
            except ProcessLookupError:
                pass
            time.sleep(self.every)


def _rows(out: Path) -> dict[str, dict]:
    """``{student: row}`` of a run's CSV, the id left out of the row (runs name them apart)."""
    rows = results.read_csv(out / "grades.csv")
    return {row.pop("student_id"): row for row in rows}


SLOW = "import time\n\ntime.sleep(0.5)  # long enough to be killed in\n"

#: the class: {student: answers}, each slow enough for several kills in a run
CLASS = {
    f"s{number}": {
        **toy.SOLVED,
        "double": SLOW + ("def double(v):\n    return 2 * v" if number % 3 else "double = abs"),
        **({"count_words": "def count_words(text):\n    return 0"} if number % 4 == 1 else {}),
    }
    for number in range(8)
}


def _grade(subs: Path, course_dir: Path, out: Path):
    argv = ["grade", str(subs), "--course", str(course_dir), "--out", str(out), "--jobs", "2"]
    return run_command_line(argv, timeout=600)


@pytest.fixture(scope="module")
def toy_class(lesson_release, tmp_path_factory) -> Path:
    """The class's submissions, as nbgrader's layout keeps them."""
    subs = tmp_path_factory.mktemp("outside") / "subs"
    for student, answers in CLASS.items():
        notebook.write(
            notebook.fill(lesson_release, answers), subs / student / "toy-1" / "toy.ipynb"
        )
    return subs


@pytest.fixture(scope="module")
def undisturbed(toy_class, lesson_template, tmp_path_factory):
    """The class's rows, graded with nothing in the way."""
    base = tmp_path_factory.mktemp("undisturbed")
    course = shutil.copytree(lesson_template, base / "course")
    done = _grade(toy_class, course, base / "out")
    assert done.returncode == 0, done.stderr
    rows = _rows(base / "out")
    assert {row["status"] for row in rows.values()} == {"ok"} and len(rows) == len(CLASS)
    assert len({row["score"] for row in rows.values()}) == 3  # right, one wrong, both wrong
    return rows


def _start(subs: Path, course_dir: Path, out: Path) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "autograder", "grade", str(subs),
        "--course", str(course_dir), "--out", str(out), "--jobs", "2",
    ]  # fmt: skip
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def test_outside_kills_never_become_grades(undisturbed, toy_class, lesson_template, tmp_path):
    """Killed from outside at several moments, then rerun once: every grade as undisturbed?"""
    busy, out = shutil.copytree(lesson_template, tmp_path / "busy"), tmp_path / "out"
    grader = _start(toy_class, busy, out)
    killer = Killer(grader.pid, times=8, every=0.3)
    killer.start()
    _, stderr = grader.communicate(timeout=600)
    killer.done.set()
    killer.join()
    assert grader.returncode == 0, stderr
    assert len(killer.killed) >= 3, "the run ended before the kills: nothing was tested"
    disturbed = _rows(out)
    for student, row in disturbed.items():
        assert row["status"] in ("ok", "grader_error"), (student, row)
        if row["status"] == "ok":
            assert row == undisturbed[student], student

    again = _grade(toy_class, busy, out)
    assert again.returncode == 0, again.stderr
    assert _rows(out) == undisturbed


def test_a_grader_killed_outright_changes_nothing_after_a_rerun(
    undisturbed, toy_class, lesson_template, tmp_path
):
    """kill -9 of the whole grader mid-run, its students with it: one rerun, as undisturbed?"""
    busy, out = shutil.copytree(lesson_template, tmp_path / "busy"), tmp_path / "out"
    grader = _start(toy_class, busy, out)
    deadline = time.monotonic() + 300
    # A page is written as each student arrives; the gradebook commits them in batches.
    while not list((out / "feedback").glob("*.html")) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(grader.pid, signal.SIGKILL)  # main process and workers at once
    grader.communicate(timeout=60)
    assert not (out / "grades.csv").exists(), "the run ended before the kill: nothing was tested"
    left = out / ".scratch"  # the killed run's copy of the gradebook, with nothing to remove it
    assert (left / "gradebook.db").is_file()
    again = _grade(toy_class, busy, out)
    assert again.returncode == 0, again.stderr
    assert _rows(out) == undisturbed
    assert not left.exists(), "the rerun kept the killed run's scratch folder"
