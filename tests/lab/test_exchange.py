"""Does a class of real Linux users go through nbgrader's exchange and back?

What a course on a shared machine or a JupyterHub does, from the command line:
as root, the test creates two students (Linux users), a shared exchange folder
with the modes nbgrader documents (``mkdir``, then ``chmod ugo+rw``) and a
course owned by the instructor (root, readable by nobody else). The instructor
releases the lab; each student fetches it as themselves, fills it in, runs
``self_check.py`` and submits (one of them twice); the instructor collects,
grades what was collected with ``python -m autograder grade submitted``, and
releases the course's own feedback pages with nbgrader's ``release_feedback``;
each student fetches their own page. The due date falls between the two
students' submissions: the late one loses the points the course's rule takes,
in the CSV, the pages and the gradebook alike. Along the way, a student tries to read
the other's submission and the instructor's course.

Not covered here: the same steps in a browser, through JupyterHub's
*Assignments* tab.
"""

import json
import os
import pwd
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline import results
from autograder.pipeline.course.assignment import tool_environment
from autograder.tools import corpus

from ..engine.command_line import run_command_line
from . import lab

pytestmark = [pytest.mark.slow, pytest.mark.users]

STUDENTS = {"nbx-ada": "correct/loops", "nbx-ben": "mistakes/concat_axis0"}  # user: answers
UNREADABLE = "nbx-zed"  # hands in a notebook cut short: no grade, but a page all the same
USERS = (*STUDENTS, UNREADABLE)
COURSE_ID = "tiny-gpt-08"  # course_config.py


def _as(user: str, *command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``command`` as ``user``, from their home, with a clean environment."""
    home = Path(pwd.getpwnam(user).pw_dir)
    env = {
        "HOME": str(home),
        "USER": user,
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
         *command],
        cwd=cwd or home, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _nbgrader(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a stock nbgrader command as the instructor, in the course."""
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=cwd, capture_output=True, text=True, env=tool_environment(), timeout=300,
    )  # fmt: skip


@pytest.fixture
def shared_machine(new_course, tmp_path):
    """``(course folder, exchange root)`` with the two students created; all removed after.

    The course is the instructor's (700); no folder of the instructor's is
    opened to students, and the test checks that none was.
    """
    assert os.geteuid() == 0, "this test creates Linux users: run the suite as root"
    instructors = {p: p.stat().st_mode for p in (Path.home(), Path(sys.base_prefix), lab.ROOT)}
    exchange = Path(tempfile.mkdtemp(prefix="nbx-exchange-"))  # in /tmp: everyone reaches it
    exchange.chmod(0o777)  # nbgrader's docs: `chmod ugo+rw` the exchange root
    new_course.chmod(0o700)  # the instructor's: no student may read it
    for user in USERS:  # a run killed halfway may have left them, and their processes
        subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
        subprocess.run(["userdel", "--remove", user], capture_output=True)
        # a home whose user is gone (another uid's files) would stay unwritable to the new one
        shutil.rmtree(Path("/home") / user, ignore_errors=True)
        made = subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", user])
        assert made.returncode == 0, f"useradd {user} failed"
    try:
        yield new_course, exchange
    finally:
        for user in USERS:
            subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
            subprocess.run(["userdel", "--remove", user], capture_output=True)
        shutil.rmtree(exchange, ignore_errors=True)
    assert {p: p.stat().st_mode for p in instructors} == instructors
    assert stat.S_IMODE(new_course.stat().st_mode) == 0o700


def _answers(name: str, release_nb, solution_nb) -> str:
    entries = corpus.load_corpus(lab.ROOT / lab.CORPUS)
    return nbformat.writes(corpus.build({name: entries[name]}, release_nb, solution_nb)[name])


def _fill_in(user: str, text: str) -> None:
    """Write the student's notebook as the student (as Jupyter would save it)."""
    home = Path(pwd.getpwnam(user).pw_dir)
    staged = home / ".answers.ipynb"
    staged.write_text(text)
    shutil.chown(staged, user, user)
    target = home / lab.ASSIGNMENT.id / lab.NOTEBOOK
    done = _as(user, "cp", str(staged), str(target))
    assert done.returncode == 0, done.stderr


