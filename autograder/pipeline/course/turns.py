"""One command at a time changes a course: the lock ``grade``, ``extend``, ``remove`` and the
exports take their turn on.

Two commands at once on one course would interleave their writes to the
gradebook, the course's records and its folders: a ``remove`` during a
grading run was undone by it, or crashed it. Every command that changes the
course holds :func:`turn` for the whole of its work; a second one says whose
turn it is and waits. The lock is ``flock`` on a file in the course folder:
the kernel releases it when its holder exits, however it exits, so a killed
command never leaves the course locked. The file names its holder (command
and pid) for the waiting command's message, and nothing else reads it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from autograder import log

_log = logging.getLogger(__name__)

FILE = ".grading.lock"  #: in the course folder


class Busy(Exception):
    """Another command has its turn on the course (for a caller that would rather not wait)."""


#: the course folders this process holds the lock of, with how deep: a command that calls
#: another (a grade run that records removals) holds it once
_held: dict[Path, int] = {}


def lock_file(root: Path) -> Path:
    """The course's lock file."""
    return Path(root) / FILE


def holder(root: Path) -> str:
    """Who holds (or last held) the course's lock, as its file says ("" if it does not)."""
    try:
        return lock_file(root).read_text(errors="replace").strip()[:200]
    except OSError:
        return ""


@contextlib.contextmanager
def turn(root: Path, command: str, wait: bool = True) -> Iterator[None]:
    """Hold the course's lock for the block, waiting (and saying so) while another holds it.

    root: the course folder; command: what this process is doing, for the
    message another command prints while it waits (``remove ada``); wait:
    False raises :class:`Busy` at once instead (the service, which has other
    work to do meanwhile).
    """
    root = Path(root).resolve()
    if root in _held:  # this process already has its turn
        _held[root] += 1
        try:
            yield
        finally:
            _held[root] -= 1
        return
    path = lock_file(root)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = holder(root) or "another command"
            if not wait:
                raise Busy(who) from None
            _log.info(f"waiting for {who} to finish on the course {root}", extra=log.TO_STDERR)
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"`{command}` (pid {os.getpid()})\n")
        handle.flush()
        _held[root] = 1
        try:
            yield
        finally:
            del _held[root]
            handle.seek(0)
            handle.truncate()
            handle.flush()
