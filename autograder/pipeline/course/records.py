"""The course's own TOML records beside its config: a table per assignment, an entry per student.

``extensions.toml`` (:mod:`~autograder.pipeline.course.extensions`) and
``removals.toml`` (:mod:`~autograder.pipeline.course.removals`) are both::

    ["hw1"]
    "jane_doe-4711" = { ... }

They are read with ``tomllib`` and written with ``tomli_w``, a real TOML
writer: a note a TA typed (a carriage return, a quote, any script) reads back
as it was typed. A file that cannot be read is the user's mistake, said in
one line; nothing is written over it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from autograder.pipeline.errors import UserError
from autograder.pipeline.files import write_atomic


def read(file: Path) -> dict[str, Any]:
    """Every assignment's table in ``file`` (empty when there is no file)."""
    if not file.is_file():
        return {}
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{file}: not TOML: {error}") from None


def table(file: Path, assignment_id: str) -> dict[str, Any]:
    """``assignment_id``'s table in ``file``: ``{student_id: entry}`` (empty if none)."""
    found = read(file).get(assignment_id, {})
    if not isinstance(found, dict):
        raise UserError(f"{file}: [{assignment_id}] must be a table of students")
    return found


def text(file: Path, assignment_id: str, entries: dict[str, dict[str, Any]], about: str) -> str:
    """``file``'s text with ``assignment_id``'s table replaced by ``entries``.

    about: comment lines at the top, saying what the file is; every other
    assignment's table is kept as it was read.
    """
    tables = {name: found for name, found in read(file).items() if name != assignment_id}
    if entries:
        tables[assignment_id] = dict(sorted(entries.items()))
    body = tomli_w.dumps(dict(sorted(tables.items())))
    return "".join(f"# {line}\n" for line in about.splitlines()) + "\n" + body


def write(file: Path, assignment_id: str, entries: dict[str, dict[str, Any]], about: str) -> None:
    """Write :func:`text` to ``file``, in one step."""
    write_atomic(file, text(file, assignment_id, entries, about))