def _grade_and_release(
    course_dir: Path, at: str, due: datetime, unreadable: bool = False
) -> dict[str, dict[str, str]]:
    """The instructor's part, after both students submitted: the rows of ``grades.csv``.

    Sets ``due`` as the due date (it falls between the two students: ben is late)
    with a rule that takes late work off, collects the newest submissions, grades
    them with the batch grader, checks the grades, then releases the course's own
    feedback pages (the ones in ``grades/feedback/``) with nbgrader's release_feedback.
    unreadable: zed handed in too, a notebook that cannot be read.
    """
    lab_id = lab.ASSIGNMENT.id
    with open(course_dir / "course_config.py", "a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    dated = _nbgrader("db", "assignment", "add", lab_id,
                      f"--duedate={due:%Y-%m-%d %H:%M:%S.%f} UTC", cwd=course_dir)  # fmt: skip
    assert dated.returncode == 0, dated.stderr
    collected = _nbgrader("collect", lab_id, "--update", at, cwd=course_dir)
    assert collected.returncode == 0, collected.stderr
    out = course_dir / "grades"
    graded = lab.grade_command(course_dir / "submitted", course_dir, out)
    assert graded.returncode == 0, graded.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert set(rows) == set(USERS if unreadable else STUDENTS)
    if unreadable:  # zed handed in a notebook cut short
        assert rows[UNREADABLE]["status"] == "unreadable" and float(rows[UNREADABLE]["score"]) == 0
    ada, ben = rows["nbx-ada"], rows["nbx-ben"]
    assert float(ada["score"]) == lab.AUTOGRADED and float(ada["late_penalty"]) == 0, ada
    raw = float(ben["raw_score"])
    assert 0 < raw < lab.AUTOGRADED  # the newer submission, wrong axis: not the blank one
    assert ben["test_concat_heads"] == "0" and ben["test_blend"] == "1"
    assert float(ben["late_penalty"]) == raw and float(ben["score"]) == 0  # late: "zero"
    page = (out / "feedback" / "nbx-ben.html").read_text()
    assert f"late submission penalty of {raw}" in page
    released = _nbgrader("release_feedback", lab_id, at, cwd=course_dir)
    assert released.returncode == 0, f"release_feedback: {released.stderr[-2000:]}"
    return rows


def _check_own_feedback(user: str, rows: dict[str, dict[str, str]]) -> None:
    """Is the one feedback page ``user`` fetched their own (their score, not the other's)?"""
    home = Path(pwd.getpwnam(user).pw_dir)
    pages = list((home / lab.ASSIGNMENT.id / "feedback").rglob("*.html"))
    assert len(pages) == 1, pages  # the page of the submission graded, only
    text = pages[0].read_text()
    assert 'class="grade-summary' in text  # the course's page, with its per-answer summary
    mine, other = (float(rows[u]["score"]) for u in (user, *set(STUDENTS) - {user}))
    top = float(rows[user]["max_score"])
    assert f"Score: <b>{mine} / {top}</b>" in text and f"Score: <b>{other} / {top}" not in text
    assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text


