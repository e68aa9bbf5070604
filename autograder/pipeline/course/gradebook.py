"""The course's nbgrader gradebook, kept in step with the assignment's source.

nbgrader's gradebook keeps its own copy of the source's test cells (which it
puts back into every submission), so the assignment is recorded again whenever
its source or the course configuration changes: :func:`sources_hash` says
what it depends on. Used by a grading run (the course's gradebook, or a scratch
one for a dry run) and by each Dask worker (a scratch one of its own).
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograder.pipeline.course import internals
from autograder.pipeline.course.assignment import Assignment, config_files, course_directory
from autograder.pipeline.files import write_atomic

SQLITE = "sqlite:///"  #: how nbgrader's ``db_url`` names a SQLite file


def sqlite_url(path: Path | str) -> str:
    """The gradebook URL of the SQLite file at ``path``."""
    return f"{SQLITE}{path}"


def database_file(db_url: str) -> Path | None:
    """The SQLite file a gradebook URL names; None for any other database."""
    return Path(db_url.removeprefix(SQLITE)) if db_url.startswith(SQLITE) else None


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
    if not (recorded and has_assignment(db_url, assignment)):
        internals.record_assignment(coursedir, assignment.config)
        if stamp is not None:
            write_atomic(stamp, current)
    write_ahead(db_url)
    return db_url


NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "lustre", "gpfs",
     "fuse.sshfs", "afs"}
)  # fmt: skip


def filesystem_of(path: Path, mounts: str | None = None) -> str:
    """The type of the filesystem holding ``path`` (``ext4``, ``nfs4``), "" if unknown.

    mounts: ``/proc/self/mounts`` as text (read when not given); the deepest
    mount point above ``path`` is the one that holds it.
    """
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return ""
    path, best, kind = path.resolve(), -1, ""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = Path(fields[1].replace("\\040", " "))
        if path.is_relative_to(point) and len(point.parts) > best:
            best, kind = len(point.parts), fields[2]
    return kind


def write_ahead(db_url: str) -> None:
    """Put a SQLite gradebook in write-ahead-log mode, unless it is on a network filesystem.

    With WAL a commit writes and syncs one log instead of a rollback journal
    and the database, and formgrader can read while a run records. The mode is
    kept in the file, so every later connection (nbgrader's own included) uses
    it. SQLite's WAL needs memory shared between processes, which network
    filesystems (NFS, SMB, ...) do not give: there the file keeps its journal.
    """
    database = database_file(db_url)
    if database is None or filesystem_of(database.parent) in NETWORK_FILESYSTEMS:
        return
    with contextlib.closing(sqlite3.connect(database)) as connection:
        connection.execute("PRAGMA journal_mode=WAL")


def copy_database(source: Path, target: Path) -> None:
    """Copy the SQLite gradebook ``source`` to ``target`` as it stands, committed writes in its
    write-ahead log included (what formgrader just saved lives there until a checkpoint).

    SQLite's online backup: a consistent copy while other connections write,
    where copying the file alone would miss the log.
    """
    target.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(source)) as original:
        with contextlib.closing(sqlite3.connect(target)) as copy:
            original.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")  # one file: a copy is read alone


def stamp_path(db_url: str, assignment: Assignment) -> Path | None:
    """Beside a SQLite gradebook, the file saying which sources it has recorded."""
    database = database_file(db_url)
    if database is None:
        return None
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


def has_assignment(db_url: str, assignment: Assignment) -> bool:
    """Has ``nbgrader generate_assignment`` recorded the assignment in this gradebook?"""
    database = database_file(db_url)
    if database is not None and not database.exists():
        return False
    with Gradebook(db_url) as gb:
        try:
            recorded = gb.find_assignment(assignment.id)
        except MissingEntry:
            return False
        names = {nb.name for nb in recorded.notebooks if nb.grade_cells}
        return names == set(assignment.stems)


@contextlib.contextmanager
def existing(db_url: str) -> Iterator[Gradebook | None]:
    """The gradebook at ``db_url`` if there is one (None if its SQLite file is not there):
    for reading, since opening a gradebook creates it."""
    database = database_file(db_url)
    if database is not None and not database.is_file():
        yield None
        return
    with Gradebook(db_url) as gb:
        yield gb


def course_url(assignment: Assignment) -> str:
    """The course's gradebook URL, as its config gives it."""
    return str(course_directory(assignment.root, assignment.config).db_url)


def due_date(assignment: Assignment) -> datetime | None:
    """The assignment's due date (UTC) as the course's gradebook holds it; None if it has
    none, or there is no gradebook yet. Read only: nothing is created."""
    with existing(course_url(assignment)) as gb:
        try:
            return gb.find_assignment(assignment.id).duedate if gb else None
        except MissingEntry:
            return None


def hand_in_times(assignment: Assignment) -> dict[str, datetime]:
    """``{student_id: when they handed in}`` for every submission of ``assignment`` whose
    time the course's gradebook holds (none if there is no gradebook yet)."""
    with existing(course_url(assignment)) as gb:
        try:
            submissions = gb.find_assignment(assignment.id).submissions if gb else []
        except MissingEntry:
            return {}
        return {s.student.id: s.timestamp for s in submissions if s.timestamp is not None}
