"""Finding the class's submissions, wherever the TA downloaded them from.

Three shapes are understood:

- nbgrader's layout: ``SUBMISSIONS/<student_id>/<assignment>/<notebook>.ipynb``;
- a folder of files downloaded from an LMS;
- a ``.zip`` of such files (read in memory, never extracted to disk).

Which shape a folder or archive is, is decided by its top level (below any
single wrapping folder): LMS names there (Canvas files, Moodle participants)
make it an LMS download, whatever a student's own folders hold inside;
otherwise nbgrader's layout is looked for, its students at the shallowest depth
where assignment folders appear, so a student's own subfolders are never more
students. Every notebook found is graded or named in a warning.

For LMS files the student id comes from the LMS's own key, so it is one per
person and stable from run to run: the Canvas user id
(``doejane_LATE_1234_5678_hw1-1.ipynb`` -> ``doejane-1234``), the Moodle
participant number (``Jane Doe_1234_assignsubmission_file_hw1.ipynb``, or a
folder of that name -> ``jane_doe-1234``; names in any script), a custom
``--pattern`` with a ``(?P<student>...)`` group (and an optional ``(?P<lms>...)``
key), or else the file's name itself. The readable name is kept beside the id
(``Submission.name``). When an assignment has several notebooks, an LMS file
belongs to the notebook whose name it contains. A student who submitted twice
is graded on the newest file, the other named in a warning.

A student id is plain text, never a path, markup or a formula: letters and
digits of any script and ``. _ - @ +``, starting with a letter or digit. A
folder whose name is not such an id is named in a warning and not graded.

Links are not followed out of the submissions folder: a link there (a TA's copy
mistake, or a student's trick) could otherwise put the instructor's source
notebook, or another course's files, into a student's feedback page.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import re
import zipfile
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from nbgrader.utils import parse_utc

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.students import plain_id
from autograder.pipeline.errors import UserError
from autograder.pipeline.files import MAX_SIDE_FILE, read_bounded
from autograder.pipeline.lms import canvas, moodle
from autograder.pipeline.lms.grades import Identity, slug

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


def _too_large(size: int) -> str:
    return f"the file is {size / 2**20:.1f} MiB, over the limit of {MAX_FILE // 2**20} MiB"


def _one_file(notebook: str, ref: FileRef, data: bytes, why: str) -> OnDisk:
    """An :class:`OnDisk` of one file: where it is, or ``b""`` when it could not be read."""
    one = OnDisk()
    if why:
        one.hold(notebook, data)
    else:
        one.add(notebook, ref, data)
    return one


def _read(path: Path) -> tuple[bytes, str]:
    """``(bytes, why unreadable)``: a file over :data:`MAX_FILE` is not read, nor one that grows
    past it while it is read (never more than the limit is held)."""
    size = path.stat().st_size
    if size > MAX_FILE:
        return b"", _too_large(size)
    with path.open("rb") as handle:
        data = handle.read(size + 1)  # what stat said, and a byte to see whether it grew
        if len(data) > size:
            data += handle.read(MAX_FILE + 1 - len(data))
    if len(data) > MAX_FILE:
        return b"", _too_large(len(data))
    return data, ""


def _inside(path: Path, root: Path) -> bool:
    """Is ``path``, links resolved, inside ``root``? Warns about it when not."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    if real == top or real.startswith(top + os.sep):
        return True
    _log.warning(f"warning: skipped {path}: it links outside the submissions folder")
    return False


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
                _inside(here / name, root)  # os.walk does not follow it; say so if it leaves
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


def _other_assignments(assignment: Assignment) -> set[str]:
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


def _not_plain(student_id: str, where: str) -> bool:
    """True (after a warning) if ``student_id`` is no plain id (:func:`plain_id`)."""
    if plain_id(student_id):
        return False
    _log.warning(
        f"warning: skipped {where}: {student_id!r} is not a student id (letters, digits and "
        ". _ - @ +, starting with a letter or digit): rename the folder"
    )
    return True


def from_nbgrader_layout(folder: Path, assignment: Assignment) -> list[Submission]:
    """Submissions in nbgrader's layout at any depth below ``folder``; [] if none is there.

    The student id is the name of the folder that holds the assignment folder.
    """
    root = Path(folder)
    found, graded = [], set()
    for work in _assignment_folders(root, assignment):
        student = work.parent
        if _not_plain(student.name, str(work.relative_to(root))):
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
            if not _inside(path, root):
                unreadable[notebook] = "it links outside the submissions folder: not read"
                continue
            data, why = _read(path)
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
        _named_notebooks(root, graded, _other_assignments(assignment))
    return _one_each(found)


def _one_each(found: list[Submission]) -> list[Submission]:
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


@dataclass
class _File:
    who: Identity  # whose file, as the LMS names them
    notebook: str
    data: OnDisk  # this one file, under its notebook's name
    origin: str
    modified: datetime
    why: str


def _warn_shared(files: list[_File]) -> None:
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


def _combine(found: list[_File]) -> list[Submission]:
    """One submission per student, each notebook the newest file (then the highest version).

    Older files, names two students share and LMS ids two students claim are
    named in warnings: two people are never merged, nor one silently dropped.
    """
    chosen: dict[tuple[str, str], _File] = {}
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


