"""Finding the class's submissions, wherever the TA downloaded them from.

Three shapes are understood:

- nbgrader's layout: ``SUBMISSIONS/<student_id>/08-multi-head/multi_head.ipynb``;
- a folder of files downloaded from an LMS;
- a ``.zip`` of such files (read in memory, never extracted to disk).

For LMS files the student id comes from the file name: Canvas
(``doejane_LATE_1234_5678_multi_head-1.ipynb``), Moodle
(``Jane Doe_1234_assignsubmission_file_multi_head.ipynb``, or a folder of that
name), a custom ``--pattern`` with a ``(?P<student>...)`` group, or else the
file's name itself. A student who submitted twice is graded on the newest file.

Links are not followed out of the submissions folder: a link there (a TA's copy
mistake, or a student's trick) could otherwise put the instructor's source
notebook, or another course's files, into a student's feedback page.
"""

import hashlib
import os
import re
import sys
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from . import course

MAX_FILE = 20 * 2**20  # bytes; larger files are not read (and graded as unreadable)

CANVAS = re.compile(
    r"^(?P<student>[a-z0-9]+)_(?:late_)?\d+_\d+_.*?(?:-(?P<version>\d+))?\.\w+$", re.IGNORECASE
)
MOODLE = re.compile(r"^(?P<student>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_")


@dataclass
class Submission:
    """One student's file: its bytes, where it came from, and when it was made."""

    student_id: str
    data: bytes
    origin: str
    modified: datetime
    version: int = 0
    problems: list = field(default_factory=list)

    @property
    def sha256(self):
        """The content hash that decides whether a rerun must grade it again."""
        return hashlib.sha256(self.data).hexdigest()


def slug(text):
    """A student id safe as a folder name: ``Jane Doe`` -> ``jane_doe``."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "unknown"


def student_of(name, pattern=None):
    """``(student_id, version)`` from an LMS file or folder name."""
    base = name.split("/")
    for part in (base[0], base[-1]) if len(base) > 1 else (base[-1],):
        if pattern:
            match = re.search(pattern, part)
            if match:
                return slug(match.group("student")), 0
            continue
        match = MOODLE.match(part)
        if match:
            return slug(match.group("student")), 0
        match = CANVAS.match(part)
        if match:
            return slug(match.group("student")), int(match.group("version") or 0)
    stem = Path(base[-1]).name.split(".")[0]
    stem = re.sub(rf"[_-]?{Path(course.NOTEBOOK).stem}$", "", stem) or stem
    return slug(stem), 0


def _newest(found):
    """One submission per student: the newest (then the highest resubmission number)."""
    chosen = {}
    for sub in found:
        best = chosen.get(sub.student_id)
        if best is None or (sub.modified, sub.version) > (best.modified, best.version):
            chosen[sub.student_id] = sub
    return [chosen[k] for k in sorted(chosen)]


def _too_large(size):
    return [f"the file is {size / 2**20:.1f} MiB, over the limit of {MAX_FILE // 2**20} MiB"]


def _read(path):
    """``(bytes, problems)``: a file over :data:`MAX_FILE` is not read."""
    size = path.stat().st_size
    if size > MAX_FILE:
        return b"", _too_large(size)
    return path.read_bytes(), []


def _inside(path, root):
    """Is ``path``, links resolved, inside ``root``? Warns about it when not."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    if real == top or real.startswith(top + os.sep):
        return True
    print(f"warning: skipped {path}: it links outside the submissions folder", file=sys.stderr)
    return False


def from_nbgrader_layout(folder):
    """Submissions in nbgrader's layout below ``folder``; [] if it is not laid out so."""
    found = []
    for student in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        assignment = student / course.ASSIGNMENT
        if not assignment.is_dir():
            continue
        path = assignment / course.NOTEBOOK
        if not _inside(path, folder):
            continue
        data, problems = _read(path) if path.is_file() else (b"", [])
        stamp = assignment / "timestamp.txt"
        modified = datetime.fromtimestamp(path.stat().st_mtime if path.is_file() else 0)
        if stamp.is_file():
            try:
                modified = datetime.fromisoformat(stamp.read_text().strip()[:26])
            except ValueError:
                pass
        found.append(Submission(student.name, data, str(path), modified, problems=problems))
    return found


def from_folder(folder, pattern=None):
    """Submissions from a flat (or one-level) folder of LMS downloads."""
    found = []
    root = Path(folder)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(".") or "/." in relative or "__MACOSX" in relative:
            continue
        if not _inside(path, root):
            continue
        student, version = student_of(relative, pattern)
        modified = datetime.fromtimestamp(path.stat().st_mtime)
        data, problems = _read(path)
        found.append(Submission(student, data, relative, modified, version, problems))
    return _newest(found)


def from_zip(path, pattern=None):
    """Submissions from a ``.zip`` downloaded from an LMS, read without extracting."""
    found = []
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir() or "__MACOSX" in name or Path(name).name.startswith("."):
                continue
            student, version = student_of(name, pattern)
            data, problems = b"", _too_large(info.file_size)
            if info.file_size <= MAX_FILE:
                with archive.open(info) as member:
                    data, problems = member.read(MAX_FILE + 1)[:MAX_FILE], []
            stamp = datetime(*info.date_time)
            found.append(Submission(student, data, name, stamp, version, problems))
    return _newest(found)


def collect(where, pattern=None):
    """Every submission at ``where`` (a folder in either layout, or a .zip), one per student."""
    where = Path(where)
    if where.is_dir():
        where = Path(os.path.realpath(where))  # the folder itself may be a link; its insides not
    if not where.exists():
        raise FileNotFoundError(f"no such folder or file: {where}")
    if where.is_file():
        if not zipfile.is_zipfile(where):
            raise ValueError(f"{where} is a file but not a .zip archive")
        return from_zip(where, pattern)
    laid_out = from_nbgrader_layout(where)
    return laid_out if laid_out else from_folder(where, pattern)
