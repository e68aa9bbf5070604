"""Formgrader as a TA has it open: a Jupyter server with nbgrader's formgrader on the loopback.

Tests talk to its HTTP API as formgrader's own page does (list submissions,
give a manual grade, write a comment, press "autograde").
"""

import json
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Any

TOKEN = "formgrader-test"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Formgrader:
    """A Jupyter server with nbgrader's formgrader, serving a course on the loopback."""

    def __init__(self, course_dir):
        self.base = f"http://127.0.0.1:{free_port()}"
        port = self.base.rsplit(":", 1)[1]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
             f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={course_dir}"],
            cwd=course_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                self.call("GET", "/api/status")
                return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise AssertionError("formgrader did not start")

    def call(self, method, path, body=None):
        request = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"null")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)

    def grade(self, assignment: str, notebook: str, student: str, cell: str, score: float) -> None:
        """Give ``student``'s cell ``cell`` a manual score, as a TA does on formgrader's page."""
        listed = self.call("GET", f"/formgrader/api/submitted_notebooks/{assignment}/{notebook}")
        (theirs,) = [s for s in listed if s["student"] == student]
        grades = self.call("GET", f"/formgrader/api/grades?submission_id={theirs['id']}")
        (found,) = [g for g in grades if g["name"] == cell]
        self.call("PUT", f"/formgrader/api/grade/{found['id']}", {"manual_score": score})

    def needs_grading(self, assignment: str, notebook: str) -> dict[str, bool]:
        """``{student: does formgrader list their notebook as needing a manual grade}``."""
        listed = self.call("GET", f"/formgrader/api/submitted_notebooks/{assignment}/{notebook}")
        return {s["student"]: bool(s["needs_manual_grade"]) for s in listed}

    def __enter__(self) -> "Formgrader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
