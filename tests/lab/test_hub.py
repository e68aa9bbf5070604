"""Do students work through a real JupyterHub, in a browser, and get their pages back at once?

The hub of ``hub/jupyterhub_config.py`` is started as ``make hub`` starts it,
with two students who are real Linux users (PAM passwords), nbgrader's
exchange shared, and the course's service (``python -m autograder serve``)
running as the hub's managed service. Each student logs in in headless
Chromium, opens JupyterLab's *Assignments* tab (Nbgrader menu, Assignment
List), fetches the lab, fills it in (saved into their folder, as JupyterLab
saves a file), and submits in the tab; then clicks *Fetch Feedback* in the same
tab until their page is there, with no instructor's step between, and opens it
from the list (*view feedback*, then the page in a browser tab). Along the
way, each runs ``self_check.py`` in a terminal, and one submits twice (a page
for each hand-in) and late (the due date falls between the two students: the
page names the penalty). Screenshots of each student's tab, submitted and with
feedback, and of their page, are kept in ``DIR`` (``tests/screenshots/hub`` unless
``HUB_SCREENSHOTS`` names another folder).
"""

import os
import pwd
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autograder.pipeline import results

from ..engine import browser
from . import lab
from .test_exchange import (  # noqa: F401 (shared_machine: a fixture)
    COURSE_ID,
    STUDENTS,
    _answers,
    _as,
    _fill_in,
    _nbgrader,
    _served_pages,
    shared_machine,
)

pytestmark = [pytest.mark.slow, pytest.mark.users, pytest.mark.browser]