def test_a_class_goes_through_the_exchange_and_back(
    shared_machine, users_env, release_nb, solution_nb
):
    """Release, fetch, self-check, submit (twice), collect, grade, feedback: each their own?"""
    course_dir, exchange = shared_machine
    python = str(users_env / "bin" / "python")
    at = f"--Exchange.root={exchange}"
    lab_id = lab.ASSIGNMENT.id
    done = _nbgrader("release_assignment", lab_id, at, cwd=course_dir)
    assert done.returncode == 0, done.stderr

    due = None
    for user, answers in STUDENTS.items():
        if user == "nbx-ben":  # ada hands in on time; the due date passes; then ben
            time.sleep(1.5)
            due = datetime.now(UTC)
            time.sleep(1.5)
        fetched = _as(user, python, "-m", "nbgrader", "fetch_assignment", lab_id,
                      f"--course={COURSE_ID}", at)  # fmt: skip
        assert fetched.returncode == 0, fetched.stderr
        if user == "nbx-ben":  # hands in the untouched release first, then the real one
            first = _as(user, python, "-m", "nbgrader", "submit", lab_id,
                        f"--course={COURSE_ID}", at)  # fmt: skip
            assert first.returncode == 0, first.stderr
        _fill_in(user, _answers(answers, release_nb, solution_nb))
        home = Path(pwd.getpwnam(user).pw_dir)
        check = _as(user, python, "self_check.py", cwd=home / lab_id)
        assert check.returncode == (0 if answers.startswith("correct/") else 1), check.stdout
        submitted = _as(user, python, "-m", "nbgrader", "submit", lab_id,
                        f"--course={COURSE_ID}", at)  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr

    # A student cannot look into the inbound, nor into the instructor's course.
    inbound = exchange / COURSE_ID / "inbound"
    assert _as("nbx-ben", "ls", str(inbound)).returncode != 0
    assert _as("nbx-ben", "ls", str(course_dir)).returncode != 0

    # zed's notebook is cut short on its way in: the grader cannot read it
    fetched = _as(UNREADABLE, python, "-m", "nbgrader", "fetch_assignment", lab_id,
                  f"--course={COURSE_ID}", at)  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    _fill_in(UNREADABLE, _answers("correct/loops", release_nb, solution_nb)[:300])
    submitted = _as(UNREADABLE, python, "-m", "nbgrader", "submit", lab_id,
                    f"--course={COURSE_ID}", at)  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr

    rows = _grade_and_release(course_dir, at, due, unreadable=True)
    for user in USERS:
        fetched = _as(user, python, "-m", "nbgrader", "fetch_feedback", lab_id,
                      f"--course={COURSE_ID}", at)  # fmt: skip
        assert fetched.returncode == 0, fetched.stderr
        if user in STUDENTS:
            _check_own_feedback(user, rows)
    home = Path(pwd.getpwnam(UNREADABLE).pw_dir)
    (page,) = (home / lab_id / "feedback").rglob("*.html")  # every hand-in gets its page back
    assert "Grading note (unreadable)" in page.read_text()

    _removed_stays_removed(course_dir, at)


def _removed_stays_removed(course_dir: Path, at: str) -> None:
    """The TA removes ben; the weekly ``collect --update`` brings his work back from the
    exchange: the next run skips him, in one line, and no output lists him."""
    lab_id, out = lab.ASSIGNMENT.id, course_dir / "grades"
    removed = run_command_line(["remove", "nbx-ben"], timeout=300, cwd=course_dir)
    assert removed.returncode == 0, removed.stderr
    collected = _nbgrader("collect", lab_id, "--update", at, cwd=course_dir)
    assert collected.returncode == 0, collected.stderr
    assert (course_dir / "submitted" / "nbx-ben" / lab_id / lab.NOTEBOOK).is_file()  # back
    graded = lab.grade_command(course_dir / "submitted", course_dir, out)
    assert graded.returncode == 0, graded.stderr
    (said,) = [line for line in graded.stderr.splitlines() if "removed from" in line]
    assert "nbx-ben" in said
    rows = {r["student_id"] for r in results.read_csv(out / "grades.csv")}
    assert rows == {"nbx-ada", UNREADABLE}
    assert not (out / "feedback" / "nbx-ben.html").exists()


# -- Graded on submit ------------------------------------------------------------------------


def _served_pages(user: str, python: str, at: str) -> list[str]:
    """Every page ``user`` fetches with ``nbgrader fetch_feedback``, oldest hand-in first."""
    lab_id = lab.ASSIGNMENT.id
    fetched = _as(user, python, "-m", "nbgrader", "fetch_feedback", lab_id,
                  f"--course={COURSE_ID}", at)  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    home = Path(pwd.getpwnam(user).pw_dir)
    folder = home / lab_id / "feedback"
    found = sorted(folder.glob(f"*/{Path(lab.NOTEBOOK).stem}.html")) if folder.is_dir() else []
    return [page.read_text() for page in found]


