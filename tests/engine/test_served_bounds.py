"""A student's calls into trusted code, and its replies, are bounded by the student's limits.

Graded as a TA grades, in the real sandbox, on a toy course whose test serves
two trusted functions to the student's code (as a lab serves its reference
answers): ``outer``, whose answer grows with the product of its arguments'
sizes, and ``count``, a Python loop as long as its argument. One student
dribbles a reply to the grader a byte at a time; one asks ``outer`` for 720 MB
from half a megabyte of arguments; one asks ``count`` for minutes of work.
Each must cost the grader no more than the cell's deadline and a served
call's memory, and end as its own test's ``timeout`` or a refusal it is told
of, while an honest student keeps every point.
"""

import re
import shutil

import pytest

from autograder.pipeline import results

from . import toy
from .command_line import run_command_line

pytestmark = pytest.mark.slow

ID = "served-1"
TEST = """
import contextlib

def outer(a, b):
    import numpy as np
    return np.outer(a, b)

def count(n):
    total = 0
    for _ in range(n):
        total += 1
    return total

serving = getattr(globals(), "serving", None)
with serving({"outer": outer, "count": count}) if serving else contextlib.nullcontext():
    assert double(2) == 4
"""
CELLS = [
    toy.cell(
        "def double(v):\n    ### BEGIN SOLUTION\n    return 2 * v\n    ### END SOLUTION",
        "double",
        "answer",
    ),
    toy.cell(TEST, "test_double", "test", 1),
    toy.cell("assert double(3) == 6", "test_double_again", "test", 1),
]
DRIP = """
def double(v):
    import os, stat, time
    sockets = [fd for fd in range(3, 256) if _socket(fd)]
    for fd in sockets:
        os.write(fd, (1000).to_bytes(8, "big"))  # a frame of 1,000 bytes, sent one a time
    for _ in range(1000):
        for fd in sockets:
            try:
                os.write(fd, b" ")
            except OSError:
                pass
        time.sleep(0.1)
    return 2 * v

def _socket(fd):
    import os, stat
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False
"""
STUDENTS = {
    "honest": "def double(v):\n    return 2 * v",
    "drip": DRIP,
    "hog": "def double(v):\n    import numpy as np\n    if v == 2:  # while outer is served\n"
    "        outer(np.ones(1500), np.ones(60000))\n    return 2 * v",
    "slow": "def double(v):\n    if v == 2:\n        count(10**10)\n    return 2 * v",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The four students graded with a 4 s cell limit: ``(rows, the run, the out folder)``."""
    base = tmp_path_factory.mktemp("served")
    course = toy.write_course(base / "course", ID, {"toy.ipynb": CELLS})
    unreleased = run_command_line(["grade", str(base), "--course", str(course)], timeout=60)
    assert unreleased.returncode == 2 and "run `python -m autograder generate` first" in (
        unreleased.stderr
    )
    assert run_command_line(["generate", "--course", str(course)], timeout=300).returncode == 0
    subs = base / "subs"
    for student, source in STUDENTS.items():
        cells = [toy.cell(source, "double", "answer"), *CELLS[1:]]
        toy.write_notebook(cells, subs / student / ID / "toy.ipynb")
    out = base / "out"
    done = run_command_line(
        ["grade", str(subs), "--course", str(course), "--out", str(out), "--jobs", "1",
         "--timeout", "4", "--wall", "60"],
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    yield rows, done, out
    shutil.rmtree(base, ignore_errors=True)


def test_an_honest_student_keeps_every_point(graded):
    rows, _, _ = graded
    assert (rows["honest"]["status"], rows["honest"]["score"]) == ("ok", "2")


def test_a_reply_sent_a_byte_at_a_time_ends_at_the_cell_deadline(graded):
    """Held past its deadline a byte at a time: a timeout for that test, not 100 s of the
    grader's time nor a reply it waited for."""
    rows, _, _ = graded
    assert rows["drip"]["status"] == "timeout", rows["drip"]
    assert rows["drip"]["test_double"] == "0"


def test_a_call_asking_the_grader_for_too_much_memory_is_refused(graded):
    """720 MB asked of ``outer``: refused and told to the student; the worker stays small."""
    rows, done, out = graded
    assert (rows["hog"]["status"], rows["hog"]["test_double"]) == ("ok", "0"), rows["hog"]
    assert rows["hog"]["test_double_again"] == "1"  # a refusal is no crash of the process
    page = (out / "feedback" / "hog.html").read_text()
    assert "would not answer this call of outer" in page
    worker = int(re.search(r"largest worker (\d+) MiB", done.stdout).group(1))
    assert worker < 400, done.stdout[-500:]


def test_a_call_asking_the_grader_for_minutes_of_work_ends_at_the_cell_deadline(graded):
    """A served loop of 10**10 steps: interrupted at the cell's deadline, a timeout there, as
    if the student's own code had looped (the function is then not called again)."""
    rows, _, _ = graded
    assert rows["slow"]["status"] == "timeout", rows["slow"]
    assert rows["slow"]["test_double"] == "0"