HUB_CONFIG = lab.ROOT / "hub" / "jupyterhub_config.py"
SCREENSHOTS = Path(os.environ.get("HUB_SCREENSHOTS", lab.ROOT / "tests" / "screenshots" / "hub"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen:
    """The hub, as ``make hub`` starts it (``env`` names the users' environment)."""
    with log.open("w") as out:
        return subprocess.Popen(
            [str(Path(sys.executable).with_name("jupyterhub")), "-f", str(HUB_CONFIG)],
            cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def test_the_hub_refuses_an_environment_students_cannot_run(users_env, tmp_path):  # noqa: F811
    """Reached only through a folder of the instructor's (700), it is named before any login."""
    private = tmp_path / "instructor"
    private.mkdir(mode=0o700)
    (private / "env").symlink_to(users_env)
    env = {**os.environ, "HUB_ENV": str(private / "env"), "HUB_STATE": str(tmp_path / "hub"),
           "HUB_PORT": str(_free_port()), "HUB_API_PORT": str(_free_port()),
           "HUB_PROXY_API_PORT": str(_free_port())}  # fmt: skip
    process = _start(env, tmp_path, tmp_path / "hub.log")
    assert process.wait(timeout=120) != 0
    said = (tmp_path / "hub.log").read_text()
    assert f"the users' environment {private / 'env'}: another user cannot run it" in said, said


@pytest.fixture
def hub(shared_machine, users_env, tmp_path):  # noqa: F811 (the fixtures imported above)
    """``(URL, passwords, course, exchange)``: the course's hub running, students able to log in."""
    course_dir, exchange = shared_machine
    with open(course_dir / "course_config.py", "a") as config:  # late work scores nothing
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    passwords = {user: f"pw-{user}-{os.getpid()}" for user in STUDENTS}
    done = subprocess.run(
        ["chpasswd"], input="".join(f"{u}:{p}\n" for u, p in passwords.items()), text=True
    )
    assert done.returncode == 0, "chpasswd failed"
    port = _free_port()
    env = {
        **os.environ,
        "HUB_PORT": str(port),
        "HUB_API_PORT": str(_free_port()),
        "HUB_PROXY_API_PORT": str(_free_port()),
        "HUB_STATE": str(tmp_path / "hub"),
        "NBGRADER_EXCHANGE": str(exchange),
        "NBGRADER_COURSE": str(course_dir),
        "HUB_ENV": str(users_env),
    }
    process = _start(env, tmp_path, tmp_path / "hub.log")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/hub/login", timeout=5) as page:
                if page.status == 200:
                    break
        except OSError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, (
            tmp_path / "hub.log"
        ).read_text()[-3000:]
        time.sleep(0.5)
    try:
        yield url, passwords, course_dir, exchange
    finally:
        _stop(process)


def _stop(hub: subprocess.Popen) -> None:
    """Stop the hub as Ctrl-C would (its services and servers with it); kill it if it hangs."""
    os.killpg(hub.pid, signal.SIGTERM)
    try:
        hub.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(hub.pid, signal.SIGKILL)


def _log_in(tab: browser.Tab, url: str, user: str, password: str) -> None:
    """Log in on the hub's page as a person does (logging out whoever was in); wait for Lab."""
    tab.go(f"{url}/hub/logout")
    tab.go(f"{url}/hub/login")
    tab.wait_for("document.querySelector('#username_input') !== null", 30, "the login form")
    tab.run(
        f"document.querySelector('#username_input').value = {user!r};"
        f"document.querySelector('#password_input').value = {password!r};"
        "document.querySelector('#login_submit').click(); true"
    )
    tab.wait_for("document.querySelector('.jp-LabShell') !== null", 120, "JupyterLab")


def _open_assignments(tab: browser.Tab) -> None:
    """Open the Assignments tab from the Nbgrader menu (again, while JupyterLab settles)."""
    listed = (
        "[...document.querySelectorAll('.lm-Menu-itemLabel')]"
        ".some(e => e.textContent.includes('Assignment List'))"
    )
    deadline = time.monotonic() + 60
    while True:
        tab.click(".lm-MenuBar-item", "Nbgrader")
        try:
            tab.wait_for(listed, 3, "the Nbgrader menu")
            break
        except AssertionError:
            assert time.monotonic() < deadline, "the Nbgrader menu never opened"
    tab.click(".lm-Menu-itemLabel", "Assignment List")
    tab.wait_for("document.body.innerText.includes('Released assignments')", 60, "the tab")


def _submit(tab: browser.Tab, times: int) -> None:
    """Click Submit in the tab; wait until the tab lists ``times`` submissions."""
    tab.click("button", "Submit")
    stamp = r"/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ UTC/g"  # one line per submission
    listed = (
        "[...document.querySelectorAll('button')]"
        ".some(b => b.textContent.includes('Fetch Feedback'))"
        f" && (document.body.innerText.match({stamp}) || []).length >= {times}"
    )
    tab.wait_for(listed, 60, f"submission {times} in the tab")


def _fetch_feedback(tab: browser.Tab, pages: int) -> None:
    """Click *Fetch Feedback* in the tab until it lists ``pages`` *view feedback* links (the
    service grades each hand-in as it arrives: a click may come before its page)."""
    count = "(document.body.innerText.match(/view feedback/g) || []).length"
    deadline = time.monotonic() + 300  # a guard against a hang, never a measure
    while True:
        tab.click("button", "Fetch Feedback")
        try:
            tab.wait_for(f"{count} >= {pages}", 5, f"{pages} feedback link(s)")
            return
        except AssertionError:
            assert time.monotonic() < deadline, f"no {pages} page(s) in the tab"


def _open_page(tab: browser.Tab, url: str, user: str) -> str:
    """Click the newest hand-in's *view feedback* in the tab (the file browser goes to its
    folder, where the page is listed), then open the page as the student opens a file in
    a browser tab; the text they read."""
    tab.run(
        "[...document.querySelectorAll('a')]"
        ".filter(a => a.textContent.includes('view feedback')).pop().click(); true"
    )
    listed = (
        "[...document.querySelectorAll('.jp-DirListing-itemText')]"
        f".some(e => e.textContent.includes({Path(lab.NOTEBOOK).stem + '.html'!r}))"
    )
    tab.wait_for(listed, 60, "the page in the file browser")
    home = Path(pwd.getpwnam(user).pw_dir)
    (newest, *_) = sorted((home / lab.ASSIGNMENT.id / "feedback").iterdir(), reverse=True)
    page = (newest / f"{Path(lab.NOTEBOOK).stem}.html").relative_to(home)
    tab.go(f"{url}/user/{user}/files/{urllib.parse.quote(str(page))}")
    tab.wait_for("document.body.innerText.includes('Score:')", 60, "the page")
    return str(tab.run("document.body.innerText"))


def test_students_work_through_the_hub(hub, users_env, release_nb, solution_nb):  # noqa: F811
    """Fetch, fill in, submit in the tab; fetch the page in the same tab: each their own?"""
    url, passwords, course_dir, exchange = hub
    lab_id = lab.ASSIGNMENT.id
    at = f"--Exchange.root={exchange}"
    done = _nbgrader("release_assignment", lab_id, at, cwd=course_dir)
    assert done.returncode == 0, done.stderr
    python = str(users_env / "bin" / "python")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with browser.Browser() as chromium:
        for user, answers in STUDENTS.items():
            if user == "nbx-ben":  # ada hands in on time; the due date passes; then ben
                due = datetime.now(UTC)
                when = f"--duedate={due:%Y-%m-%d %H:%M:%S.%f} UTC"
                dated = _nbgrader("db", "assignment", "add", lab_id, when, cwd=course_dir)
                assert dated.returncode == 0, dated.stderr
                time.sleep(1.5)
            with chromium.tab() as tab:
                _log_in(tab, url, user, passwords[user])
                _open_assignments(tab)
                tab.click("button", "Fetch")
                fetched = (
                    "[...document.querySelectorAll('button')]"
                    ".some(b => b.textContent.trim() === 'Submit')"
                )
                tab.wait_for(fetched, 60, "the fetched lab")
                if user == "nbx-ben":  # hands in the untouched release first, and reads it
                    _submit(tab, times=1)
                    _fetch_feedback(tab, 1)
                _fill_in(user, _answers(answers, release_nb, solution_nb))
                home = Path(pwd.getpwnam(user).pw_dir)
                check = _as(user, python, "self_check.py", cwd=home / lab_id)
                assert check.returncode == (0 if answers.startswith("correct/") else 1)
                hand_ins = 2 if user == "nbx-ben" else 1
                _submit(tab, times=hand_ins)
                tab.screenshot(SCREENSHOTS / f"{user}-submitted.png")
                _fetch_feedback(tab, hand_ins)  # no instructor's step: the service's pages
                tab.screenshot(SCREENSHOTS / f"{user}-feedback.png")
                read = _open_page(tab, url, user)
                tab.screenshot(SCREENSHOTS / f"{user}-page.png")
                assert f"feedback for {user}" in read and f"attempt {hand_ins}" in read

    rows = {r["student_id"]: r for r in results.read_csv(course_dir / "grades" / "grades.csv")}
    top = float(rows["nbx-ada"]["max_score"])
    ada, ben = (_served_pages(u, python, at) for u in STUDENTS)
    (page,) = ada
    assert "feedback for nbx-ada" in page and f"Score: <b>{float(lab.AUTOGRADED)} / {top}" in page
    blank, wrong = ben
    assert "feedback for nbx-ben" in wrong and "feedback for nbx-ada" not in wrong
    raw = float(rows["nbx-ben"]["raw_score"])
    assert 0 < raw < lab.AUTOGRADED and float(rows["nbx-ben"]["score"]) == 0  # late: "zero"
    assert f"late submission penalty of {raw}" in wrong and "attempt 2" in wrong
    assert "attempt 1" in blank
    for page in (*ada, *ben):
        assert "BEGIN HIDDEN TESTS" not in page and "BEGIN SOLUTION" not in page
