"""Where the service's hand-ins come from, and where their pages go: the exchange.

Two exchanges, one interface (:class:`Inbox`), so the service's loop, queue,
policy and journal are the same for both:

- :class:`FolderInbox`: nbgrader's own exchange, a folder (:mod:`.inbound`):
  a hand-in is a folder its student wrote, read as untrusted (its owner, its
  change times); a page goes back under the secret the hand-in held;
- :class:`~autograder.serve.ngshare.NgshareInbox`: ngshare, nbgrader's exchange
  service for hubs whose students share no filesystem: a hand-in is what
  ngshare recorded for the user whose hub token sent it, at ngshare's own time;
  a page goes back for that hand-in's time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Protocol

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.results import handed_back
from autograder.pipeline.submissions.submission import Submission
from autograder.serve import inbound
from autograder.serve.inbound import HandIn


class Inbox(Protocol):
    """An exchange as the service uses it (see the module's docstring)."""

    #: the exchange, as the service's first line names it
    where: str
    #: does a page go back under its hand-in's secret (``submission_secret.txt``)?
    signed: bool

    def new(self) -> Iterable[HandIn]:
        """Hand-ins that may be new since the last look (those seen before too)."""
        ...

    def hand_in(self, key: str, student: str, handed_in: datetime) -> HandIn:
        """The hand-in ``key``, as the journal holds it."""
        ...

    def gone(self, hand_in: HandIn) -> bool:
        """Was the hand-in taken away before it was whole?"""
        ...

    def whole(self, hand_in: HandIn, now: float | None = None) -> bool:
        """Has its student finished handing it in?"""
        ...

    def completed(self, hand_in: HandIn) -> HandIn:
        """``hand_in`` with its time the one its content was complete."""
        ...

    def refusal(self, hand_in: HandIn, students: set[str]) -> str | None:
        """Why the hand-in is not its student's own; None if it is."""
        ...

    def stage(self, hand_in: HandIn, into: Path, assignment: Assignment) -> Submission | None:
        """Its files in ``into``, read as a submission; None if it is gone."""
        ...

    def secret(self, hand_in: HandIn) -> tuple[str, int] | None:
        """The secret its pages go back under, and when it last changed (ns), if signed."""
        ...

    def release(self, hand_in: HandIn, assignment: Assignment, page: str, secret: str) -> None:
        """Return ``page`` for ``hand_in`` (``secret``: as :meth:`secret` gave it, or "")."""
        ...

    def enrol(self, students: set[str]) -> None:
        """Make sure the exchange lets ``students`` hand in (nothing to do for a folder)."""
        ...


class FolderInbox:
    """nbgrader's exchange folder (:mod:`.inbound`): ``<root>/<course id>/inbound``."""

    signed = True

    def __init__(self, root: Path, course_id: str, assignment_id: str) -> None:
        self.root, self.course_id = Path(root), course_id
        self.folder = inbound.inbound_folder(self.root, course_id)
        self.where = str(self.folder)
        self.watcher = inbound.Watcher(self.root, course_id, assignment_id)

    def new(self) -> Iterable[HandIn]:
        return self.watcher.new()

    def hand_in(self, key: str, student: str, handed_in: datetime) -> HandIn:
        named = inbound.named_time(key)
        off = named is not None and abs((handed_in - named).total_seconds()) > inbound.SKEW
        return HandIn(key, student, handed_in, self.folder / key, named if off else None)

    def gone(self, hand_in: HandIn) -> bool:
        return not _lexists(hand_in.folder)

    def whole(self, hand_in: HandIn, now: float | None = None) -> bool:
        return inbound.whole(hand_in, now)

    def completed(self, hand_in: HandIn) -> HandIn:
        return inbound.completed(hand_in)

    def refusal(self, hand_in: HandIn, students: set[str]) -> str | None:
        return inbound.owner_refusal(hand_in, students)

    def stage(self, hand_in: HandIn, into: Path, assignment: Assignment) -> Submission | None:
        return inbound.stage(hand_in, into, assignment)

    def secret(self, hand_in: HandIn) -> tuple[str, int] | None:
        return hand_in.secret

    def release(self, hand_in: HandIn, assignment: Assignment, page: str, secret: str) -> None:
        stems = inbound.page_stems(hand_in, assignment)
        handed_back.release_to_exchange(self.root, self.course_id, secret, stems, page)

    def enrol(self, students: set[str]) -> None:
        return None


def _lexists(path: Path) -> bool:
    """Is there anything at ``path`` (a link too, never followed)?"""
    try:
        path.lstat()
    except OSError:
        return False
    return True
