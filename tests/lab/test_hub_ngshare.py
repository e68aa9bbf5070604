"""The course's hub as Zero to JupyterHub runs one: students share no filesystem, ngshare is
the exchange, and each hand-in is graded on submit.

``HUB_EXCHANGE=ngshare``: every user's server runs as one Unix user, each in its
own bubblewrap (``hub/isolated_spawner.py``), and nbgrader's exchange is
ngshare's service, from its own environment; the course's service grades
through it. Users log in with JupyterHub's shared-password authenticator
(``HUB_AUTH=dummy``). The instructor releases with ``nbgrader
release_assignment`` in the course folder, with their own hub token; no one
enrols anyone. Each student works as their JupyterLab does, through their
server's nbgrader API (fetch, save, submit, fetch feedback): two students'
pages come back with their own scores; a third, from inside her own server,
finds no way to hand in or fetch as another (no other home, process or token
within reach, and ngshare refuses her token for anyone else's); the service
killed right after a hand-in is started again by the hub and grades it.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
import requests

from autograder.pipeline import results
from autograder.tools import corpus

from . import lab
from .test_hub import _free_port, _start, _stop

pytestmark = [pytest.mark.slow, pytest.mark.users]

COURSE_ID = "tiny-gpt-08"  # course_config.py
PASSWORD = "a-shared-password"
SHARED_USER = "nbx-pod"  # every server's Unix user, as jovyan is every pod's
INSTRUCTOR = "teacher"
WITHIN = 90.0  #: seconds from a hand-in to its page, at most (the issue's promise)
ANSWERS = {"ada": "correct/loops", "ben": "mistakes/concat_axis0", "eve": "mistakes/concat_axis0"}


class Person:
    """One user of the hub: logged in with the shared password, a token of their own, and
    their server's API as their JupyterLab uses it."""

    def __init__(self, url: str, name: str) -> None:
        self.url, self.name, self.session = url, name, requests.Session()
        self.session.get(f"{url}/hub/login", timeout=30)
        form = {"username": name, "password": PASSWORD, "_xsrf": self.session.cookies["_xsrf"]}
        done = self.session.post(f"{url}/hub/login", data=form, allow_redirects=False, timeout=30)
        assert done.status_code in (302, 303), done.text[-500:]
        made = self.session.post(f"{url}/hub/api/users/{name}/tokens", json={"note": "lab"},
                                 headers={"X-XSRFToken": self.session.cookies["_xsrf"]},
                                 timeout=30)  # fmt: skip
        assert made.status_code == 201, made.text[-500:]
        self.token = made.json()["token"]
        self.auth = {"Authorization": f"token {self.token}"}

    def start_server(self) -> None:
        requests.post(f"{self.url}/hub/api/users/{self.name}/server", headers=self.auth,
                      timeout=60)  # fmt: skip
        deadline = time.monotonic() + 180
        while True:
            model = requests.get(f"{self.url}/hub/api/users/{self.name}", headers=self.auth,
                                 timeout=30).json()  # fmt: skip
            if (model.get("servers") or {}).get("", {}).get("ready"):
                return
            assert time.monotonic() < deadline, model
            time.sleep(1)

    def server(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, f"{self.url}/user/{self.name}/{path}",
                                headers=self.auth, timeout=300, **kwargs)  # fmt: skip

    def act(self, action: str) -> dict:
        """The Assignments tab's button: fetch, submit or fetch_feedback."""
        form = {"course_id": COURSE_ID, "assignment_id": lab.ASSIGNMENT.id}
        done = self.server("POST", f"assignments/{action}", data=form)
        assert done.status_code == 200, done.text[-500:]
        return done.json()

    def pages(self) -> list[str]:
        """The page of each hand-in fetched so far, oldest first."""
        listing = self.server("GET", f"api/contents/{lab.ASSIGNMENT.id}/feedback")
        found = []
        if listing.status_code == 200:
            for entry in sorted(listing.json()["content"], key=lambda e: e["name"]):
                name = f"{entry['path']}/{Path(lab.NOTEBOOK).stem}.html"
                page = self.server("GET", f"api/contents/{name}",
                                   params={"type": "file", "format": "text"})  # fmt: skip
                if page.status_code == 200:
                    found.append(page.json()["content"])
        return found

    def hand_in(self, answers: dict) -> float:
        """Fetch (until the course lists the lab: a new user is enrolled within seconds),
        save the answers, submit; when it was submitted (time.monotonic())."""
        deadline = time.monotonic() + 120
        while not any(a.get("status") == "fetched" for a in self.act("fetch")["value"]):
            assert time.monotonic() < deadline, "the lab never became fetchable"
            time.sleep(2)
        content = {"type": "notebook", "format": "json", "content": answers}
        saved = self.server("PUT", f"api/contents/{lab.ASSIGNMENT.id}/{lab.NOTEBOOK}",
                            json=content)  # fmt: skip
        assert saved.status_code in (200, 201), saved.text[-500:]
        submitted = self.act("submit")
        assert submitted["success"], submitted
        return time.monotonic()

    def wait_for_page(self, count: int, since: float) -> str:
        while True:
            self.act("fetch_feedback")
            pages = self.pages()
            if len(pages) >= count:
                return pages[-1]
            assert time.monotonic() - since < WITHIN, f"no page {count} within {WITHIN} s"
            time.sleep(1)


