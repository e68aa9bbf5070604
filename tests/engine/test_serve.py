"""Does ``python -m autograder serve`` grade each hand-in as it arrives, and give its page back?

The toy course is released through nbgrader's exchange; students fetch, fill in
and hand in with nbgrader's own commands (``nbgrader submit --student``, as a
shared account would); the service runs as the instructor starts it, in the
course folder, and each student fetches their page with ``nbgrader
fetch_feedback``. Along the way: attempts beyond the course's limit, hidden
tests' messages held back until the due date, a notebook that cannot be read
and a second file, the service killed outright right after a hand-in, a second
service refused, and a TA's commands taking their turn beside it. What the
gradebook holds is then what ``grade`` gives for the same files.

Real Linux users, and the hub in a browser, are tests/lab/test_exchange.py's
and tests/lab/test_hub.py's.
"""

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline import results
from autograder.pipeline.course import notebook, turns
from autograder.pipeline.course.assignment import find_assignment, tool_environment
from autograder.serve.service import state_folder

from . import toy
from .command_line import Ran, run_command_line, run_nbgrader

pytestmark = pytest.mark.slow

ID, COURSE_ID = "toy-1", "toy"
WAIT = 300  #: seconds at most for a page: a guard against a hang, never a measure
WRONG_HIDDEN = dict(toy.SOLVED, double="def double(v):\n    return abs(2 * v)")  # fails -3
STUDENTS = ("ada", "ben", "cal", "dan", "eve")  #: the course's students, in its gradebook


