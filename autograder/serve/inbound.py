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
:data:`MAX_FILES` of them and :data:`~autograder.pipeline.submissions.collect.MAX_FILE`
bytes each. A hand-in whose folder another user owns is refused, as
``nbgrader collect``'s ``check_owner`` warns of it: one student cannot hand
in, or spend attempts, as another.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import stat
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.utils import parse_utc

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.students import plain_id
from autograder.pipeline.files import MAX_SIDE_FILE, read_bounded
from autograder.pipeline.submissions import collect
from autograder.pipeline.submissions.collect import Submission

_log = logging.getLogger(__name__)

#: seconds without a change after which a hand-in nbgrader never finished is read as it is
SETTLED = 10.0
MAX_FILES = 200  #: files copied from one hand-in, at most
MAX_ENTRIES = 2000  #: names (files and folders) of one hand-in looked at, at most
MAX_BYTES = 100 * 2**20  #: bytes copied from one hand-in, at most (nbgrader submit's own cap)
SKEW = 120.0  #: seconds a hand-in's own time stamp may be older than its folder
EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")  #: nbgrader's, beside the work


@dataclass(frozen=True)
class HandIn:
    """One ``nbgrader submit``: its inbound folder, whose it says it is, and when.

    key: the folder's name (unique per hand-in); handed_in: nbgrader's time
    stamp from the name (naive UTC), unless the folder was made more than
    :data:`SKEW` seconds after it: a student who writes the inbound folder
    themselves can put any time in its name and ``timestamp.txt``, but not in
    the folder's change time, which the kernel keeps (then that time counts).
    """

    key: str
    student_id: str
    handed_in: datetime
    folder: Path
    claimed: datetime | None = None  # the name's time, when the folder shows it is not true

    @property
    def secret(self) -> str | None:
        """``submission_secret.txt``: what names this hand-in's page in the exchange."""
        data = read_bounded(self.folder / "submission_secret.txt")
        return data.decode(errors="replace").strip() if data else None

    def notebook_stems(self) -> list[str]:
        """The names (without ``.ipynb``) of the notebooks at the hand-in's top level: the
        names ``nbgrader fetch_feedback`` looks up its pages by."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return sorted(n[: -len(".ipynb")] for n in names if n.endswith(".ipynb"))


def inbound_folder(exchange: Path, course_id: str) -> Path:
    """``<exchange>/<course id>/inbound``: where ``nbgrader submit`` puts hand-ins."""
    return Path(exchange) / course_id / "inbound"


def scan(exchange: Path, course_id: str, assignment_id: str) -> list[HandIn]:
    """Every hand-in of ``assignment_id`` in the inbound folder, whole or not, oldest first.

    Names that are not nbgrader's, or whose student part is no plain id, are
    left out (``nbgrader collect`` would fail on the first).
    """
    folder = inbound_folder(exchange, course_id)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        parts = name.rsplit("+", 3)  # as nbgrader's collect reads it: ids may hold "+"
        when = named_time(name)
        if when is None or parts[1] != assignment_id or not plain_id(parts[0]):
            continue
        try:
            made = datetime.fromtimestamp((folder / name).lstat().st_ctime, UTC)
        except (OverflowError, OSError):
            continue
        made = made.replace(tzinfo=None)
        if (made - when).total_seconds() > SKEW:  # backdated: the kernel's time counts
            found.append(HandIn(name, parts[0], made, folder / name, claimed=when))
        else:
            found.append(HandIn(name, parts[0], when, folder / name))
    return sorted(found, key=lambda h: (h.handed_in, h.key))


def named_time(key: str) -> datetime | None:
    """The time in a hand-in folder's name (naive UTC); None if it is no name nbgrader gives."""
    parts = key.rsplit("+", 3)
    if len(parts) != 4:
        return None
    try:
        return parse_utc(parts[2])
    except (ValueError, OverflowError):
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


def owner_refusal(hand_in: HandIn) -> str | None:
    """Why the hand-in is not the student's own (its folder is another user's); None if it is.

    A student id that is no user of this machine is not checked (a hub whose
    students are not Linux users hands in as one).
    """
    try:
        claimed = pwd.getpwnam(hand_in.student_id).pw_uid
    except KeyError:
        return None
    try:
        owner = hand_in.folder.lstat().st_uid
    except OSError:
        return "its folder is gone"
    if owner == claimed:
        return None
    try:
        name = pwd.getpwuid(owner).pw_name
    except KeyError:
        name = f"uid {owner}"
    return f"handed in as {hand_in.student_id} by {name}"


def stage(hand_in: HandIn, into: Path, assignment: Assignment) -> Submission | None:
    """Copy the hand-in's regular files to ``into/<student>/<assignment>/`` and read them as the
    batch grader reads nbgrader's layout; None if the folder is gone.

    into: a folder of this hand-in's own (emptied first), kept until it is recorded:
    the submission's files are read from there.

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
    # One hand-in time for choosing, lateness and nbgrader's files alike: the journal's.
    (target / "timestamp.txt").write_text(f"{hand_in.handed_in:%Y-%m-%d %H:%M:%S.%f} UTC")
    if hand_in.claimed is not None:
        notes.append(
            f"your hand-in's time stamp says {hand_in.claimed:%Y-%m-%d %H:%M:%S} UTC, but it "
            f"was made at {hand_in.handed_in:%Y-%m-%d %H:%M:%S} UTC: that time counts"
        )
    found = collect.from_nbgrader_layout(into, assignment)
    mine = [s for s in found if s.student_id == hand_in.student_id]
    if not mine:
        return None
    sub = mine[0]
    graded = set(assignment.notebooks) | set(sub.renamed.values())
    others = sorted(p.name for p in target.glob("*.ipynb") if p.name not in graded and p.is_file())
    if others:
        notes.append(
            f"your hand-in also held {', '.join(others)}, not graded: only "
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
    for folder, dirs, files, folder_fd in os.fwalk(source, follow_symlinks=False):
        relative = Path(folder).relative_to(source)
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES or copied >= MAX_FILES:
            notes.append(f"only the first {copied} files of the hand-in were read")
            break
        for name in sorted(dirs):
            if stat.S_ISLNK(os.lstat(name, dir_fd=folder_fd).st_mode):
                skipped_links.append(str(relative / name))
        for name in sorted(files):
            try:
                info = os.lstat(name, dir_fd=folder_fd)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                skipped_links.append(str(relative / name))
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            limit = MAX_SIDE_FILE if name in EXCHANGE_FILES else collect.MAX_FILE
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
    return notes


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