def _submit(user: str, python: str, at: str) -> datetime:
    """``nbgrader submit`` as ``user``; when it was handed in (nbgrader's stamp, naive UTC)."""
    done = _as(user, python, "-m", "nbgrader", "submit", lab.ASSIGNMENT.id,
               f"--course={COURSE_ID}", at)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return datetime.now(UTC).replace(tzinfo=None)


def _journal(course_dir: Path) -> list[dict]:
    path = course_dir / ".autograder" / f"serve-{lab.ASSIGNMENT.id}" / "journal.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("select * from hand_ins order by handed_in")]


def _service(course_dir: Path, exchange: Path, log: Path) -> subprocess.Popen:
    """``python -m autograder serve``, started by the instructor in the course folder."""
    before = log.read_text().count("serving ") if log.exists() else 0
    with log.open("a") as out:
        service = subprocess.Popen(
            [sys.executable, "-m", "autograder", "serve"], cwd=course_dir,
            env={**tool_environment(), "NBGRADER_EXCHANGE": str(exchange)},
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    _until(lambda: log.read_text().count("serving ") > before, service, log)
    return service


def _until(what, service: subprocess.Popen, log: Path, seconds: float = 600) -> None:
    """Wait for ``what``; the deadline guards against a hang and measures nothing."""
    deadline = time.monotonic() + seconds
    while not what():
        assert service.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)


def _served(course_dir: Path, user: str, hand_ins: int) -> bool:
    mine = [e for e in _journal(course_dir) if e["student"] == user]
    return len(mine) >= hand_ins and all(e["state"] != "waiting" and e["released"] for e in mine)


