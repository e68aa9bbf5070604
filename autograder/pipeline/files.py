"""Reading and writing files safely: whole or not at all, and never more than asked for.

Every writer of a grading result goes through :func:`write_atomic` (a crash
never leaves half a file); every file a student owns beside a notebook is read
through :func:`read_bounded` (never through a link, never more than a limit).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

#: bytes a file handed in beside a notebook may hold (nbgrader's timestamp.txt holds ~30)
MAX_SIDE_FILE = 4096


def write_atomic(path: Path | str, data: str | bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one step: never half a file, never the old one.

    mode: the file's permissions; by default its owner's alone (grades, pages
    and the gradebook's copies are the course's). A file another user must read
    (a page nbgrader's exchange hands to the student) says so.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data.encode() if isinstance(data, str) else data)
            if mode is not None:
                os.fchmod(out.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_bounded(path: Path, limit: int = MAX_SIDE_FILE) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path``, never through a link.

    None when it holds more, is no regular file, or cannot be read: a student
    owns the files beside their notebook in nbgrader's exchange, so none is
    read whole before its size is known.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None