@pytest.fixture
def hub(new_course, users_env, ngshare_env, tmp_path):
    """``(URL, course, ngshare's URL, the hub's log, the users' environment)``: the hub in
    ngshare mode, running."""
    assert os.geteuid() == 0, "the hub starts servers as another user: run the suite as root"
    course = new_course
    course.chmod(0o700)  # the instructor's: no server may read it
    shutil.rmtree(course / "exchange", ignore_errors=True)  # none is made: ngshare is it
    homes = Path(tempfile.mkdtemp(prefix="nbx-homes-"))  # in /tmp: the servers' user reaches it
    ports = {name: str(_free_port()) for name in
             ("HUB_PORT", "HUB_API_PORT", "HUB_PROXY_API_PORT", "HUB_NGSHARE_PORT")}  # fmt: skip
    env = {**os.environ, **ports, "HUB_EXCHANGE": "ngshare", "HUB_AUTH": "dummy",
           "HUB_DUMMY_PASSWORD": PASSWORD, "HUB_INSTRUCTOR": INSTRUCTOR,
           "HUB_SHARED_USER": SHARED_USER, "HUB_HOMES": str(homes),
           "HUB_STATE": str(tmp_path / "hub"), "NGSHARE_ENV": str(ngshare_env),
           "NBGRADER_COURSE": str(course), "HUB_ENV": str(users_env)}  # fmt: skip
    env.pop("NBGRADER_EXCHANGE", None)
    log = tmp_path / "hub.log"
    process = _start(env, tmp_path, log)
    url = f"http://127.0.0.1:{ports['HUB_PORT']}"
    deadline = time.monotonic() + 120
    while "serving " not in log.read_text():  # the course's service, through ngshare
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)
    try:
        ngshare = f"http://127.0.0.1:{ports['HUB_NGSHARE_PORT']}/services/ngshare"
        yield url, course, ngshare, log, users_env
    finally:
        _stop(process)
        subprocess.run(["pkill", "-KILL", "-u", SHARED_USER], capture_output=True)
        shutil.rmtree(homes, ignore_errors=True)


def _server_process(user: str) -> int:
    """The pid of ``user``'s server (inside its bubblewrap)."""
    for entry in Path("/proc").iterdir():
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith("jupyterhub-sing") and f"JUPYTERHUB_USER={user}".encode() in environ:
            return int(entry.name)
    raise AssertionError(f"no server of {user}")


def _token_of(pid: int) -> str:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    (token,) = [v.split(b"=", 1)[1] for v in environ if v.startswith(b"JUPYTERHUB_API_TOKEN=")]
    return token.decode()