def test_graded_on_submit_through_the_exchange(
    shared_machine, users_env, release_nb, solution_nb, tmp_path
):
    """Students hand in as themselves; the instructor's service returns each page: fetched by
    each student alone, within seconds (printed), through a kill, by the course's policy."""
    course_dir, exchange = shared_machine
    python = str(users_env / "bin" / "python")
    at, lab_id = f"--Exchange.root={exchange}", lab.ASSIGNMENT.id
    with open(course_dir / "course_config.py", "a") as config:  # the best of three attempts
        config.write('\nc.Serve.attempts = 3\nc.Serve.counts = "best"\n')
    done = _nbgrader("release_assignment", lab_id, at, cwd=course_dir)
    assert done.returncode == 0, done.stderr
    log = tmp_path / "serve.log"
    service = _service(course_dir, exchange, log)
    latency: dict[str, float] = {}
    try:
        answers = {**STUDENTS, UNREADABLE: "correct/loops"}
        for user in USERS:
            fetched = _as(user, python, "-m", "nbgrader", "fetch_assignment", lab_id,
                          f"--course={COURSE_ID}", at)  # fmt: skip
            assert fetched.returncode == 0, fetched.stderr
            text = _answers(answers[user], release_nb, solution_nb)
            _fill_in(user, text[:300] if user == UNREADABLE else text)
        handed = {user: _submit(user, python, at) for user in USERS}
        for user in USERS:
            _until(lambda u=user: _served(course_dir, u, 1), service, log)
            (entry,) = [e for e in _journal(course_dir) if e["student"] == user]
            latency[user] = (
                datetime.fromisoformat(entry["released"]) - handed[user]
            ).total_seconds()
        pages = {user: _served_pages(user, python, at) for user in USERS}
        rows = {r["student_id"]: r for r in results.read_csv(course_dir / "grades" / "grades.csv")}
        for user in STUDENTS:
            (page,) = pages[user]
            assert f"feedback for {user}" in page and "attempt 1" in page
            assert f"Score: <b>{float(rows[user]['score'])} / " in page
            assert "BEGIN HIDDEN TESTS" not in page and "BEGIN SOLUTION" not in page
        assert float(rows["nbx-ada"]["score"]) == lab.AUTOGRADED
        assert rows["nbx-ben"]["test_concat_heads"] == "0"
        assert "Grading note (unreadable)" in pages[UNREADABLE][0]

        # zed hands in as ada: a folder of his in the inbound, named for her
        forged = (
            exchange
            / COURSE_ID
            / "inbound"
            / f"nbx-ada+{lab_id}+{datetime.now(UTC):%Y-%m-%d %H:%M:%S.%f} UTC+forged"
        )
        assert _as(UNREADABLE, "mkdir", str(forged)).returncode == 0
        assert _as(UNREADABLE, "touch", str(forged / "submission_secret.txt")).returncode == 0
        assert _as(UNREADABLE, "chmod", "777", str(forged)).returncode == 0
        _until(lambda: any(e["key"] == forged.name and e["state"] == "refused"
                           for e in _journal(course_dir)), service, log)  # fmt: skip

        # ben, right now: killed outright just after, the service loses nothing on restart
        _fill_in("nbx-ben", _answers("correct/loops", release_nb, solution_nb))
        _submit("nbx-ben", python, at)
        os.killpg(service.pid, signal.SIGKILL)
        service.wait(timeout=60)
        service = _service(course_dir, exchange, log)
        _until(lambda: _served(course_dir, "nbx-ben", 2), service, log)
        # and then the untouched release: a third page, but his best stays in the gradebook
        _fill_in("nbx-ben", nbformat.writes(release_nb))
        _submit("nbx-ben", python, at)
        _until(lambda: _served(course_dir, "nbx-ben", 3), service, log)
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        assert service.wait(timeout=60) == 0, log.read_text()[-3000:]
    first, best, blank = _served_pages("nbx-ben", python, at)
    assert first == pages["nbx-ben"][0]
    assert f"Score: <b>{float(lab.AUTOGRADED)} / " in best and "attempt 2" in best
    assert "attempt 3" in blank and "does not count" in blank and "Score: <b>0.0 / " in blank
    rows = {r["student_id"]: r for r in results.read_csv(course_dir / "grades" / "grades.csv")}
    assert float(rows["nbx-ben"]["score"]) == lab.AUTOGRADED  # the best, not the last
    ben = [e for e in _journal(course_dir) if e["student"] == "nbx-ben"]
    assert [(e["attempt"], bool(e["counts"])) for e in ben] == [(1, False), (2, True), (3, False)]
    assert float(rows["nbx-ada"]["score"]) == lab.AUTOGRADED  # zed's forgery changed nothing
    assert [e["state"] for e in _journal(course_dir) if e["student"] == "nbx-ada"] == [
        "graded", "refused"
    ]  # fmt: skip
    print("\ngraded on submit, seconds from hand-in to page:",
          ", ".join(f"{u} {s:.1f}" for u, s in latency.items()))  # fmt: skip


# -- The inbound is the students' to write: hostile hand-ins -----------------------------------

FORGE = r"""
import json, os, sys
spec = json.loads(sys.argv[1])
folder = os.path.join(spec["inbound"], os.fsdecode(bytes.fromhex(spec["name"])))
os.mkdir(folder)
here = folder
for _ in range(spec.get("depth", 0)):  # a hand-in that goes deeper than any walk should
    here = os.path.join(here, "d")
    os.mkdir(here)
for name, text in spec.get("files", {}).items():
    with open(os.path.join(folder, os.fsdecode(bytes.fromhex(name))), "w") as handle:
        handle.write(text)
os.chmod(folder, int(spec.get("mode", "777"), 8))
if spec.get("remove"):
    for name in spec.get("files", {}):
        os.remove(os.path.join(folder, os.fsdecode(bytes.fromhex(name))))
    os.rmdir(folder)
"""


