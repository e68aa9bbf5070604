"""nbgrader's layout: ``SUBMISSIONS/<student_id>/<assignment>/<notebook>.ipynb``, in a folder
or inside a ``.zip``.

The student id is the name of the folder that holds the assignment folder,
looked for at the shallowest depth where assignment folders appear, so a
student's own subfolders are never more students. The hand-in time is
nbgrader's ``timestamp.txt``. Every other notebook found is named in a
warning, but those in a folder named after another of the course's
assignments (where nbgrader keeps them, for another run).
"""

from __future__ import annotations

import logging
import os
import zipfile
from collections.abc import Set
from datetime import datetime
from pathlib import Path

from nbgrader.utils import parse_utc

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.files import MAX_SIDE_FILE, read_bounded
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


def _timestamp(folder: Path) -> tuple[datetime | None, str]:
    """When nbgrader says the work was handed in, and what was wrong with its file ("" if fine)."""
    stamp = folder / "timestamp.txt"
    if not stamp.exists() and not stamp.is_symlink():
        return None, ""
    data = read_bounded(stamp)
    if data is None:
        why = (
            f"timestamp.txt is not a file of at most {MAX_SIDE_FILE:,} bytes: no hand-in time read"
        )
        return None, why
    try:  # read as nbgrader reads it: any time it can parse, in UTC unless it says otherwise
        return parse_utc(data.decode().strip()), ""
    except (UnicodeDecodeError, ValueError, OverflowError):
        return None, "timestamp.txt holds no time: no hand-in time read"


def _assignment_folders(root: Path, assignment: Assignment) -> list[Path]:
    """Every ``<student>/<assignment id>`` folder below ``root``, at any depth.

    A student's own folders never hold more students: nothing below a folder
    that holds an assignment folder is looked at. Links to folders are not
    followed.
    """
    found = []
    for folder, dirs, _files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__MACOSX")
        for name in dirs:
            if (here / name).is_symlink():
                inside(here / name, root)  # os.walk does not follow it; say so if it leaves
        if assignment.id in dirs:
            if here != root:
                found.append(here / assignment.id)
            dirs[:] = []  # a student's own folders are not more students
    return found


def _renamed_copy(work: Path, assignment: Assignment) -> Path | None:
    """The one notebook in an assignment folder of one notebook, when it has another name.

    Jupyter's "Duplicate" makes ``hw1-Copy1.ipynb``; a student who hands
    that in alone is graded on it, with a note to keep the name.
    """
    if len(assignment.notebooks) != 1:
        return None
    found = [p for p in sorted(work.glob("*.ipynb")) if p.is_file() and not p.is_symlink()]
    return found[0] if len(found) == 1 else None


def other_assignments(assignment: Assignment) -> set[str]:
    """The course's other assignments' ids: the folders beside this one's source."""
    try:
        beside = assignment.source_dir.parent.iterdir()
        return {p.name for p in beside if p.is_dir() and p.name != assignment.id}
    except OSError:
        return set()


def _named_notebooks(root: Path, graded: set[Path], others: Set[str] = frozenset()) -> None:
    """Warn about every notebook below ``root`` that is not one of the ``graded`` files,
    but for those in a folder named after another of the course's assignments (``others``):
    they are where nbgrader keeps them, for another run."""
    for path in sorted(root.rglob("*.ipynb")):
        relative = path.relative_to(root)
        if any(p.startswith(".") or p == "__MACOSX" for p in relative.parts):
            continue
        if set(relative.parts[:-1]) & others:
            continue
        if path not in graded and path.is_file():
            _log.warning(
                f"warning: skipped {relative}: not where nbgrader keeps a student's notebook "
                "(<student>/<assignment>/<notebook>, beside the other students)"
            )


