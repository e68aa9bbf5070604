"""ngshare: nbgrader's exchange as a hub service, for hubs whose students share no filesystem.

On such a hub (Zero to JupyterHub's pods, or one Unix user for every server)
an exchange folder proves nothing about who wrote into it. ngshare (0.6.0, a
JupyterHub managed service) knows each request's user from their hub token:
a student's ``nbgrader submit`` (ngshare's plugin, ``ngshare_exchange``) is
recorded as theirs, at ngshare's own time, and their ``fetch_feedback`` brings
back only the pages of their own hand-ins.

The service speaks to ngshare's REST API (:class:`Ngshare`) with its own hub
token, as one of ngshare's admins: it makes the course and its instructors
(``c.Serve.ngshare_instructors``), and enrols each student as the course comes
to know them (no manual step); it lists the assignment's hand-ins, downloads
each to grade it, and uploads its page as the hand-in's feedback
(:class:`NgshareInbox`). What a student controls is the files of their
hand-in, read within the same bounds as a folder's (:mod:`.inbound`); a
``timestamp.txt`` among them is theirs, and is replaced by ngshare's time.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.students import plain_id
from autograder.pipeline.errors import UserError
from autograder.pipeline.submissions.submission import MAX_FILE, Submission
from autograder.serve import inbound
from autograder.serve.inbound import HandIn
from autograder.serve.policy import Serve

_log = logging.getLogger(__name__)

TIMEOUT = 30.0  #: seconds one request to ngshare may take
LIST_EVERY = 1.0  #: seconds between two lists of the assignment's hand-ins, at least
NO_FOLDER = Path("/nonexistent/ngshare")  #: a hand-in in ngshare has no folder of its own
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"  #: ngshare's, without the zone: times are UTC
#: bytes of one answer of ngshare's read, at most: a hand-in's whole bound, in base64 and JSON
MAX_ANSWER = 2 * inbound.MAX_BYTES


class NgshareError(Exception):
    """ngshare said no, or could not be reached; the words say which."""


class Ngshare:
    """ngshare's REST API at ``url`` (``http://127.0.0.1:10101/services/ngshare``), spoken
    with the hub token ``token``."""

    def __init__(self, url: str, token: str, timeout: float = TIMEOUT) -> None:
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout

    def call(self, method: str, *path: str, **fields: str) -> dict[str, Any]:
        """ngshare's answer to ``method`` on ``path`` (each part quoted), with ``fields``
        (the query of a GET, the form of a POST); :class:`NgshareError` unless it succeeded."""
        where = "/".join(urllib.parse.quote(part, safe="") for part in path)
        url, data = f"{self.url}/{where}", None
        encoded = urllib.parse.urlencode(fields)
        if method == "POST":
            data = encoded.encode()
        elif encoded:
            url = f"{url}?{encoded}"
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as error:
            body = error.read(MAX_ANSWER + 1)
        except (OSError, ValueError) as error:
            raise NgshareError(f"ngshare at {self.url} cannot be reached: {error}") from None
        if len(body) > MAX_ANSWER:  # a hand-in larger than any kept: not read whole
            raise NgshareError(f"ngshare: {method} {where}: an answer over {MAX_ANSWER:,} bytes")
        try:
            answer = json.loads(body)
        except ValueError:
            raise NgshareError(f"ngshare at {self.url} answered {body[:200]!r}") from None
        if not isinstance(answer, dict) or answer.get("success") is not True:
            said = answer.get("message") if isinstance(answer, dict) else answer
            raise NgshareError(f"ngshare: {method} {where}: {said}")
        return answer

    def make_course(self, course_id: str, instructors: list[str]) -> None:
        """The course, with ``instructors`` among its instructors (made if missing)."""
        try:
            self.call("POST", "course", course_id, instructors=json.dumps(instructors))
        except NgshareError as error:
            if "already exists" not in str(error):
                raise
        for name in instructors:
            self.call("POST", "instructor", course_id, name, first_name="", last_name="",
                      email="")  # fmt: skip

    def enrol(self, course_id: str, students: list[str]) -> None:
        """``students`` among the course's students (those already there stay)."""
        listed = [{"username": s, "first_name": "", "last_name": "", "email": ""} for s in students]
        self.call("POST", "students", course_id, students=json.dumps(listed))

    def hand_ins(self, course_id: str, assignment_id: str) -> list[tuple[str, str]]:
        """``(student, ngshare's time)`` of every hand-in of the assignment ([] before it is
        released)."""
        try:
            answer = self.call("GET", "submissions", course_id, assignment_id)
        except NgshareError as error:
            if "not found" in str(error).lower():
                return []
            raise
        found = []
        for entry in answer.get("submissions") or []:
            if isinstance(entry, dict):
                student, when = entry.get("student_id"), entry.get("timestamp")
                if isinstance(student, str) and isinstance(when, str):
                    found.append((student, when))
        return found

    def files(
        self, course_id: str, assignment_id: str, student: str, when: str
    ) -> list[tuple[str, bytes]]:
        """``(path, bytes)`` of each file of one hand-in."""
        answer = self.call("GET", "submission", course_id, assignment_id, student, timestamp=when)
        files = []
        for entry in answer.get("files") or []:
            path, content = entry.get("path"), entry.get("content")
            if isinstance(path, str) and isinstance(content, str):
                files.append((path, base64.b64decode(content.encode())))
        return files

    def give_feedback(
        self, course_id: str, assignment_id: str, student: str, when: str, files: dict[str, bytes]
    ) -> None:
        """``files`` ({name: bytes}) as the feedback of one hand-in, replacing any before."""
        listed = [
            {"path": name, "content": base64.b64encode(data).decode()}
            for name, data in files.items()
        ]
        self.call("POST", "feedback", course_id, assignment_id, student, timestamp=when,
                  files=json.dumps(listed))  # fmt: skip