def _forge(user: str, python: str, exchange: Path, name: bytes | str, **spec) -> str:
    """As ``user``, make a hand-in folder ``name`` in the inbound by hand (not with nbgrader):
    ``files`` ({name: text}), ``mode``, ``depth`` folders inside, ``remove`` it at once."""
    raw = name.encode() if isinstance(name, str) else name
    files = {
        (k.encode() if isinstance(k, str) else k).hex(): v for k, v in spec.pop("files", {}).items()
    }
    inbound = str(exchange / COURSE_ID / "inbound")
    done = _as(user, python, "-c", FORGE, json.dumps({"inbound": inbound, "name": raw.hex(),
                                                       "files": files, **spec}))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return os.fsdecode(raw)


def _stamp(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S.%f} UTC"


def test_graded_on_submit_trusts_nothing_a_student_writes_in_the_inbound(
    shared_machine, users_env, release_nb, solution_nb, tmp_path
):
    """Hand-in folders made by hand, as a hostile student would: names that crash a parser,
    folders too deep, another's name, a stolen secret, hundreds of notebooks, made-up ids,
    early folders filled late and times in the future. The service stays up, honest students
    get their own pages, and each trick gains nothing."""
    course_dir, exchange = shared_machine
    python = str(users_env / "bin" / "python")
    at, lab_id = f"--Exchange.root={exchange}", lab.ASSIGNMENT.id
    with open(course_dir / "course_config.py", "a") as config:
        config.write("\nc.Serve.attempts = 3\n")
    due = datetime.now(UTC).replace(tzinfo=None) + timedelta(days=1)
    dated = _nbgrader("db", "assignment", "add", lab_id, f"--duedate={_stamp(due)}", cwd=course_dir)
    assert dated.returncode == 0, dated.stderr
    assert _nbgrader("release_assignment", lab_id, at, cwd=course_dir).returncode == 0
    correct = _answers("correct/loops", release_nb, solution_nb)
    for user in USERS:
        fetched = _as(user, python, "-m", "nbgrader", "fetch_assignment", lab_id,
                      f"--course={COURSE_ID}", at)  # fmt: skip
        assert fetched.returncode == 0, fetched.stderr
        _fill_in(user, correct)
    log = tmp_path / "serve.log"
    service = _service(course_dir, exchange, log)
    zed, now = UNREADABLE, datetime.now(UTC).replace(tzinfo=None)
    try:
        # Before ada hands in: an empty folder in her name, made and removed by zed, and one
        # zed leaves unfinished; names that crashed the service once; a made-up id.
        _forge(zed, python, exchange, f"nbx-ada+{lab_id}+{_stamp(now)}+gone", remove=True)
        unfinished = _forge(zed, python, exchange, f"nbx-ada+{lab_id}+{_stamp(now)}+open",
                            mode="755")  # fmt: skip
        _forge(zed, python, exchange, f"nbx-zed+{lab_id}+2026-12-06 10:00:00..+dots",
               files={"submission_secret.txt": "x"})  # fmt: skip
        _forge(zed, python, exchange, b"nbx-zed+" + lab_id.encode() + b"+\xff\xfe+bytes")
        _forge(zed, python, exchange, f"no-such-student+{lab_id}+{_stamp(now)}+fake",
               files={"submission_secret.txt": "fake", lab.NOTEBOOK: correct})  # fmt: skip
        handed = _submit("nbx-ada", python, at)
        _until(lambda: any(e["student"] == "nbx-ada" and e["state"] == "graded" and e["released"]
                           for e in _journal(course_dir)), service, log)  # fmt: skip
        feedback = exchange / COURSE_ID / "feedback"
        assert stat.S_IMODE(feedback.stat().st_mode) == 0o711  # as nbgrader makes it
        (ada_page,) = _served_pages("nbx-ada", python, at)
        assert "attempt 1" in ada_page and f"{float(lab.AUTOGRADED)} / " in ada_page
        assert not any(e["student"] == "no-such-student" for e in _journal(course_dir))
        entries = {e["key"]: e for e in _journal(course_dir)}
        assert entries[unfinished]["state"] == "waiting"  # blocks nobody
        gone = [e for e in entries.values() if e["key"].endswith("+gone")]
        assert [e["state"] for e in gone] in ([], ["refused"])  # seen or not: never waiting

        # zed: his own hand-in, 1,200 folders deep, a notebook named in bytes UTF-8 cannot
        # spell, 300 notebooks, ada's secret (read from her readable home) and a name that
        # says the day after the due date
        (ada_folder,) = [p for p in (exchange / COURSE_ID / "inbound").iterdir()
                         if p.name.startswith("nbx-ada+") and "submission_secret.txt" in
                         {q.name for q in p.iterdir()} and p.stat().st_uid != 0
                         and p.name.split("+")[-1] not in ("gone", "open")]  # fmt: skip
        stolen = (ada_folder / "submission_secret.txt").read_text()
        pages_before = len(list(feedback.iterdir()))
        later = due + timedelta(days=1)
        files = {
            lab.NOTEBOOK: correct,
            "submission_secret.txt": stolen,
            b"\xff\xfe.ipynb": "{}",
            **{f"copy{n}.ipynb": "{}" for n in range(300)},
        }
        deep = _forge(zed, python, exchange, f"nbx-zed+{lab_id}+{_stamp(later)}+deep",
                      files=files, depth=1200)  # fmt: skip
        _until(lambda: any(e["key"] == deep and e["state"] != "waiting"
                           for e in _journal(course_dir)), service, log)  # fmt: skip
        entry = {e["key"]: e for e in _journal(course_dir)}[deep]
        assert entry["state"] == "graded"
        assert datetime.fromisoformat(entry["handed_in"]) < datetime.now(UTC).replace(
            tzinfo=None
        )  # the kernel's time, not the day after the due date its name says
        assert len(list(feedback.iterdir())) == pages_before  # no page under ada's secret
        assert "another student's secret" in log.read_text()
        assert _served_pages("nbx-ada", python, at) == [ada_page]  # hers, unchanged

        # ben makes a folder early and fills it later: it counts from when it was filled
        early = _forge("nbx-ben", python, exchange, f"nbx-ben+{lab_id}+{_stamp(now)}+late",
                       mode="755")  # fmt: skip
        time.sleep(2)
        done = _as("nbx-ben", python, "-c", (
            "import sys, os; f = sys.argv[1]; open(os.path.join(f, 'multi_head.ipynb'), 'w')"
            ".write(open(sys.argv[2]).read()); open(os.path.join(f, 'submission_secret.txt'),"
            " 'w').write('ben'); os.chmod(f, 0o777)"),
            str(exchange / COURSE_ID / "inbound" / early),
            str(Path(pwd.getpwnam("nbx-ben").pw_dir) / lab_id / lab.NOTEBOOK))  # fmt: skip
        assert done.returncode == 0, done.stderr
        filled = max(p.lstat().st_ctime for p in (exchange / COURSE_ID / "inbound" / early,
                     *(exchange / COURSE_ID / "inbound" / early).iterdir()))  # fmt: skip
        _until(lambda: _served(course_dir, "nbx-ben", 1), service, log)
        entry = {e["key"]: e for e in _journal(course_dir)}[early]
        assert datetime.fromisoformat(entry["handed_in"]) >= datetime.fromtimestamp(
            filled, UTC
        ).replace(tzinfo=None) - timedelta(microseconds=1)
        assert service.poll() is None  # through all of it
        assert "Traceback" not in log.read_text()
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        # too deep for shutil.rmtree, which the fixture removes the exchange with
        subprocess.run(["rm", "-rf", str(exchange / COURSE_ID / "inbound")], check=False)
        assert service.wait(timeout=60) == 0, log.read_text()[-3000:]
    (ada,) = [e for e in _journal(course_dir) if e["student"] == "nbx-ada" and e["released"]]
    waited = (datetime.fromisoformat(ada["released"]) - handed).total_seconds()
    print(f"\nhostile inbound: ada's page {waited:.1f} s after her hand-in")
