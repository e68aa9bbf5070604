"""Does ``serve`` grade each hand-in arriving through ngshare, and return its page there?

A hub whose students share no filesystem hands in through ngshare
(:mod:`autograder.serve.ngshare`). Here ngshare is the real service, from its
own environment, behind a stand-in hub that knows each token's user
(:mod:`.ngshare_hub`); the instructor and the students use nbgrader's own
commands with ngshare's plugin, each with their own token, as their servers
would. The course is made in ngshare and its students enrolled by the service,
with no step of the instructor's; each student's page comes back with their own
score; a student cannot hand in, or fetch a page, as another; the service killed
right after a hand-in grades it at its next start.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import tool_environment

from . import ngshare_hub, toy
from .command_line import Ran, run_nbgrader

pytestmark = pytest.mark.slow

ID, COURSE_ID = "toy-1", "toy"
WAIT = 300  #: seconds at most for a page: a guard against a hang, never a measure
TOKENS = {
    "t-service": {"kind": "service", "name": "autograder"},
    "t-teacher": {"kind": "user", "name": "teacher"},
    "t-ada": {"kind": "user", "name": "ada"},
    "t-ben": {"kind": "user", "name": "ben"},
    "t-eve": {"kind": "user", "name": "eve"},
}
TOKEN = {model["name"]: token for token, model in TOKENS.items()}
WRONG = dict(toy.SOLVED, double="def double(v):\n    return 3 * v")

EXCHANGE_CONFIG = """
from ngshare_exchange import configureExchange
configureExchange(c, {url!r})
c.CourseDirectory.course_id = {course!r}
"""


@pytest.fixture
def ngshare(ngshare_env, tmp_path):
    """``url``: ngshare running behind a stand-in hub; the service among its admins."""
    hub = ngshare_hub.StandInHub(TOKENS)
    process, url = ngshare_hub.start(
        ngshare_env, hub, tmp_path / "ngshare", tmp_path / "ngshare.log", "autograder"
    )
    try:
        yield url
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        hub.close()


def _call(url: str, user: str, method: str, path: str, **fields: str) -> dict:
    """ngshare's answer to ``user`` (their token), whatever it is."""
    data = urllib.parse.urlencode(fields).encode() if method == "POST" else None
    query = "" if method == "POST" or not fields else "?" + urllib.parse.urlencode(fields)
    request = urllib.request.Request(f"{url}/{path}{query}", data=data, method=method)
    request.add_header("Authorization", f"token {TOKEN[user]}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        return json.loads(error.read() or b"{}")


class People:
    """The instructor and the students, each running nbgrader with their own token."""

    def __init__(self, course: Path, homes: Path, url: str) -> None:
        self.course, self.homes, self.url = course, homes, url
        self.release = notebook.read(course / "release" / ID / "toy.ipynb")

    def env(self, user: str, home: Path) -> dict[str, str]:
        return {**tool_environment(), "HOME": str(home), "USER": user, "JUPYTERHUB_USER": user,
                "JUPYTERHUB_API_TOKEN": TOKEN[user]}  # fmt: skip

    def nbgrader(self, user: str, *args: str, token_of: str | None = None) -> Ran:
        home = self.homes / user
        if not home.exists():
            home.mkdir(parents=True)
            (home / "nbgrader_config.py").write_text(
                "c = get_config()  # noqa: F821\n"
                + EXCHANGE_CONFIG.format(url=self.url, course=COURSE_ID)
            )
        env = self.env(user, home)
        if token_of is not None:  # another's token, or their name with one's own
            env["JUPYTERHUB_API_TOKEN"] = TOKEN[token_of]
        return run_nbgrader([*args, ID, f"--course={COURSE_ID}"], timeout=120, cwd=home, env=env)

    def hand_in(self, user: str, answers: dict[str, str]) -> None:
        work = self.homes / user / ID
        if not work.exists():
            done = self.nbgrader(user, "fetch_assignment")
            assert done.returncode == 0 and work.exists(), done.stderr[-2000:]
        (work / "toy.ipynb").write_text(nbformat.writes(notebook.fill(self.release, answers)))
        done = self.nbgrader(user, "submit")
        assert done.returncode == 0 and "Submitted as" in done.stderr, done.stderr[-2000:]

    def pages(self, user: str) -> list[str]:
        self.nbgrader(user, "fetch_feedback")
        folder = self.homes / user / ID / "feedback"
        return [p.read_text() for p in sorted(folder.glob("*/toy.html"))] if folder.is_dir() else []


def _start(course: Path, log: Path) -> subprocess.Popen:
    """The service, as the hub starts it: in the course folder, with its own hub token."""
    env = {**tool_environment(), "JUPYTERHUB_API_TOKEN": "t-service", "USER": "autograder"}
    with log.open("a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "autograder", "serve", "--jobs", "2"],
            cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def _wait(what, service: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not what():
        assert service.poll() is None, f"the service stopped:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not done in {WAIT} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.3)


def _score(page: str) -> str:
    return page.split("Score: <b>", 1)[1].split("</b>", 1)[0]


@pytest.mark.parametrize("option", ["--debug", "--vngshare", "--deb", "--vng=1"])
def test_ngshare_is_never_started_in_a_mode_that_trusts_anyone(option, tmp_path):
    """Refused in one line, before ngshare is even imported: its debug page shows its hub
    token to anyone, and vngshare believes any ``?user=``."""
    ran = subprocess.run([sys.executable, str(ngshare_hub.LAUNCHER), "--admins", "x", option],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 1 and ran.stderr.strip().splitlines() == [
        f"error: ngshare must not run with {option}: it would let a student act as anyone"
    ]


def test_hand_ins_through_ngshare_are_graded_and_answered(lesson_course, ngshare, tmp_path):
    course = lesson_course
    port = int(urllib.parse.urlsplit(ngshare).port or 0)
    assert ngshare_hub.listening_on(port) == {"127.0.0.1"}  # never 0.0.0.0, as ngshare would
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(
            EXCHANGE_CONFIG.format(url=ngshare, course=COURSE_ID)
            + f"c.Serve.ngshare_url = {ngshare!r}\nc.Serve.ngshare_instructors = ['teacher']\n"
        )
    roster = tmp_path / "roster.csv"  # the class, as the gradebook knows it
    roster.write_text("id\nada\nben\neve\n")
    enrolled = run_nbgrader(["db", "student", "import", str(roster)], timeout=120, cwd=course,
                            env=tool_environment())  # fmt: skip
    assert enrolled.returncode == 0, enrolled.stderr
    people = People(course, tmp_path / "homes", ngshare)
    log = tmp_path / "serve.log"
    service = _start(course, log)
    try:
        # the service makes the course, its instructor and its students: no step of theirs
        _wait(lambda: _call(ngshare, "teacher", "GET", f"students/{COURSE_ID}").get("success")
              and len(_call(ngshare, "teacher", "GET", f"students/{COURSE_ID}")["students"]) == 3,
              service, log)  # fmt: skip
        env = {**people.env("teacher", course), "HOME": str(tmp_path / "teacher")}
        released = run_nbgrader(["release_assignment", ID, f"--course={COURSE_ID}"],
                                timeout=120, cwd=course, env=env)  # fmt: skip
        assert released.returncode == 0 and "Successfully released" in released.stderr, (
            released.stderr[-2000:]
        )

        people.hand_in("ada", toy.SOLVED)
        people.hand_in("ben", WRONG)
        _wait(lambda: len(people.pages("ada")) == 1 and len(people.pages("ben")) == 1, service, log)
        (ada,) = people.pages("ada")
        (ben,) = people.pages("ben")
        assert "feedback for ada" in ada and _score(ada) == "5.0 / 7.0"
        assert "feedback for ben" in ben and _score(ben) != "5.0 / 7.0"

        # eve, with her own token, cannot hand in or fetch as ada
        people.hand_in("eve", WRONG)
        hand_ins = _call(ngshare, "teacher", "GET", f"submissions/{COURSE_ID}/{ID}")["submissions"]
        assert sorted(h["student_id"] for h in hand_ins) == ["ada", "ben", "eve"]
        (ada_time,) = [h["timestamp"] for h in hand_ins if h["student_id"] == "ada"]
        taken = _call(ngshare, "eve", "GET", f"feedback/{COURSE_ID}/{ID}/ada", timestamp=ada_time)
        assert taken.get("success") is not True and "files" not in taken
        files = _call(ngshare, "eve", "GET", f"submission/{COURSE_ID}/{ID}/ada",
                      timestamp=ada_time)  # fmt: skip
        assert files.get("success") is not True
        forged = [{"path": "toy.html", "content": base64.b64encode(b"forged").decode()}]
        given = _call(ngshare, "eve", "POST", f"feedback/{COURSE_ID}/{ID}/eve",
                      timestamp=ada_time, files=json.dumps(forged))  # fmt: skip
        assert given.get("success") is not True
        as_ada = people.nbgrader("ada", "fetch_feedback", token_of="eve")  # ada's name, eve's token
        assert all("feedback for ada" not in p for p in people.pages("eve"))
        assert "forged" not in " ".join(people.pages("ada")), as_ada.stderr[-500:]

        # killed right after a hand-in: graded at the next start, once
        os.killpg(service.pid, signal.SIGKILL)
        service.wait(timeout=60)
        people.hand_in("ada", WRONG)
        service = _start(course, log)
        _wait(lambda: len(people.pages("ada")) == 2, service, log)
        first, second = people.pages("ada")
        assert first == ada and "attempt 2" in second and _score(second) != "5.0 / 7.0"
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=60)
