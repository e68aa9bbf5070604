"""What a test may see of the machine's processes: only what its own run started.

``make test`` runs two tests side by side (pytest-xdist), each perhaps grading,
so no test looks for sandboxes or students machine-wide: a grading run's are
found by its main process's pid, which ends their command line
(:func:`~autograder.sandbox.launcher.run_mark`) and, when grading as root,
names the uid its students run as (:func:`~autograder.sandbox.clean_up.run_uid`).
"""

import os
import subprocess
import tempfile
import time
from pathlib import Path

from autograder.sandbox.clean_up import RUN_UIDS, run_uid
from autograder.sandbox.launcher import run_mark

from .command_line import Ran


def _alive() -> dict[int, tuple[int, int, bytes]]:
    """``{pid: (parent pid, uid, command line)}`` of every live process (zombies left out)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            uid = entry.stat().st_uid
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            found[int(entry.name)] = (int(parent), uid, command)
    return found


def left_running(run_pid: int) -> list[int]:
    """The live processes of the grading run whose main process was ``run_pid``.

    Its sandboxes and the students they forked (their command line ends with
    the run's mark) and, when grading as root, anything running as its
    students' uid (a student that started another program included).
    """
    mark = run_mark(run_pid).encode()
    uid = run_uid(run_pid) if os.geteuid() == 0 else None
    return sorted(
        pid
        for pid, (_, owner, command) in _alive().items()
        if mark in command.split(b"\0") or owner == uid
    )


def with_argument(argument: str) -> list[int]:
    """The live processes with ``argument`` among the words of their command line."""
    word = argument.encode()
    return sorted(pid for pid, (_, _, command) in _alive().items() if word in command.split(b"\0"))


def gone_within(run_pid: int, seconds: float) -> bool:
    """Is nothing of the run ``run_pid`` left running within ``seconds``?"""
    deadline = time.monotonic() + seconds
    while left_running(run_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not left_running(run_pid)


def run_with_pid(command: list[str], timeout: float, **popen: object) -> Ran:
    """Run ``command`` to its end, its output captured: what it did, and its pid."""
    return run_watched(command, timeout, watch=False, **popen)[0]


def run_watched(
    command: list[str], timeout: float, watch: bool = True, **popen: object
) -> tuple[Ran, set[int]]:
    """Run ``command`` to its end: what it did, and every pid seen below it meanwhile.

    The tree is looked at every 50 ms: a grading run's main process, and any
    process of its that grades, lives for seconds, so each is seen. The output
    goes to files meanwhile, so however much is printed, nothing waits on it.
    """
    seen: set[int] = set()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        running = subprocess.Popen(command, stdout=out, stderr=err, **popen)  # type: ignore[call-overload]
        seen.add(running.pid)
        deadline = time.monotonic() + timeout
        while watch and running.poll() is None and time.monotonic() < deadline:
            parents = _parents()
            grew = True
            while grew:
                below = {pid for pid, parent in parents.items() if parent in seen}
                grew = not below <= seen
                seen |= below
            time.sleep(0.05)
        try:
            running.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            running.kill()
            running.wait()
            raise
        texts = []
        for file in (out, err):
            file.seek(0)
            text = file.read().decode(errors="replace")  # newlines as text=True reads them
            texts.append(text.replace("\r\n", "\n").replace("\r", "\n"))
    done = Ran(command, running.returncode, *texts)
    done.pid = running.pid
    return done, seen


def _parents() -> dict[int, int]:
    """``{pid: parent pid}`` of every process."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    found[int(entry.name)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    return found


def students_of(owners: set[int]) -> list[int]:
    """The live processes running as a student of a run whose main process is in ``owners``."""
    return sorted(
        pid for pid, (_, uid, _) in _alive().items() if uid >= RUN_UIDS and uid - RUN_UIDS in owners
    )


def describe(pids: list[int]) -> str:
    """One line per process: pid, uid and the start of its command line (for a failure)."""
    alive = _alive()
    lines = []
    for pid in pids:
        if pid in alive:
            command = alive[pid][2].replace(b"\0", b" ")[:160].decode(errors="replace")
            lines.append(f"{pid} uid {alive[pid][1]}: {command}")
    return "\n".join(lines)