class Class:
    """The students' side of a course on nbgrader's exchange: each in a home of their own."""

    def __init__(self, course: Path, exchange: Path, homes: Path) -> None:
        self.course, self.exchange, self.homes = course, exchange, homes
        self.release = notebook.read(course / "release" / ID / "toy.ipynb")

    def nbgrader(self, student: str, *args: str) -> Ran:
        """``nbgrader ARGS`` as ``student`` types it in their home."""
        home = self.homes / student
        home.mkdir(parents=True, exist_ok=True)
        env = {**tool_environment(), "HOME": str(home)}
        done = run_nbgrader(
            [*args, ID, f"--course={COURSE_ID}", f"--student={student}",
             f"--Exchange.root={self.exchange}"],
            timeout=120, cwd=home, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    def hand_in(self, student: str, answers: dict[str, str] | None, text: str | None = None,
                extra: dict[str, str] | None = None) -> None:  # fmt: skip
        """Fetch (the first time), fill in (``answers``, or the file's ``text``), submit."""
        work = self.homes / student / ID
        if not work.exists():
            self.nbgrader(student, "fetch_assignment")
        if text is None:
            text = nbformat.writes(notebook.fill(self.release, answers or {}))
        (work / "toy.ipynb").write_text(text)
        for name, data in (extra or {}).items():
            (work / name).write_text(data)
        self.nbgrader(student, "submit")

    def pages(self, student: str) -> list[str]:
        """Every page ``nbgrader fetch_feedback`` brings the student, oldest hand-in first."""
        self.nbgrader(student, "fetch_feedback")
        folder = self.homes / student / ID / "feedback"
        found = sorted(folder.glob("*/toy.html")) if folder.is_dir() else []
        return [p.read_text() for p in found]


def _journal(course: Path) -> list[dict]:
    path = state_folder(find_assignment(course)) / "journal.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("select * from hand_ins order by handed_in")]


def _done(course: Path, student: str, hand_ins: int) -> bool:
    """Has the service done with ``hand_ins`` of the student's hand-ins (a page out for each)?"""
    mine = [e for e in _journal(course) if e["student"] == student]
    return len(mine) >= hand_ins and all(e["state"] != "waiting" and e["released"] for e in mine)


def _wait(what, service: subprocess.Popen, log: Path, seconds: float = WAIT) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert service.poll() is None, f"the service stopped:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not done in {seconds} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)


def _start(course: Path, log: Path) -> subprocess.Popen:
    """The service, as the instructor starts it in the course folder."""
    started = log.read_text().count("serving ") if log.exists() else 0
    with log.open("a") as out:
        service = subprocess.Popen(
            [sys.executable, "-m", "autograder", "serve", "--jobs", "2"],
            cwd=course, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    _wait(lambda: log.read_text().count("serving ") > started, service, log)
    return service


def _stop(service: subprocess.Popen, how: int = signal.SIGTERM) -> int:
    os.killpg(service.pid, how)
    return service.wait(timeout=60)


def _due(course: Path, when: datetime) -> None:
    done = run_nbgrader(
        ["db", "assignment", "add", ID, f"--duedate={when:%Y-%m-%d %H:%M:%S} UTC"],
        timeout=120, cwd=course, env=tool_environment(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _score(page: str) -> str:
    return page.split("Score: <b>", 1)[1].split("</b>", 1)[0]


@pytest.fixture
def served(lesson_course, tmp_path):
    """``(course, class)``: the toy course released through an exchange of its own, with two
    graded attempts each, a due date an hour away, and the service running."""
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    with open(lesson_course / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.Exchange.root = {str(exchange)!r}\nc.Serve.attempts = 2\n")
    released = run_nbgrader(
        ["release_assignment", ID], timeout=120, cwd=lesson_course, env=tool_environment()
    )
    assert released.returncode == 0, released.stderr
    _due(lesson_course, datetime.now(UTC) + timedelta(hours=1))
    roster = tmp_path / "roster.csv"  # the class, as an instructor enrols it
    roster.write_text("id\n" + "".join(f"{s}\n" for s in STUDENTS))
    enrolled = run_nbgrader(["db", "student", "import", str(roster)], timeout=120,
                            cwd=lesson_course, env=tool_environment())  # fmt: skip
    assert enrolled.returncode == 0, enrolled.stderr
    return lesson_course, Class(lesson_course, exchange, tmp_path / "homes")


def test_each_hand_in_is_graded_on_arrival_and_its_page_comes_back(served, tmp_path):
    course, students = served
    log = tmp_path / "serve.log"
    service = _start(course, log)
    try:
        # a second service on the same course: one line, exit status 2
        second = run_command_line(["serve"], timeout=120, cwd=course)
        assert second.returncode == 2, second.stderr
        (line,) = second.stderr.strip().splitlines()
        assert "already grades the course" in line

        students.hand_in("ada", toy.SOLVED)
        students.hand_in("ben", WRONG_HIDDEN)
        cut = nbformat.writes(notebook.fill(students.release, toy.SOLVED))[:200]
        students.hand_in("cal", None, text=cut, extra={"toy-Copy1.ipynb": "{}"})
        for student in ("ada", "ben", "cal"):
            _wait(lambda s=student: _done(course, s, 1), service, log)

        (ada,) = students.pages("ada")
        assert _score(ada) == "5.0 / 7.0" and "feedback for ada" in ada
        assert "attempt 1" in ada and "you have 1 left" in ada
        (ben,) = students.pages("ben")
        assert _score(ben) == "3.0 / 7.0"  # the hidden test's points are lost ...
        assert "its message is shown after the due date" in ben  # ... what it said waits
        assert "double(-3)" not in ben and "BEGIN HIDDEN" not in ben
        (cal,) = students.pages("cal")
        assert "Grading note (unreadable)" in cal and "toy-Copy1.ipynb" in cal
        # an id the course does not know gets no place in the queue and no row
        students.hand_in("zoe", toy.SOLVED)
        _wait(lambda: "passed over zoe+" in log.read_text(), service, log)
        assert not any(e["student"] == "zoe" for e in _journal(course))

        # ben again, right: a new page, and the gradebook holds the last
        students.hand_in("ben", toy.SOLVED)
        _wait(lambda: _done(course, "ben", 2), service, log)
        first, second_page = students.pages("ben")
        assert first == ben and _score(second_page) == "5.0 / 7.0" and "attempt 2" in second_page
        # a third: beyond the two attempts, kept and not graded early; the grade stays
        students.hand_in("ben", WRONG_HIDDEN)
        _wait(lambda: _done(course, "ben", 3), service, log)
        kept = students.pages("ben")[2]
        assert "is kept, but not graded now" in kept and "Score" not in kept
        rows = {r["student_id"]: r for r in results.read_csv(course / "grades" / "grades.csv")}
        assert float(rows["ben"]["score"]) == 5.0

        # The TA's turn on the course: a hand-in meanwhile is recorded once the TA is done
        with turns.turn(course, "a TA's long command"):
            students.hand_in("dan", toy.SOLVED)
            _wait(lambda: "waiting for `a TA's long command`" in log.read_text(), service, log)
            assert not _done(course, "dan", 1)
        _wait(lambda: _done(course, "dan", 1), service, log)
        extended = run_command_line(["extend", "dan", "--days", "1"], timeout=300, cwd=course)
        assert extended.returncode == 0, extended.stderr
        # the TA removes cal: his next hand-in is not graded, and he is told
        removed = run_command_line(["remove", "cal"], timeout=300, cwd=course)
        assert removed.returncode == 0, removed.stderr
        students.hand_in("cal", toy.SOLVED)
        _wait(lambda: _done(course, "cal", 2), service, log)
        assert "you were taken out of toy-1" in students.pages("cal")[1]

        # killed outright right after a hand-in: the next start loses nothing, counts it once
        students.hand_in("eve", toy.SOLVED)
        _stop(service, signal.SIGKILL)
        service = _start(course, log)
        _wait(lambda: _done(course, "eve", 1), service, log)
        (eve,) = students.pages("eve")
        assert _score(eve) == "5.0 / 7.0"
        eves = [e for e in _journal(course) if e["student"] == "eve"]
        assert [(e["state"], e["attempt"]) for e in eves] == [("graded", 1)]

        # the due date passes: early pages again in full, the kept hand-in graded now
        _due(course, datetime.now(UTC) - timedelta(minutes=1))
        _wait(lambda: _done(course, "ben", 3) and _journal_state(course, "ben")[-1] == "graded",
              service, log)  # fmt: skip
        first, second_page, third = students.pages("ben")
        assert "its message is shown after the due date" not in first
        assert "AssertionError" in first  # the hidden test's own message, now
        assert "attempt 3" in third and _score(third) == "3.0 / 7.0"
    finally:
        status = _stop(service)
    assert status == 0, log.read_text()[-3000:]
    assert "stopped" in log.read_text()

    # The gradebook holds what `grade` gives for the same files (ben: his last, on time)
    rows = {r["student_id"]: r for r in results.read_csv(course / "grades" / "grades.csv")}
    batch = run_command_line(["grade", "submitted", "--dry-run", "--out", str(tmp_path / "b")],
                             timeout=600, cwd=course)  # fmt: skip
    assert batch.returncode == 0, batch.stderr
    again = {r["student_id"]: r for r in results.read_csv(tmp_path / "b" / "grades.csv")}
    assert again == rows, batch.stderr
    assert "cal" not in rows  # removed, and not brought back by his hand-in
    status = run_command_line(["status"], timeout=300, cwd=course)  # every output agrees
    assert status.returncode == 1 and "differs" not in status.stdout, status.stdout
    assert "a written answer awaits a TA" in status.stdout  # not final: a TA grades it
    assert rows["ben"]["score"] == "3"  # the kept hand-in, graded after the due date, is last
    ledger = json.loads((course / ".autograder" / ID / "eve.json").read_text())
    assert ledger["row"]["student_id"] == "eve"
    report = (course / "grades" / "report.html").read_text()
    assert "attempts per student" in report
    # the TA's batch run afterwards: nothing to grade again, the same rows, the attempts kept
    batch = run_command_line(["grade", "submitted"], timeout=600, cwd=course)
    assert batch.returncode == 0, batch.stderr
    assert "0 to grade" in batch.stderr, batch.stderr
    after = {r["student_id"]: r for r in results.read_csv(course / "grades" / "grades.csv")}
    assert after == rows
    assert "attempts per student" in (course / "grades" / "report.html").read_text()
    shutil.rmtree(tmp_path / "homes")


def _journal_state(course: Path, student: str) -> list[str]:
    return [e["state"] for e in _journal(course) if e["student"] == student]


def test_a_mistake_in_starting_it_is_one_line(lesson_course, tmp_path):
    """A limit that is not positive, a course without an id: one line, exit status 2."""
    for argv, said in (
        (["serve", "--jobs", "0"], "--jobs must be positive"),
        (["serve", "--wall", "-1"], "--wall must be positive"),
    ):
        done = run_command_line(argv, timeout=120, cwd=lesson_course)
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    config = lesson_course / "nbgrader_config.py"
    config.write_text(config.read_text().replace('c.CourseDirectory.course_id = "toy"', ""))
    done = run_command_line(["serve"], timeout=120, cwd=lesson_course)
    assert done.returncode == 2 and "c.CourseDirectory.course_id" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def test_a_worker_killed_from_outside_loses_no_hand_in(served, tmp_path):
    """The service's workers killed while a hand-in waits or is graded: the workers start
    afresh, the hand-in is graded once, and the service goes on."""
    course, students = served
    log = tmp_path / "serve.log"
    service = _start(course, log)
    try:
        slow = dict(
            toy.SOLVED, count_words="import time\ntime.sleep(2)\n" + toy.SOLVED["count_words"]
        )
        students.hand_in("ada", slow)
        _wait(lambda: any(e["student"] == "ada" for e in _journal(course)), service, log)
        for worker in _children(service.pid):
            with contextlib.suppress(ProcessLookupError):  # the service, restarting, killed it
                os.kill(worker, signal.SIGKILL)
        _wait(lambda: _done(course, "ada", 1), service, log)
        students.hand_in("ben", toy.SOLVED)  # and the next student is graded as ever
        _wait(lambda: _done(course, "ben", 1), service, log)
    finally:
        assert _stop(service) == 0, log.read_text()[-3000:]
    assert "a worker died; starting the workers afresh" in log.read_text()
    (ada,) = students.pages("ada")
    assert _score(ada) == "5.0 / 7.0" and "attempt 1" in ada
    assert [e["attempt"] for e in _journal(course) if e["student"] == "ada"] == [1]
