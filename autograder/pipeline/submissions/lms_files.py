"""Files downloaded from an LMS: a folder of them, or a ``.zip``.

The student id comes from the LMS's own key, so it is one per person and
stable from run to run: the Canvas user id
(``doejane_LATE_1234_5678_hw1-1.ipynb`` -> ``doejane-1234``), the Moodle
participant number (``Jane Doe_1234_assignsubmission_file_hw1.ipynb``, or a
folder of that name -> ``jane_doe-1234``; names in any script), a custom
``--pattern`` with a ``(?P<student>...)`` group (and an optional ``(?P<lms>...)``
key), or else the file's name itself. The readable name is kept beside the id
(``Submission.name``). When an assignment has several notebooks, an LMS file
belongs to the notebook whose name it contains. A student who submitted twice
is graded on the newest file, the other named in a warning.
"""

from __future__ import annotations

import logging
import os
import re
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.lms import canvas, moodle
from autograder.pipeline.lms.grades import Identity, slug
from autograder.pipeline.submissions.submission import (
    MAX_FILE,
    FileRef,
    OnDisk,
    Submission,
    inside,
    not_plain,
    one_file,
    read_capped,
    too_large,
)

_log = logging.getLogger(__name__)


def identify(name: str, stems: tuple[str, ...] = (), pattern: str | None = None) -> Identity:
    """Who handed in the LMS file or folder ``name`` (a path relative to the download).

    The participant folder (first part) speaks before the file name (last part),
    and a Canvas name is read as Canvas's before Moodle's is tried, so a file
    name a student chose cannot pass for another participant's.
    stems: the assignment's notebook names without ``.ipynb``, stripped from a
    plain file name (``ben_hw1.ipynb`` -> ``ben``).
    """
    base = name.split("/")
    for part in (base[0], base[-1]) if len(base) > 1 else (base[-1],):
        if pattern:
            match = re.search(pattern, part)
            if match:
                key = match.groupdict().get("lms") or ""
                student = slug(match.group("student"))
                return Identity(f"{student}-{key}" if key else student, 0, key, match["student"])
            continue
        who = canvas.identity(part) or moodle.identity(part)
        if who is not None:
            return who
    stem = Path(base[-1]).name.split(".")[0]
    for notebook in sorted(stems, key=len, reverse=True):
        stripped = re.sub(rf"[_-]?{re.escape(notebook)}$", "", stem)
        if stripped != stem:
            return Identity(slug(stripped or stem))
    return Identity(slug(stem))


def student_of(
    name: str, stems: tuple[str, ...] = (), pattern: str | None = None
) -> tuple[str, int]:
    """``(student_id, version)`` from an LMS file or folder name (:func:`identify`)."""
    who = identify(name, stems, pattern)
    return who.student_id, who.version


def lms_named(name: str, pattern: str | None = None) -> bool:
    """Is ``name`` (one path part) an LMS's file or participant folder name?"""
    if pattern and re.search(pattern, name):
        return True
    return canvas.identity(name) is not None or moodle.identity(name) is not None


def notebook_of(name: str, assignment: Assignment) -> str | None:
    """Which of the assignment's notebooks an LMS file is: the only one, or the one it names."""
    if len(assignment.notebooks) == 1:
        return assignment.notebooks[0]
    named = [n for n in assignment.notebooks if Path(n).stem in Path(name).name]
    return max(named, key=len) if named else None


@dataclass
class LmsUpload:
    who: Identity  # whose file, as the LMS names them
    notebook: str
    data: OnDisk  # this one file, under its notebook's name
    origin: str
    modified: datetime
    why: str


def _warn_shared(files: list[LmsUpload]) -> None:
    """Warn when two students share a name, or two claim one LMS id (both kept apart)."""
    names: dict[str, set[str]] = {}
    keys: dict[str, set[str]] = {}
    for item in files:
        if item.who.lms_id:
            names.setdefault(slug(item.who.name or item.who.student_id), set()).add(
                item.who.student_id
            )
            keys.setdefault(item.who.lms_id, set()).add(item.who.student_id)
    said = (
        (names, "{n} students are called {what}: {ids}; graded apart, each by the LMS's own id"),
        (keys, "LMS id {what} is claimed by {ids}: check these files; the exports write neither"),
    )
    for groups, message in said:
        for what, ids in sorted(groups.items()):
            if len(ids) > 1:
                text = message.format(n=len(ids), what=what, ids=", ".join(sorted(ids)))
                _log.warning(f"warning: {text}")


