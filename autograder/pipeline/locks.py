"""Locks on files: the one way a command holds something of a course for itself.

Three things are held so (each through :func:`held`): the course, by a command
that changes it (:mod:`~autograder.pipeline.course.turns`); a class folder, by
the run writing it (:func:`~autograder.pipeline.results.store.exclusive`); and
the course's graded-on-submit service, by the one running
(:func:`~autograder.serve.service.only_service`). Each is ``flock`` on a file:
the kernel releases it when its holder exits, however it exits, so a killed
command never leaves anything locked. The file names its holder (what it does,
and its pid) for the message of whoever waits; nothing else reads it.
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


class Busy(Exception):
    """Another process holds the lock (for a caller that would rather not wait); its words
    name the holder, as the lock file says."""


def holder(path: Path) -> str:
    """Who holds (or last held) the lock at ``path``, as its file says ("" if it does not)."""
    try:
        return Path(path).read_text(errors="replace").strip()[:200]
    except OSError:
        return ""


@contextlib.contextmanager
def held(path: Path, doing: str, wait: bool = True, waiting: str = "") -> Iterator[None]:
    """Hold the lock at ``path`` for the block.

    doing: what this process does, written into the file with its pid for the
    message of a process that waits (``\\`remove ada\\```); wait: False raises
    :class:`Busy` at once instead of waiting; waiting: the line said while
    waiting, ``{who}`` standing for the holder (empty: the holder and the path).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            who = handle.read().strip()[:200] or "another process"
            if not wait:
                raise Busy(who) from None
            line = waiting or f"waiting for {{who}} to finish with {path}"
            _log.info(line.replace("{who}", who), extra=log.TO_STDERR)
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"{doing} (pid {os.getpid()})\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
