"""The exchange's inbound folder: each ``nbgrader submit``, as the service finds it.

``nbgrader submit`` copies the student's assignment folder to
``<exchange>/<course id>/inbound/<student>+<assignment>+<time>+<random>``,
writes ``timestamp.txt`` and ``submission_secret.txt`` into it, then opens the
folder to everyone (mode 0777) as its last step: a hand-in is whole once it
has its secret and that mode, or once nothing in it has changed for
:data:`SETTLED` seconds (a submit that died halfway). The folder's name is the
hand-in's key: unique, and the same however often the service reads it.

A hand-in folder is the student's own: it is read, never followed. Only
regular files are copied (a link is named on the student's page and left
behind, so a link to the instructor's source can never reach a page), at most
:data:`MAX_FILES` of them and :data:`~autograder.pipeline.submissions.submission.MAX_FILE`
bytes each. A hand-in whose folder another user owns is refused, as
``nbgrader collect``'s ``check_owner`` warns of it: one student cannot hand
in, or spend attempts, as another.

Everything in the inbound is a student's input, and treated as hostile:

- **time**: a hand-in's time is when its content was complete, the latest
  change time (``ctime``, which the kernel keeps and no student can set) of
  the folder and everything under it (:func:`completed`), never the time its
  name or ``timestamp.txt`` claims;
- **names**: a name that is not nbgrader's, not UTF-8, or whose time part
  does not parse is passed over, never an error; each name is parsed once,
  and the folder is listed again only when it changed (:class:`Watcher`);
- **depth and count**: a hand-in is walked at most :data:`MAX_DEPTH` folders
  deep and :data:`MAX_ENTRIES` names wide;
- **pages**: one page per notebook of the assignment (:func:`page_stems`),
  whatever the hand-in holds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import stat
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.utils import parse_utc

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.students import plain_id
from autograder.pipeline.files import MAX_SIDE_FILE, read_bounded
from autograder.pipeline.submissions import nbgrader_layout, submission
from autograder.pipeline.submissions.submission import Submission

_log = logging.getLogger(__name__)

#: seconds without a change after which a hand-in nbgrader never finished is read as it is
SETTLED = 10.0
MAX_FILES = 200  #: files copied from one hand-in, at most
MAX_ENTRIES = 2000  #: names (files and folders) of one hand-in looked at, at most
MAX_BYTES = 100 * 2**20  #: bytes copied from one hand-in, at most (nbgrader submit's own cap)
MAX_DEPTH = 8  #: folders below a hand-in's own that are walked, at most
SKEW = 120.0  #: seconds between a hand-in's claimed time and its real one that its page names
MAX_NAME_TIME = 64  #: characters of a folder name's time part that are parsed, at most
RELIST = 10.0  #: seconds after which the inbound folder is listed again though it seems unchanged
EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")  #: nbgrader's, beside the work


@dataclass(frozen=True)
class HandIn:
    """One ``nbgrader submit``: its inbound folder, whose it says it is, and when.

    key: the folder's name (unique per hand-in); handed_in: when the kernel
    says it was (naive UTC): the folder's change time when first seen, the
    time its content was complete once :func:`completed` looked. A student who
    writes the inbound folder themselves can put any time in its name and
    ``timestamp.txt``, but not in a change time. claimed: the name's time,
    where it is more than :data:`SKEW` seconds off (the page says so).
    """

    key: str
    student_id: str
    handed_in: datetime
    folder: Path
    claimed: datetime | None = None  # the name's time, when the folder shows it is not true

    @property
    def secret(self) -> tuple[str, int] | None:
        """``submission_secret.txt``, what names this hand-in's pages in the exchange, and
        when the kernel says it last changed (ns); None if it has none (or none to read)."""
        path = self.folder / "submission_secret.txt"
        try:
            changed = path.lstat().st_ctime_ns
        except OSError:
            return None
        data = read_bounded(path)
        text = data.decode(errors="replace").strip() if data else ""
        return (text, changed) if text else None


def page_stems(hand_in: HandIn, assignment: Assignment) -> list[str]:
    """The names ``nbgrader fetch_feedback`` looks the hand-in's pages up by: one per
    notebook of the assignment, its own name, or the one other notebook it was graded
    from (``hw1-Copy1``, as :mod:`~autograder.pipeline.submissions.collect` picks it).

    However many notebooks a hand-in holds, it gets no more pages than that.
    """
    names = set()
    try:
        with os.scandir(hand_in.folder) as entries:
            for number, entry in enumerate(entries):
                if number >= MAX_ENTRIES:
                    break
                if entry.name.endswith(".ipynb") and _utf8(entry.name):
                    names.add(entry.name)
    except OSError:
        pass
    stems = []
    for notebook in assignment.notebooks:
        others = sorted(names - set(assignment.notebooks))
        if notebook not in names and len(assignment.notebooks) == 1 and len(others) == 1:
            notebook = others[0]
        stems.append(notebook[: -len(".ipynb")])
    return stems


def _utf8(name: str) -> bool:
    """Is ``name`` (as Python reads a file name) text, not bytes UTF-8 cannot spell?"""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def inbound_folder(exchange: Path, course_id: str) -> Path:
    """``<exchange>/<course id>/inbound``: where ``nbgrader submit`` puts hand-ins."""
    return Path(exchange) / course_id / "inbound"


def scan(exchange: Path, course_id: str, assignment_id: str) -> list[HandIn]:
    """Every hand-in of ``assignment_id`` in the inbound folder, whole or not, oldest first
    (a :class:`Watcher`'s one look)."""
    return Watcher(exchange, course_id, assignment_id).scan()


class Watcher:
    """The inbound folder, looked at often and cheaply, however many names it holds.

    The folder is listed again only when it changed (its modification time, or
    when that is too recent to tell, or every :data:`RELIST` seconds), and each
    name is parsed once (:func:`parse_name`): a folder of junk names costs one
    ``stat`` a look. Names that are not nbgrader's, not this assignment's, not
    UTF-8, or whose student part is no plain id are passed over.
    """

    def __init__(self, exchange: Path, course_id: str, assignment_id: str) -> None:
        self.folder = inbound_folder(exchange, course_id)
        self.assignment_id = assignment_id
        self.stamp: tuple[int, int, int] | None = None
        self.listed = 0.0  # when it was last listed (time.monotonic())
        self.parsed: dict[str, tuple[str, datetime] | None] = {}  # name -> (student, time)

    def changed(self) -> bool:
        """Has the folder changed since it was last listed (or can that not be told)?"""
        try:
            info = os.stat(self.folder)
        except OSError:
            self.stamp = None
            return False
        stamp = (info.st_ino, info.st_mtime_ns, info.st_nlink)
        recent = time.time() - info.st_mtime < 2.0  # within the clock's coarse ticks
        stale = time.monotonic() - self.listed > RELIST
        if stamp == self.stamp and not recent and not stale:
            return False
        self.stamp = stamp
        return True

    def scan(self) -> list[HandIn]:
        """Every hand-in of the assignment now in the folder, oldest first."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        self.listed = time.monotonic()
        parsed = {name: self.parsed.get(name, ...) for name in names}
        found = []
        for name, known in parsed.items():
            if known is ...:
                known = parsed[name] = parse_name(name, self.assignment_id)
            if known is None:
                continue
            try:
                made = _utc(self.folder.joinpath(name).lstat().st_ctime)
            except (OverflowError, OSError, ValueError):
                continue
            when = known[1]
            claimed = when if abs((made - when).total_seconds()) > SKEW else None
            found.append(HandIn(name, known[0], made, self.folder / name, claimed=claimed))
        self.parsed = {k: v for k, v in parsed.items() if v is not ...}
        return sorted(found, key=lambda h: (h.handed_in, h.key))

    def new(self) -> list[HandIn]:
        """:meth:`scan`, or nothing when the folder has not changed since the last look."""
        return self.scan() if self.changed() else []


def parse_name(name: str, assignment_id: str) -> tuple[str, datetime] | None:
    """``(student id, claimed time)`` from a hand-in folder's name, as ``nbgrader collect``
    reads it; None for any name that is not a hand-in of ``assignment_id``."""
    if not _utf8(name) or len(name) > 255:
        return None
    parts = name.rsplit("+", 3)  # as nbgrader's collect reads it: ids may hold "+"
    if len(parts) != 4 or parts[1] != assignment_id or not plain_id(parts[0]):
        return None
    when = named_time(name)
    return None if when is None else (parts[0], when)


def _utc(seconds: float) -> datetime:
    """A time from the kernel (seconds since the epoch) as nbgrader keeps times: naive UTC."""
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


def named_time(key: str) -> datetime | None:
    """The time in a hand-in folder's name (naive UTC); None if it is no name nbgrader gives.

    Whatever the name holds, the answer is a time or None, never an error or a warning
    raised (dateutil warns, and a warning turned into an error would stop the service).
    """
    parts = key.rsplit("+", 3)
    if len(parts) != 4 or len(parts[2]) > MAX_NAME_TIME:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return parse_utc(parts[2])
    except Exception:  # dateutil raises more than ValueError for what it cannot read
        return None


def completed(hand_in: HandIn) -> HandIn:
    """``hand_in`` with its time the one its content was complete: the latest change time of
    its folder and of everything below it (within :data:`MAX_DEPTH` and
    :data:`MAX_ENTRIES`), never earlier than the time it was first seen."""
    latest = _latest_change(hand_in.folder)
    if latest is None or latest <= hand_in.handed_in:
        return hand_in
    return replace(hand_in, handed_in=latest)


def _latest_change(folder: Path) -> datetime | None:
    """The latest ``ctime`` of ``folder`` and what is below it (no link followed); None if
    it is gone."""
    try:
        latest = os.lstat(folder).st_ctime
    except OSError:
        return None
    seen = 0
    try:
        with _walking(folder) as walk:
            for here, dirs, files, here_fd in walk:
                depth = len(Path(here).relative_to(folder).parts)
                for name in dirs + files:
                    seen += 1
                    if seen > MAX_ENTRIES:
                        break
                    try:
                        latest = max(latest, os.lstat(name, dir_fd=here_fd).st_ctime)
                    except OSError:
                        continue
                if seen > MAX_ENTRIES or depth >= MAX_DEPTH:
                    dirs[:] = []
    except OSError:
        pass
    try:
        return _utc(latest)
    except (OverflowError, OSError, ValueError):
        return None


def whole(hand_in: HandIn, now: float | None = None) -> bool:
    """Has ``nbgrader submit`` finished writing this hand-in (see the module's docstring)?"""
    try:
        mode = hand_in.folder.lstat()
        secret = (hand_in.folder / "submission_secret.txt").lstat()
    except OSError:
        return False
    if stat.S_IMODE(mode.st_mode) & 0o002:  # submit's last step: the folder opened to all
        return True
    now = time.time() if now is None else now
    return now - max(mode.st_mtime, secret.st_mtime) >= SETTLED


def user_id(student_id: str) -> int | None:
    """The uid of the user of this machine named ``student_id``; None if there is none."""
    try:
        return pwd.getpwnam(student_id).pw_uid
    except KeyError:
        return None


def owner_refusal(hand_in: HandIn, students: set[str]) -> str | None:
    """Why the hand-in is not to be graded as its student's; None if it is theirs.

    students: the ids the course knows (its gradebook, roster, the hub's users).
    A student id that is a user of this machine must own the folder, as
    ``nbgrader collect``'s ``check_owner`` wants. Any other id must be one the
    course knows, in a folder no other student of the course owns (a hub whose
    students are not Linux users hands in as one user): a made-up id gets no
    place in the queue, and no student hands in as another.
    """
    try:
        owner = hand_in.folder.lstat().st_uid
    except OSError:
        return "its folder is gone"
    try:
        name: str | None = pwd.getpwuid(owner).pw_name
    except KeyError:
        name = None
    claimed = user_id(hand_in.student_id)
    if claimed is not None:
        return None if owner == claimed else f"handed in as {hand_in.student_id} by {name or owner}"
    if hand_in.student_id not in students:
        return f"{hand_in.student_id} is no student of the course (nor a user of this machine)"
    if name is not None and name != hand_in.student_id and name in students:
        return f"handed in as {hand_in.student_id} by {name}"
    return None


def stage(
    hand_in: HandIn, into: Path, assignment: Assignment, complete: bool = True
) -> Submission | None:
    """Copy the hand-in's regular files to ``into/<student>/<assignment>/`` and read them as the
    batch grader reads nbgrader's layout; None if the folder is gone.

    into: a folder of this hand-in's own (emptied first), kept until it is recorded:
    the submission's files are read from there. complete: take the hand-in's time
    from its folder's change times (:func:`completed`); False keeps ``handed_in``
    (an exchange service's record of it, the folder only a copy).

    What a student should know of their files (a link left behind, another
    notebook not graded, too many files) is added to the submission's notes,
    which their page shows.
    """
    target = into / hand_in.student_id / assignment.id
    shutil.rmtree(into, ignore_errors=True)
    target.mkdir(parents=True)
    notes = _copy_regular(hand_in.folder, target)
    if notes is None:
        return None
    # One hand-in time for choosing, lateness and nbgrader's files alike: when its content
    # was complete, looked at after the copy (a change made while it was read is counted).
    hand_in = completed(hand_in) if complete else hand_in
    (target / "timestamp.txt").write_text(f"{hand_in.handed_in:%Y-%m-%d %H:%M:%S.%f} UTC")
    if hand_in.claimed is not None:
        notes.append(
            f"your hand-in's time stamp says {hand_in.claimed:%Y-%m-%d %H:%M:%S} UTC, but it "
            f"was made at {hand_in.handed_in:%Y-%m-%d %H:%M:%S} UTC: that time counts"
        )
    found = nbgrader_layout.from_nbgrader_layout(into, assignment)
    mine = [s for s in found if s.student_id == hand_in.student_id]
    if not mine:
        return None
    sub = mine[0]
    graded = set(assignment.notebooks) | set(sub.renamed.values())
    others = sorted(p.name for p in target.glob("*.ipynb") if p.name not in graded and p.is_file())
    if others:
        more = f" and {len(others) - 5} more" if len(others) > 5 else ""
        notes.append(
            f"your hand-in also held {', '.join(others[:5])}{more}, not graded: only "
            f"{', '.join(assignment.notebooks)} is"
        )
    missing = [n for n in assignment.notebooks if n not in sub.files and n not in sub.unreadable]
    if missing:
        notes.append(f"your hand-in has no {', '.join(missing)}")
    sub.notes.extend(notes)
    return sub


def _copy_regular(source: Path, target: Path) -> list[str] | None:
    """Copy the regular files below ``source`` (no link followed); what was left behind, in
    words. None if ``source`` is gone, or is no folder (a link to one included).

    Walked by descriptors (``os.fwalk``), each file opened relative to its folder's
    descriptor without following a link: swapping a folder for a link while it is
    read reaches nothing outside the hand-in. At most :data:`MAX_ENTRIES` names are
    looked at, :data:`MAX_FILES` files and :data:`MAX_BYTES` bytes copied.
    """
    try:
        top = os.lstat(source)
    except OSError:
        return None
    if not stat.S_ISDIR(top.st_mode):
        return None
    notes: list[str] = []
    copied = seen = size = 0
    skipped_links: list[str] = []
    unnamed = 0  # names that are not UTF-8: nothing on a page could name them
    too_deep = False
    with _walking(source) as walk:
        for folder, dirs, files, folder_fd in walk:
            relative = Path(folder).relative_to(source)
            seen += len(dirs) + len(files)
            if seen > MAX_ENTRIES or copied >= MAX_FILES:
                notes.append(f"only the first {copied} files of the hand-in were read")
                break
            if len(relative.parts) >= MAX_DEPTH and dirs:
                too_deep, dirs[:] = True, []
            unnamed += sum(not _utf8(name) for name in dirs + files)
            dirs[:] = [name for name in dirs if _utf8(name)]
            for name in sorted(dirs):
                with contextlib.suppress(OSError):
                    if stat.S_ISLNK(os.lstat(name, dir_fd=folder_fd).st_mode):
                        skipped_links.append(str(relative / name))
            for name in sorted(filter(_utf8, files)):
                try:
                    info = os.lstat(name, dir_fd=folder_fd)
                except OSError:
                    continue
                if stat.S_ISLNK(info.st_mode):
                    skipped_links.append(str(relative / name))
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue
                limit = MAX_SIDE_FILE if name in EXCHANGE_FILES else submission.MAX_FILE
                if info.st_size > limit:
                    notes.append(f"{relative / name} was not read: more than {limit:,} bytes")
                    continue
                if size + info.st_size > MAX_BYTES:
                    notes.append(
                        f"{relative / name} was not read: the hand-in passed {MAX_BYTES:,} bytes"
                    )
                    continue
                data = _read_no_follow(name, folder_fd, min(limit, MAX_BYTES - size))
                if data is None or copied >= MAX_FILES:
                    continue
                size += len(data)
                (target / relative).mkdir(parents=True, exist_ok=True)
                (target / relative / name).write_bytes(data)
                copied += 1
    if skipped_links:
        notes.append(f"links are not followed, so {', '.join(skipped_links[:5])} was not read")
    if unnamed:
        notes.append(f"{unnamed} file(s) whose names are not UTF-8 text were not read")
    if too_deep:
        notes.append(f"folders more than {MAX_DEPTH} deep were not read")
    return notes


@contextlib.contextmanager
def _walking(top: Path) -> Iterator[Iterator[tuple[str, list[str], list[str], int]]]:
    """``os.fwalk(top)`` without following links, closed when the block ends: a walk left
    early closes its folders' descriptors at once, not when it is collected."""
    walk = os.fwalk(top, follow_symlinks=False)
    try:
        yield walk
    finally:
        getattr(walk, "close", lambda: None)()


def _read_no_follow(name: str, folder_fd: int, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the file ``name`` in the open folder ``folder_fd``, never
    through a link (None if it is one now, or is gone)."""
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(limit + 1)[:limit]