class NgshareInbox:
    """The assignment's hand-ins in ngshare, as :class:`~.inbox.Inbox` (see the module)."""

    signed = False

    def __init__(
        self, client: Ngshare, course_id: str, assignment_id: str, instructors: list[str]
    ) -> None:
        self.client, self.course_id, self.assignment_id = client, course_id, assignment_id
        self.instructors = list(instructors)
        self.where = f"ngshare at {client.url} (course {course_id})"
        self.enrolled: set[str] = set()
        self.made = False  # the course and its instructors, once
        self.listed = 0.0  # when the hand-ins were last listed (time.monotonic())
        self.failing = ""  # what ngshare last failed with, said once

    @classmethod
    def for_course(cls, settings: Serve, course_id: str, assignment_id: str) -> NgshareInbox:
        """The inbox of ``c.Serve.ngshare_url``, with the service's hub token."""
        token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
        if not token:
            raise UserError(
                "c.Serve.ngshare_url is set, but there is no $JUPYTERHUB_API_TOKEN to speak to "
                "ngshare with: run serve as the hub's managed service (docs/graded-on-submit.md)"
            )
        client = Ngshare(settings.ngshare_url, token)
        return cls(client, course_id, assignment_id, list(settings.ngshare_instructors))

    def _failed(self, error: NgshareError) -> None:
        if str(error) != self.failing:
            _log.warning(f"warning: {error} (tried again in a moment)")
            self.failing = str(error)

    def key(self, student: str, when: str) -> str:
        """A hand-in's key, as nbgrader names a hand-in: ``<student>+<assignment>+<time>``."""
        return f"{student}+{self.assignment_id}+{when}"

    def new(self) -> Iterable[HandIn]:
        if time.monotonic() - self.listed < LIST_EVERY:
            return []
        self.listed = time.monotonic()
        try:
            listed = self.client.hand_ins(self.course_id, self.assignment_id)
        except NgshareError as error:
            self._failed(error)
            return []
        self.failing = ""
        found = []
        for student, when in listed:
            handed_in = _time(when)
            if handed_in is not None and plain_id(student):
                found.append(HandIn(self.key(student, when), student, handed_in, NO_FOLDER))
        return sorted(found, key=lambda h: (h.handed_in, h.key))

    def hand_in(self, key: str, student: str, handed_in: datetime) -> HandIn:
        return HandIn(key, student, handed_in, NO_FOLDER)

    def gone(self, hand_in: HandIn) -> bool:
        return False  # ngshare keeps every hand-in; one deleted there cannot be staged

    def whole(self, hand_in: HandIn, now: float | None = None) -> bool:
        return True  # ngshare records a hand-in whole, or not at all

    def completed(self, hand_in: HandIn) -> HandIn:
        return hand_in  # its time is ngshare's record of it

    def refusal(self, hand_in: HandIn, students: set[str]) -> str | None:
        return None  # the hub said whose token sent it

    def stage(self, hand_in: HandIn, into: Path, assignment: Assignment) -> Submission | None:
        when = hand_in.key.rsplit("+", 1)[-1]
        fetched = into.with_name(into.name + "-fetched")
        shutil.rmtree(fetched, ignore_errors=True)
        fetched.mkdir(parents=True, mode=0o700)
        try:
            files = self.client.files(self.course_id, assignment.id, hand_in.student_id, when)
            notes = _write_files(files, fetched)
            staged = inbound.stage(replace(hand_in, folder=fetched), into, assignment, False)
        except NgshareError as error:
            _log.warning(f"warning: {hand_in.key}: {error}")
            return None
        finally:
            shutil.rmtree(fetched, ignore_errors=True)
        if staged is not None:
            staged.notes.extend(notes)
        return staged

    def secret(self, hand_in: HandIn) -> tuple[str, int] | None:
        return None

    def release(self, hand_in: HandIn, assignment: Assignment, page: str, secret: str) -> None:
        """The page as the hand-in's feedback: one file per notebook (``<notebook>.html``),
        what ``nbgrader fetch_feedback`` puts in the student's ``feedback/<time>/``."""
        when = hand_in.key.rsplit("+", 1)[-1]
        pages = {f"{Path(name).stem}.html": page.encode() for name in assignment.notebooks}
        self.client.give_feedback(self.course_id, assignment.id, hand_in.student_id, when, pages)

    def enrol(self, students: set[str]) -> None:
        try:
            if not self.made:
                self.client.make_course(self.course_id, self.instructors)
                self.made = True
            new = sorted(students - self.enrolled - set(self.instructors))
            if new:
                self.client.enrol(self.course_id, new)
                self.enrolled |= set(new)
        except NgshareError as error:
            self._failed(error)


def _time(when: str) -> datetime | None:
    """ngshare's time of a hand-in (naive UTC); None if it is no time."""
    try:
        return datetime.strptime(when.removesuffix(" UTC").strip(), TIME_FORMAT)
    except ValueError:
        return None


def _write_files(files: list[tuple[str, bytes]], into: Path) -> list[str]:
    """Write a hand-in's ``files`` into ``into`` within a folder's bounds (:mod:`.inbound`):
    a path that would leave it, too deep, too many files, too large a file or more bytes
    than a hand-in may hold in all is left out; what was, for the student's page."""
    left: list[str] = []
    written = total = 0
    for name, data in files:
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts or name.startswith("/") or len(parts) > inbound.MAX_DEPTH:
            left.append(f"{name!r} (not a path inside the hand-in)")
            continue
        if (
            written >= inbound.MAX_FILES
            or len(data) > MAX_FILE
            or total + len(data) > inbound.MAX_BYTES
        ):
            left.append(f"{'/'.join(parts)} (too many files, or too large)")
            continue
        path = into.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except OSError:
            left.append(f"{'/'.join(parts)} (it could not be kept)")
            continue
        written += 1
        total += len(data)
    if not left:
        return []
    shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    return [f"left out of your hand-in: {shown}"]
