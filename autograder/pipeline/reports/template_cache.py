"""Compiled page templates kept between runs, as Python keeps a module's bytecode.

Compiling the feedback page's templates (nbconvert's chain, nbgrader's and
ours) costs about 70 ms of CPU in every run, and the class report's about 12,
though the templates change only with an upgrade. jinja2 can keep what it
compiled (:class:`jinja2.FileSystemBytecodeCache`); it compiles again whenever
a template's text differs from what was kept, so a changed template is never
served stale.

The folder is the user's cache (``$XDG_CACHE_HOME/autograder/templates``, else
``~/.cache/...``), made readable and writable by its owner only: what is kept
there is code the grader runs, so a folder someone else owns or may write in is
not used. Student code never reaches it (the sandbox shows it no home folder).
Any problem with the folder or a file in it costs only the time saved: the
template is compiled as if nothing were kept.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import Any

import jinja2

FOLDER = Path("autograder") / "templates"  #: under the user's cache folder


class KeptTemplates(jinja2.FileSystemBytecodeCache):
    """jinja2's cache on disk, for which an unreadable or unwritable file is a miss."""

    def load_bytecode(self, bucket: Any) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # a truncated or foreign file: compile as if none were kept
            bucket.reset()

    def dump_bytecode(self, bucket: Any) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:  # a full or read-only disk: the next run compiles again
            pass


def _cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def _owned_privately(folder: Path) -> bool:
    """Is ``folder`` a real folder of this user's, which no one else may write in?"""
    found = folder.lstat()
    return (
        stat.S_ISDIR(found.st_mode)
        and found.st_uid == os.geteuid()
        and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


@functools.cache
def kept_templates() -> KeptTemplates | None:
    """This user's cache of compiled templates, or None where there can be none (no home
    folder, a read-only one, or a folder another user owns or may write in)."""
    try:
        folder = _cache_home() / FOLDER
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _owned_privately(folder):
            return None
    except (OSError, RuntimeError):  # RuntimeError: no home folder to expand ~ to
        return None
    return KeptTemplates(str(folder))
