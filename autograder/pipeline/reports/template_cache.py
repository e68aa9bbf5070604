"""Compiled page templates, and the HTML of the release's text, kept between runs.

Compiling the feedback page's templates (nbconvert's chain, nbgrader's and
ours) costs about 70 ms of CPU in every run, and the class report's about 12,
though the templates change only with an upgrade. jinja2 can keep what it
compiled (:class:`jinja2.FileSystemBytecodeCache`); it compiles again whenever
a template's text differs from what was kept, so a changed template is never
served stale. Likewise the release's code cells, which every page shows and
each run highlighted again (about 70 ms for the lab's 62), and its prose,
which each run rendered from Markdown and sanitised again (about 55 ms for the
lab's 28 cells): their HTML is kept under a name made of their text and of
everything else the HTML depends on (:class:`KeptHTML`: the versions, the
options, the code that sanitises it), so a changed cell, a new pygments or
another style is made afresh. Only the course's own text is kept, never a
student's: a run grades and shows each student's work as if for the first time.

The folder is the user's cache (``$XDG_CACHE_HOME/autograder``, else
``~/.cache/autograder``), its parts readable and writable by their owner only:
what is kept there is code the grader runs and HTML its pages show unescaped,
so a folder someone else owns or may write in is not used. Student code never
reaches it (the sandbox shows it no home folder). Any problem with the folder
or a file in it costs only the time saved: the work is done as if nothing were
kept.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

FOLDER = Path("autograder") / "templates"  #: compiled templates, under the user's cache
HTML = Path("autograder") / "html"  #: the release's code and prose as HTML, under the user's cache
MAX_KEPT_BYTES = 8 * 2**20  #: a kept HTML file larger than this is not read


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


def _private_folder(part: Path) -> Path | None:
    """``part`` of the user's cache folder, made if need be; None where it cannot be one
    (no home folder, a read-only one, or a folder another user owns or may write in)."""
    try:
        folder = _cache_home() / part
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder if _owned_privately(folder) else None
    except (OSError, RuntimeError):  # RuntimeError: no home folder to expand ~ to
        return None


@functools.cache
def kept_templates() -> KeptTemplates | None:
    """This user's cache of compiled templates, or None where there can be none."""
    folder = _private_folder(FOLDER)
    return None if folder is None else KeptTemplates(str(folder))


class KeptHTML:
    """The HTML of a course's texts kept on disk: one file per set of texts and what made it.

    made_by: everything the HTML depends on besides the texts (for highlighted
    code, the versions of pygments and the lexer, the lexer's name, the
    formatter's options; for prose, the Markdown parser's, the sanitiser's and
    their code), as text; it is part of the file's name, with the texts.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, sources: Sequence[str], made_by: str) -> Path:
        digest = hashlib.sha256(json.dumps([made_by, sorted(sources)]).encode()).hexdigest()
        return self.folder / f"{digest}.json"

    def load(self, sources: Sequence[str], made_by: str) -> dict[str, str]:
        """``{source: HTML}`` kept for exactly these ``sources``; {} if none (or unreadable)."""
        path = self._path(sources, made_by)
        try:
            if path.stat().st_size > MAX_KEPT_BYTES:
                return {}
            kept = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(kept, dict) or set(kept) != set(sources):
            return {}
        return {k: v for k, v in kept.items() if isinstance(v, str)}

    def save(self, highlighted: dict[str, str], made_by: str) -> None:
        """Keep ``{source: HTML}``, written whole or not at all (a full disk: not kept)."""
        path = self._path(list(highlighted), made_by)
        try:
            handle = tempfile.NamedTemporaryFile(
                "w", dir=self.folder, prefix=path.name, suffix=".tmp", delete=False
            )
        except OSError:
            return
        try:
            with handle:
                json.dump(highlighted, handle)
            os.replace(handle.name, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(handle.name)


@functools.cache
def kept_html() -> KeptHTML | None:
    """This user's cache of the HTML of course texts, or None where there can be none."""
    folder = _private_folder(HTML)
    return None if folder is None else KeptHTML(folder)