def _inside(pid: int, python: Path, script: str) -> subprocess.CompletedProcess:
    """``script`` run in the server ``pid``'s own bubblewrap, as its user: what its
    student's code could do there (read from stdin: what it looks for is on no command line)."""
    user = pwd.getpwnam(SHARED_USER)
    return subprocess.run(
        ["nsenter", "-t", str(pid), "-U", "-m", "-p", "-S", str(user.pw_uid),
         "-G", str(user.pw_gid), "--", str(python), "-I", "-"],
        input=script, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_students_who_share_no_filesystem_are_graded_through_ngshare(hub, release_nb, solution_nb):
    url, course, ngshare, log, users_env = hub
    entries = corpus.load_corpus(lab.ROOT / lab.CORPUS)

    def answers(name: str) -> dict:
        built = corpus.build({name: entries[name]}, release_nb, solution_nb)[name]
        return json.loads(nbformat.writes(built))

    # the instructor releases with their own hub token, from the course folder
    teacher = Person(url, INSTRUCTOR)
    env = {**os.environ, "NBGRADER_NGSHARE_URL": ngshare, "JUPYTERHUB_API_TOKEN": teacher.token,
           "JUPYTERHUB_USER": INSTRUCTOR, "HUB_INSTRUCTOR": INSTRUCTOR}  # fmt: skip
    env.pop("NBGRADER_EXCHANGE", None)
    deadline = time.monotonic() + 60
    while True:  # the service makes the course in ngshare as it starts
        released = subprocess.run(
            [sys.executable, "-m", "nbgrader", "release_assignment", lab.ASSIGNMENT.id],
            cwd=course, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if "Successfully released" in released.stderr:
            break
        assert time.monotonic() < deadline, released.stderr[-2000:]
        time.sleep(2)

    people = {name: Person(url, name) for name in ANSWERS}
    for person in people.values():
        person.start_server()
    handed = {name: people[name].hand_in(answers(ANSWERS[name])) for name in ("ada", "ben")}
    pages = {name: people[name].wait_for_page(1, handed[name]) for name in ("ada", "ben")}
    rows = {r["student_id"]: r for r in results.read_csv(course / "grades" / "grades.csv")}
    for name, page in pages.items():
        assert f"feedback for {name}" in page, page[:500]
        score = float(rows[name]["raw_score"])
        assert f"Score: <b>{score} / {float(rows[name]['max_score'])}" in page
    assert float(rows["ada"]["raw_score"]) > float(rows["ben"]["raw_score"])

    # eve, from inside her own server: no one else's home, process, token or page
    eve, ada_server = _server_process("eve"), _server_process("ada")
    secrets = [_token_of(ada_server), people["ada"].token, _token_of(_server_process("ben"))]
    probe = _inside(
        eve,
        users_env / "bin" / "python",
        f"""
import glob, json, os
found = []
for path in glob.glob('/proc/[0-9]*/environ') + glob.glob('/proc/[0-9]*/cmdline'):
    try:
        data = open(path, 'rb').read().decode(errors='replace')
    except OSError:
        continue
    found += [path for s in {secrets!r} if s in data]
for top in ('/home', '/tmp', '/dev/shm', {str(Path(course).parent)!r}):
    for here, dirs, files in os.walk(top):
        for name in files:
            try:
                data = open(os.path.join(here, name), 'rb').read(2**20).decode(errors='replace')
            except OSError:
                continue
            found += [os.path.join(here, name) for s in {secrets!r} if s in data]
print(json.dumps({{'found': found, 'homes': sorted(os.listdir('/home')),
                  'course': os.path.exists({str(course)!r})}}))
""",
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    seen = json.loads(probe.stdout)
    assert seen == {"found": [], "homes": ["eve"], "course": False}, seen
    with_eve = {"Authorization": f"token {people['eve'].token}"}
    listed = requests.get(f"{ngshare}/submissions/{COURSE_ID}/{lab.ASSIGNMENT.id}/ada",
                          headers=with_eve, timeout=30).json()  # fmt: skip
    assert listed.get("success") is not True
    (ada_time,) = [
        h["timestamp"]
        for h in requests.get(f"{ngshare}/submissions/{COURSE_ID}/{lab.ASSIGNMENT.id}",
                              headers={"Authorization": f"token {teacher.token}"},
                              timeout=30).json()["submissions"]
        if h["student_id"] == "ada"
    ]  # fmt: skip
    for path in (f"feedback/{COURSE_ID}/{lab.ASSIGNMENT.id}/ada",
                 f"submission/{COURSE_ID}/{lab.ASSIGNMENT.id}/ada"):  # fmt: skip
        taken = requests.get(f"{ngshare}/{path}", params={"timestamp": ada_time},
                             headers=with_eve, timeout=30).json()  # fmt: skip
        assert taken.get("success") is not True and "files" not in taken

    # eve hands in; the service is killed at once; the hub starts it again; her page comes
    service = subprocess.run(["pgrep", "-f", f"autograder serve --course {course}"],
                             capture_output=True, text=True).stdout.split()  # fmt: skip
    since = people["eve"].hand_in(answers(ANSWERS["eve"]))
    for pid in service:
        os.kill(int(pid), signal.SIGKILL)
    page = people["eve"].wait_for_page(1, since - WITHIN + 180)  # the hub's restart, then 90 s
    assert "feedback for eve" in page and "feedback for ada" not in page
    assert log.read_text().count("serving ") >= 2
    assert not (course / "exchange").exists()  # no exchange folder, anywhere it was looked for
    for name in ("ada", "ben", "eve"):
        assert all(f"feedback for {name}" in p for p in people[name].pages())