def combine(found: list[LmsUpload]) -> list[Submission]:
    """One submission per student, each notebook the newest file (then the highest version).

    Older files, names two students share and LMS ids two students claim are
    named in warnings: two people are never merged, nor one silently dropped.
    """
    chosen: dict[tuple[str, str], LmsUpload] = {}
    for item in sorted(found, key=lambda f: (f.modified, f.who.version)):
        key = (item.who.student_id, item.notebook)
        earlier = chosen.get(key)
        if earlier is not None:
            _log.warning(
                f"warning: {item.who.student_id}: two files for {item.notebook}, {earlier.origin} "
                f"and {item.origin}; grading the newer, {item.origin}"
            )
        chosen[key] = item
    _warn_shared(list(chosen.values()))
    students: dict[str, Submission] = {}
    for (student_id, notebook), item in sorted(chosen.items()):
        sub = students.setdefault(
            student_id,
            Submission(student_id, OnDisk(), item.origin, item.modified, item.who.version),
        )
        assert isinstance(sub.files, OnDisk)
        sub.files.take(notebook, item.data)
        sub.lms_id = sub.lms_id or item.who.lms_id
        sub.name = sub.name or item.who.name
        sub.marked_late = sub.marked_late or item.who.late
        if item.why:
            sub.unreadable[notebook] = item.why
        sub.modified = max(sub.modified, item.modified)
    return [students[k] for k in sorted(students)]


def lms_file(name: str, assignment: Assignment, pattern: str | None) -> tuple[Identity, str] | None:
    """``(who, notebook)`` for an LMS file, or None (with a warning) if none fits."""
    if not name.endswith(".ipynb"):
        _log.warning(f"warning: skipped {name}: not a notebook")
        return None
    notebook = notebook_of(name, assignment)
    if notebook is None:
        choices = ", ".join(assignment.notebooks)
        _log.warning(f"warning: skipped {name}: it names none of the notebooks {choices}")
        return None
    who = identify(name, assignment.stems, pattern)
    if not_plain(who.student_id, name):
        return None
    return who, notebook


def from_folder(
    folder: Path, assignment: Assignment, pattern: str | None = None
) -> list[Submission]:
    """Submissions from a flat (or one-level) folder of LMS downloads."""
    found = []
    root = Path(folder)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(".") or "/." in relative or "__MACOSX" in relative:
            continue
        if not inside(path, root):
            continue
        known = lms_file(relative, assignment, pattern)
        if known is None:
            continue
        who, notebook = known
        modified = datetime.fromtimestamp(path.stat().st_mtime)
        data, why = read_capped(path)
        read = one_file(notebook, FileRef(str(path)), data, why)
        found.append(LmsUpload(who, notebook, read, relative, modified, why))
    return combine(found)


def from_archive(
    archive: zipfile.ZipFile, assignment: Assignment, pattern: str | None = None
) -> list[Submission]:
    """Submissions from the LMS files inside ``archive``, unextracted."""
    found = []
    for info in archive.infolist():
        name = info.filename
        if info.is_dir() or "__MACOSX" in name or Path(name).name.startswith("."):
            continue
        known = lms_file(name, assignment, pattern)
        if known is None:
            continue
        who, notebook = known
        data, why = b"", too_large(info.file_size)
        if info.file_size <= MAX_FILE:
            with archive.open(info) as member:
                data, why = member.read(MAX_FILE + 1)[:MAX_FILE], ""
        stamp = datetime(*info.date_time)
        member_at = FileRef(os.path.abspath(str(archive.filename)), name)
        found.append(
            LmsUpload(who, notebook, one_file(notebook, member_at, data, why), name, stamp, why)
        )
    return combine(found)


def lms_download(paths: list[str], pattern: str | None) -> bool:
    """Do the top-level names of ``paths`` (below any single wrapping folder) come from an LMS?

    Decided by the top level alone, so one student's folders inside a download
    (nbgrader's layout in a Moodle participant's folder) cannot change it.
    """
    parts = [Path(p).parts for p in paths if p]
    while parts and len({p[0] for p in parts}) == 1 and all(len(p) > 1 for p in parts):
        if lms_named(parts[0][0], pattern):
            break
        parts = [p[1:] for p in parts]  # a single folder wrapping everything
    return any(lms_named(p[0], pattern) for p in parts)
