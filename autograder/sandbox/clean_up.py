"""What a grading run leaves behind, and how it goes: only what the run itself started.

Every function here touches nothing but what it is told belongs to one run:
the processes and files of that run's own uid (:func:`run_uid`), or the
folders its sandboxes made, named after its main process. Links are never
followed.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

RUN_UIDS = 3_000_000_000  #: the first of the uids student code runs as, when grading as root
STUDENTS_FOLDER = "autograder-students-"  #: then the run's main process's pid and a dash

#: where any user may write: where a student without a filesystem sandbox can leave files
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")


def run_uid(owner_pid: int) -> int:
    """The uid student code of the grading run whose main process is ``owner_pid`` runs as.

    A uid no account and no other run uses (two runs never share a main
    process's pid), with no rights beyond "other": so cleaning up after a run
    (:func:`kill_user`, :func:`after_run`) reaches only what that run started,
    never the host's ``nobody`` processes or another grader's students.
    """
    return RUN_UIDS + owner_pid


def after_run(owner: int) -> int:
    """Remove what the run whose main process is ``owner`` left once its students are gone.

    Its sandboxes' students' folders always; as root, also whatever its uid
    (:func:`run_uid`) left where any user may write (:data:`SHARED_WRITABLE`).
    Returns how many entries of the shared places were removed: a run's
    students leave none there unless they wrote outside a filesystem sandbox.
    """
    remove_students_folders(owner)
    return remove_user_files(run_uid(owner)) if os.geteuid() == 0 else 0


def remove_tree(folder: str) -> None:
    """Delete ``folder`` and everything in it, folders its owner made unreadable included.

    Not as root, a folder of mode 000 stops ``shutil.rmtree``, so every folder
    is first given back to its owner (symbolic links are never followed: their
    targets are not this folder's). Root ignores modes and needs no such pass.
    """
    if os.path.islink(folder):
        return
    if os.geteuid() != 0:
        _give_back(folder)
        for top, folders, _ in os.walk(folder):
            for name in folders:
                _give_back(os.path.join(top, name))
    shutil.rmtree(folder, ignore_errors=True)


def _give_back(path: str) -> None:
    """Make the folder ``path`` its owner's to list and empty again (never through a link)."""
    if not os.path.islink(path):
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass


def remove_students_folders(owner: int) -> None:
    """Remove the students' folders of sandboxes without bubblewrap that ``owner``'s run left.

    A worker process ends without closing its sandbox (a pool's worker exits
    or is killed), so the run's main process removes them once its workers are
    gone: only its own (its pid in the name, its uid as owner).
    """
    for base in {tempfile.gettempdir(), "/tmp"}:
        for folder in Path(base).glob(f"{STUDENTS_FOLDER}{owner}-*"):
            if not folder.is_symlink() and folder.is_dir() and folder.stat().st_uid == os.geteuid():
                remove_tree(str(folder))


def remove_user_files(uid: int, places: Sequence[str] = SHARED_WRITABLE) -> int:
    """Remove what ``uid`` left at the top of ``places``; how many entries it removed.

    For a run's own uid, once the run's students are gone: without a
    filesystem sandbox a student can write wherever any user may, and a file
    left there (readable by everyone, by default) would outlive the run for the
    next one's students to read. Nothing of another uid is touched.
    """
    removed = 0
    for place in places:
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    remove_tree(entry.path)
                else:
                    os.unlink(entry.path)
                removed += 1
            except OSError:
                pass
    return removed


def process_owner(proc_dir: Path) -> int | None:
    """The uid of the process whose ``/proc`` folder is ``proc_dir``; None once it is gone."""
    try:
        return proc_dir.stat().st_uid
    except OSError:
        return None


def kill_until_gone(alive: Callable[[], list[int]], wait: float) -> list[int]:
    """SIGKILL the processes ``alive()`` lists until it lists none (or ``wait`` s pass).

    Returns every pid it found: a process can start another while its siblings
    are killed, so the list is asked for again until it is empty.
    """
    found: set[int] = set()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        pids = alive()
        if not pids:
            break
        found.update(pids)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    return sorted(found)


def kill_user(uid: int, wait: float = 5.0) -> list[int]:
    """SIGKILL every process of ``uid`` until none is left; the pids that were found.

    For a run's own uid, which runs nothing but that run's student code.
    """

    def owned() -> list[int]:
        return [
            int(p.name)
            for p in Path("/proc").iterdir()
            if p.name.isdigit() and process_owner(p) == uid and int(p.name) != os.getpid()
        ]

    return kill_until_gone(owned, wait)
