"""One student's submission as collected: its files, where their bytes are, and when.

A class of thousands is never all in memory: collection reads each file once,
to take its sha256, and keeps where it is (:class:`FileRef`: a file, or a
member of a ``.zip``); the worker that grades it reads it again. The helpers
here are what every layout (:mod:`.nbgrader_layout`, :mod:`.lms_files`) reads
files with: capped at :data:`MAX_FILE` bytes, never through a link that leaves
the submissions folder, and under a plain student id only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from autograder.pipeline.course.students import plain_id

_log = logging.getLogger(__name__)

MAX_FILE = 20 * 2**20  #: bytes; larger files are not read (and graded as unreadable)


@dataclass(frozen=True)
class FileRef:
    """Where one submitted file's bytes are: a file, or a member of a ``.zip``."""

    path: str
    member: str = ""

    def read(self) -> bytes:
        """The file's bytes (at most :data:`MAX_FILE` of them)."""
        if not self.member:
            with open(self.path, "rb") as handle:
                return handle.read(MAX_FILE)
        with open_zip(self.path) as archive, archive.open(self.member) as member:
            return member.read(MAX_FILE)


class OnDisk(Mapping[str, bytes]):
    """``{notebook file name: bytes}``, each read from where it was found when asked for.

    A class of thousands is never all in memory: collection reads each file
    once, to take its sha256, and lets it go; the worker that grades it (and
    the main process, to keep a copy in ``submitted/``) reads it again. Files
    that could not be read are held as ``b""``.
    """

    def __init__(self) -> None:
        self.refs: dict[str, FileRef] = {}
        self.held: dict[str, bytes] = {}
        self.digests: dict[str, bytes] = {}

    def add(self, name: str, ref: FileRef, data: bytes) -> None:
        """Remember where ``name`` is, and the digest of ``data``, its bytes as read now."""
        self.held.pop(name, None)
        self.refs[name], self.digests[name] = ref, hashlib.sha256(data).digest()

    def hold(self, name: str, data: bytes) -> None:
        """Keep ``data`` itself (an unreadable file's ``b""``)."""
        self.refs.pop(name, None)
        self.held[name], self.digests[name] = data, hashlib.sha256(data).digest()

    def take(self, name: str, other: OnDisk) -> None:
        """Take ``name`` over from ``other``, as it was collected there."""
        if name in other.refs:
            self.refs[name] = other.refs[name]
        else:
            self.held[name] = other.held[name]
        self.digests[name] = other.digests[name]

    def digest(self, name: str) -> bytes:
        """The sha256 of ``name``'s bytes as collected."""
        return self.digests[name]

    def __getitem__(self, name: str) -> bytes:
        if name in self.held:
            return self.held[name]
        return self.refs[name].read()

    def __iter__(self) -> Iterator[str]:
        return iter([*self.refs, *self.held])

    def __len__(self) -> int:
        return len(self.refs) + len(self.held)


@dataclass
class Submission:
    """One student's work: each notebook's bytes, where it came from, and when.

    files: ``{notebook file name: bytes}`` for the notebooks found (an
    :class:`OnDisk` when collected, read again when asked for);
    unreadable: ``{notebook file name: why}`` for files found but not read;
    modified: when the newest file was made (chooses between resubmissions);
    timestamp: when it was handed in, from nbgrader's ``timestamp.txt`` only
    (what nbgrader's late penalties go by; a download time is no hand-in time).
    """

    student_id: str
    files: Mapping[str, bytes]
    origin: str
    modified: datetime
    version: int = 0
    unreadable: dict[str, str] = field(default_factory=dict)
    timestamp: datetime | None = None
    lms_id: str = ""  # the LMS's own id of the student (Canvas user id, Moodle participant)
    name: str = ""  # the student's name as the LMS gave it, for people to read
    marked_late: bool = False  # the LMS marked it late without saying when (Canvas's _LATE_)
    renamed: dict[str, str] = field(default_factory=dict)  # notebook -> the file graded as it
    notes: list[str] = field(default_factory=list)  # what was wrong beside the notebooks

    @property
    def sha256(self) -> str:
        """The content hash that decides whether a rerun must grade it again."""
        digest = hashlib.sha256()
        for name in sorted(self.files):
            if isinstance(self.files, OnDisk):
                of_file = self.files.digest(name)
            else:
                of_file = hashlib.sha256(self.files[name]).digest()
            digest.update(name.encode() + b"\0" + of_file)
        return digest.hexdigest()

    def in_memory(self) -> Submission:
        """A copy holding its files' bytes, for a worker on another machine."""
        return dataclasses.replace(self, files=dict(self.files))


def too_large(size: int) -> str:
    return f"the file is {size / 2**20:.1f} MiB, over the limit of {MAX_FILE // 2**20} MiB"


def one_file(notebook: str, ref: FileRef, data: bytes, why: str) -> OnDisk:
    """An :class:`OnDisk` of one file: where it is, or ``b""`` when it could not be read."""
    one = OnDisk()
    if why:
        one.hold(notebook, data)
    else:
        one.add(notebook, ref, data)
    return one


def read_capped(path: Path) -> tuple[bytes, str]:
    """``(bytes, why unreadable)``: a file over :data:`MAX_FILE` is not read, nor one that grows
    past it while it is read (never more than the limit is held)."""
    size = path.stat().st_size
    if size > MAX_FILE:
        return b"", too_large(size)
    with path.open("rb") as handle:
        data = handle.read(size + 1)  # what stat said, and a byte to see whether it grew
        if len(data) > size:
            data += handle.read(MAX_FILE + 1 - len(data))
    if len(data) > MAX_FILE:
        return b"", too_large(len(data))
    return data, ""


def inside(path: Path, root: Path) -> bool:
    """Is ``path``, links resolved, inside ``root``? Warns about it when not."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    if real == top or real.startswith(top + os.sep):
        return True
    _log.warning(f"warning: skipped {path}: it links outside the submissions folder")
    return False


def not_plain(student_id: str, where: str) -> bool:
    """True (after a warning) if ``student_id`` is no plain id
    (:func:`~autograder.pipeline.course.students.plain_id`)."""
    if plain_id(student_id):
        return False
    _log.warning(
        f"warning: skipped {where}: {student_id!r} is not a student id (letters, digits and "
        ". _ - @ +, starting with a letter or digit): rename the folder"
    )
    return True


UTF8_NAMES = 0x800  #: the zip flag bit that says a member's name is UTF-8


def open_zip(path: Path | str) -> zipfile.ZipFile:
    """``path`` opened as a zip, each member's name read as UTF-8 first.

    A zip tool that sets no UTF-8 flag (Info-ZIP's ``zip``, older Windows tools,
    a Canvas download re-zipped) still writes names in UTF-8 on Linux and
    macOS; Python reads such a name in the legacy code page (cp437), turning
    ``müller`` into ``m├╝ller``. A name whose bytes are valid UTF-8 is read as
    UTF-8 (as Info-ZIP's ``unzip`` does); any other keeps the legacy reading.
    """
    archive = zipfile.ZipFile(path)
    for info in archive.infolist():
        if info.flag_bits & UTF8_NAMES or info.filename.isascii():
            continue
        try:
            name = info.filename.encode("cp437").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        archive.NameToInfo.pop(info.filename, None)
        info.filename = name
        archive.NameToInfo[name] = info
    return archive