def _lms_file(
    name: str, assignment: Assignment, pattern: str | None
) -> tuple[Identity, str] | None:
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
    if _not_plain(who.student_id, name):
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
        if not _inside(path, root):
            continue
        known = _lms_file(relative, assignment, pattern)
        if known is None:
            continue
        who, notebook = known
        modified = datetime.fromtimestamp(path.stat().st_mtime)
        data, why = _read(path)
        read = _one_file(notebook, FileRef(str(path)), data, why)
        found.append(_File(who, notebook, read, relative, modified, why))
    return _combine(found)


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


def from_zip(path: Path, assignment: Assignment, pattern: str | None = None) -> list[Submission]:
    """Submissions from a ``.zip`` (nbgrader's layout at any depth, or LMS files), unextracted."""
    try:
        with open_zip(path) as archive:
            return _from_archive(archive, assignment, pattern)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise UserError(f"cannot read the archive {path}: {error}") from None


def _student_at(parts: tuple[str, ...], assignment_id: str) -> int | None:
    """Where in a member's path its student folder is: above its first assignment folder."""
    ids = [i for i, part in enumerate(parts[1:-1]) if part == assignment_id]
    return ids[0] if ids else None


def _zip_layout(archive: zipfile.ZipFile, assignment: Assignment) -> list[Submission]:
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
    others = _other_assignments(assignment)
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
        if _not_plain(parts[at], info.filename):
            continue
        student, origin = parts[at], "/".join(parts[:-1])
        data, why = b"", _too_large(info.file_size)
        if info.file_size <= MAX_FILE:
            with archive.open(info) as member:
                data, why = member.read(MAX_FILE + 1)[:MAX_FILE], ""
        stamp = datetime(*info.date_time)
        sub = found.setdefault((student, origin), Submission(student, OnDisk(), origin, stamp))
        assert isinstance(sub.files, OnDisk)
        sub.files.take(
            parts[-1],
            _one_file(
                parts[-1], FileRef(os.path.abspath(str(archive.filename)), info.filename), data, why
            ),
        )
        if why:
            sub.unreadable[parts[-1]] = why
        sub.modified = max(sub.modified, stamp)
    return _one_each(list(found.values()))


def _from_archive(
    archive: zipfile.ZipFile, assignment: Assignment, pattern: str | None
) -> list[Submission]:
    names = [
        i.filename for i in archive.infolist() if not i.is_dir() and "__MACOSX" not in i.filename
    ]
    if not _lms_download(names, pattern):
        laid_out = _zip_layout(archive, assignment)
        if laid_out:
            return laid_out
    found = []
    for info in archive.infolist():
        name = info.filename
        if info.is_dir() or "__MACOSX" in name or Path(name).name.startswith("."):
            continue
        known = _lms_file(name, assignment, pattern)
        if known is None:
            continue
        who, notebook = known
        data, why = b"", _too_large(info.file_size)
        if info.file_size <= MAX_FILE:
            with archive.open(info) as member:
                data, why = member.read(MAX_FILE + 1)[:MAX_FILE], ""
        stamp = datetime(*info.date_time)
        member_at = FileRef(os.path.abspath(str(archive.filename)), name)
        found.append(
            _File(who, notebook, _one_file(notebook, member_at, data, why), name, stamp, why)
        )
    return _combine(found)


def collect(
    where: Path | str, assignment: Assignment, pattern: str | None = None
) -> list[Submission]:
    """Every submission at ``where`` (a folder in either layout, or a .zip), one per student."""
    where = Path(where)
    if where.is_dir():
        where = Path(os.path.realpath(where))  # the folder itself may be a link; its insides not
    if not where.exists():
        raise UserError(f"no such folder or file: {where}")
    if where.is_file():
        if not zipfile.is_zipfile(where):
            raise UserError(f"{where} is a file but not a .zip archive")
        return from_zip(where, assignment, pattern)
    if not os.access(where, os.R_OK | os.X_OK):
        raise UserError(f"cannot read the folder {where}")
    listed = [
        p.relative_to(where).as_posix() for p in where.rglob("*")
        if p.is_file() and "__MACOSX" not in p.parts
        and not any(s.startswith(".") for s in p.relative_to(where).parts)
    ]  # fmt: skip
    if not _lms_download(listed, pattern):
        laid_out = from_nbgrader_layout(where, assignment)
        if laid_out:
            return laid_out
    _not_one_assignment_folder(where, assignment)
    return from_folder(where, assignment, pattern)


def _lms_download(paths: list[str], pattern: str | None) -> bool:
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


def _not_one_assignment_folder(where: Path, assignment: Assignment) -> None:
    """UserError if ``where`` is one student's (or the release's) work, not a class.

    ``grade release`` or ``grade SUBMISSIONS/ada`` would otherwise grade one
    student named after the notebook.
    """
    own = where if where.name == assignment.id else where / assignment.id
    if any((own / name).is_file() for name in assignment.notebooks):
        raise UserError(
            f"{where} holds one assignment folder ({own.name}/), not a class: give the folder "
            f"that holds a folder per student, SUBMISSIONS/<student>/{assignment.id}/"
            f"{assignment.notebooks[0]}, or a folder or .zip of LMS downloads"
        )