def from_nbgrader_layout(folder: Path, assignment: Assignment) -> list[Submission]:
    """Submissions in nbgrader's layout at any depth below ``folder``; [] if none is there.

    The student id is the name of the folder that holds the assignment folder.
    """
    root = Path(folder)
    found, graded = [], set()
    for work in _assignment_folders(root, assignment):
        student = work.parent
        if not_plain(student.name, str(work.relative_to(root))):
            continue
        files = OnDisk()
        unreadable: dict[str, str] = {}
        renamed: dict[str, str] = {}
        newest = 0.0
        for notebook in assignment.notebooks:
            path = work / notebook
            if not path.is_file():
                copy = _renamed_copy(work, assignment)
                if copy is None:
                    continue
                path, renamed = copy, {notebook: copy.name}
            graded.add(path)
            if not inside(path, root):
                unreadable[notebook] = "it links outside the submissions folder: not read"
                continue
            data, why = read_capped(path)
            if why:
                files.hold(notebook, data)
                unreadable[notebook] = why
            else:
                files.add(notebook, FileRef(str(path)), data)
            newest = max(newest, path.stat().st_mtime)
        stamp, wrong = _timestamp(work)
        modified = stamp or datetime.fromtimestamp(newest)
        origin = str(work.relative_to(root))
        found.append(
            Submission(
                student.name,
                files,
                origin,
                modified,
                0,
                unreadable,
                stamp,
                renamed=renamed,
                notes=[wrong] if wrong else [],
            )  # fmt: skip
        )
    if found:
        _named_notebooks(root, graded, other_assignments(assignment))
    return one_each(found)


def one_each(found: list[Submission]) -> list[Submission]:
    """One submission per student id: the newest, the others named in a warning."""
    chosen: dict[str, Submission] = {}
    for sub in sorted(found, key=lambda s: (s.modified, s.version)):
        earlier = chosen.get(sub.student_id)
        if earlier is not None:
            _log.warning(
                f"warning: {sub.student_id}: two submissions, {earlier.origin} and "
                f"{sub.origin}; grading the newer, {sub.origin}"
            )
        chosen[sub.student_id] = sub
    return [chosen[k] for k in sorted(chosen)]


def _student_at(parts: tuple[str, ...], assignment_id: str) -> int | None:
    """Where in a member's path its student folder is: above its first assignment folder."""
    ids = [i for i, part in enumerate(parts[1:-1]) if part == assignment_id]
    return ids[0] if ids else None


def zip_layout(archive: zipfile.ZipFile, assignment: Assignment) -> list[Submission]:
    """Submissions in nbgrader's layout inside an archive: ``.../<student>/<id>/<notebook>``.

    At any depth, but a student's own folders never hold more students: the
    student of a member is the folder above its first assignment folder, and no
    student lives inside another's folder. Every other notebook of the archive
    is named in a warning.
    """
    notebooks = [
        info
        for info in archive.infolist()
        if not info.is_dir()
        and info.filename.endswith(".ipynb")
        and "__MACOSX" not in Path(info.filename).parts
    ]
    students = {
        parts[: at + 1]
        for parts in (Path(info.filename).parts for info in notebooks)
        if (at := _student_at(parts, assignment.id)) is not None
    }
    if not students:
        return []
    found: dict[tuple[str, str], Submission] = {}
    others = other_assignments(assignment)
    for info in notebooks:
        parts = Path(info.filename).parts
        at = _student_at(parts, assignment.id)
        if at is None and set(parts[:-1]) & others:
            continue  # another assignment's, where nbgrader keeps it
        if (
            at is None
            or len(parts) != at + 3
            or any(parts[:j] in students for j in range(1, at + 1))
        ):
            _log.warning(
                f"warning: skipped {info.filename}: not where nbgrader keeps a student's "
                "notebook (<student>/<assignment>/<notebook>)"
            )
            continue
        if parts[-1] not in assignment.notebooks:
            continue
        if not_plain(parts[at], info.filename):
            continue
        student, origin = parts[at], "/".join(parts[:-1])
        data, why = b"", too_large(info.file_size)
        if info.file_size <= MAX_FILE:
            with archive.open(info) as member:
                data, why = member.read(MAX_FILE + 1)[:MAX_FILE], ""
        stamp = datetime(*info.date_time)
        sub = found.setdefault((student, origin), Submission(student, OnDisk(), origin, stamp))
        assert isinstance(sub.files, OnDisk)
        sub.files.take(
            parts[-1],
            one_file(
                parts[-1], FileRef(os.path.abspath(str(archive.filename)), info.filename), data, why
            ),
        )
        if why:
            sub.unreadable[parts[-1]] = why
        sub.modified = max(sub.modified, stamp)
    return one_each(list(found.values()))
