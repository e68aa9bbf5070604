"""One command at a time changes a course: the lock ``grade``, ``extend``, ``remove`` and the
exports take their turn on.

Two commands at once on one course would interleave their writes to the
gradebook, the course's records and its folders: a ``remove`` during a
grading run was undone by it, or crashed it. Every command that changes the
course holds :func:`turn` for the whole of its work; a second one says whose
turn it is and waits. The lock is ``flock`` on a file in the course folder:
the kernel releases it when its holder exits, however it exits, so a killed
command never leaves the course locked (:mod:`~autograder.pipeline.locks`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from autograder.pipeline import locks

FILE = ".grading.lock"  #: in the course folder


#: the course folders this process holds the lock of, with how deep: a command that calls
#: another (a grade run that records removals) holds it once
_held: dict[Path, int] = {}


def lock_file(root: Path) -> Path:
    """The course's lock file."""
    return Path(root) / FILE


def holder(root: Path) -> str:
    """Who holds (or last held) the course's lock, as its file says ("" if it does not)."""
    return locks.holder(lock_file(root))


@contextlib.contextmanager
def turn(root: Path, command: str, wait: bool = True) -> Iterator[None]:
    """Hold the course's lock for the block, waiting (and saying so) while another holds it.

    root: the course folder; command: what this process is doing, for the
    message another command prints while it waits (``remove ada``); wait:
    False raises :class:`~autograder.pipeline.locks.Busy` at once instead (the
    service, which has other work to do meanwhile).
    """
    root = Path(root).resolve()
    if root in _held:  # this process already has its turn
        _held[root] += 1
        try:
            yield
        finally:
            _held[root] -= 1
        return
    waiting = f"waiting for {{who}} to finish on the course {root}"
    with locks.held(lock_file(root), f"`{command}`", wait, waiting):
        _held[root] = 1
        try:
            yield
        finally:
            del _held[root]
