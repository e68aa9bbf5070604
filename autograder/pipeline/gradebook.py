"""The course's nbgrader gradebook, kept in step with the assignment's source.

nbgrader's gradebook keeps its own copy of the source's test cells (which it
puts back into every submission), so the assignment is recorded again whenever
its source or the course configuration changes: :func:`sources_hash` says
what it depends on. Used by a grading run (the course's gradebook, or a scratch
one for a dry run) and by each Dask worker (a scratch one of its own).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from . import internals, results
from .course import Assignment, config_files, course_directory


def ensure_gradebook(assignment: Assignment, db_url: str | None = None) -> str:
    """The course gradebook's URL, after recording the assignment in it if needed.

    The gradebook keeps its own copy of the source's test cells (which
    nbgrader puts back into every submission), so an edited source is recorded
    again; a stamp beside a SQLite gradebook remembers what was recorded.
    """
    coursedir = course_directory(assignment.root, assignment.config)
    coursedir.assignment_id = assignment.id
    if db_url is not None:
        coursedir.db_url = db_url
    db_url = str(coursedir.db_url)
    stamp = stamp_path(db_url, assignment)
    current = sources_hash(assignment)
    recorded = stamp is not None and stamp.is_file() and stamp.read_text() == current
    exchange = assignment.config.Exchange.get("root")
    if exchange and db_url == str(course_directory(assignment.root, assignment.config).db_url):
        Path(exchange).mkdir(parents=True, exist_ok=True)  # formgrader wants it to exist
    if not (recorded and results.gradebook_has_assignment(db_url, assignment)):
        internals.record_assignment(coursedir, assignment.config)
        if stamp is not None:
            results.write_atomic(stamp, current)
    return db_url


def stamp_path(db_url: str, assignment: Assignment) -> Path | None:
    """Beside a SQLite gradebook, the file saying which sources it has recorded."""
    if not db_url.startswith("sqlite:///"):
        return None
    database = Path(db_url[len("sqlite:///") :])
    return database.with_name(f".{database.name}.{assignment.id}.recorded")


def sources_hash(assignment: Assignment) -> str:
    """A hash of what recording the assignment depends on: its source folder and the config."""
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in assignment.source_dir.rglob("*")
        if p.is_file() and not any(part.startswith((".", "__pycache__")) for part in p.parts)
    )
    files += [assignment.root / name for name in config_files(assignment.root)]
    for path in files:
        digest.update(str(path.relative_to(assignment.root)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()
