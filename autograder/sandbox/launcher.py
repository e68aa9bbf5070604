"""Starting and talking to the sandboxed student processes.

One :class:`Sandbox` per worker: a zygote (:mod:`autograder.sandbox.student`) started
once inside bubblewrap, with a read-only view of the system and the Python
installation and nothing of the course: not the source notebook, not the
gradebook, not the submissions, not the results. Every submission gets a
:class:`Student`: a child forked from the zygote into namespaces of its own,
spoken to over its own socket with deadlines on every request.

Where bubblewrap or user namespaces are missing, the grader still runs, and
``Sandbox.unprotected`` lists what it runs without, for the TA to see.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.sandbox import served, wire
from autograder.sandbox.clean_up import (
    STUDENTS_FOLDER,
    kill_until_gone,
    process_owner,
    remove_tree,
    run_uid,
)
from autograder.sandbox.isolation import PR_SET_PDEATHSIG, c_library

ZYGOTE = "autograder.sandbox.student import zygote"  #: in every sandbox's command line
#: Ends every sandbox's command line, then the pid of the run it belongs to (:func:`run_mark`).
RUN_MARK = "--grading-run="
GRACE = 3.0  #: seconds an interrupted cell gets to stop before its process is killed
PROCESS_SLACK = 16  #: processes and threads the sandbox itself needs beyond the student's
#: bytes of one figure handed to the zygote: a unix datagram's usual size limit is 208 KiB
REMEMBER_BYTES = 2**17


class StudentGone(Exception):
    """The student's process died, or was killed after not answering.

    outside: it was killed by something the grader did not do and the student
    could not (a SIGKILL from outside its sandbox: the host's out-of-memory
    killer, an operator), or the sandbox itself failed: not the student's doing.
    """

    def __init__(self, why: str, outside: bool = False) -> None:
        super().__init__(why)
        self.outside = outside


class CellTimeout(Exception):
    """A request did not finish in time; ``reply`` is what came back after the interrupt."""

    def __init__(self, reply: dict[str, Any] | None = None) -> None:
        super().__init__("no reply before the timeout")
        self.reply = reply


class Tampered(Exception):
    """The student's process sent something that is not a well-formed reply."""


@dataclass
class Limits:
    """Per-submission limits.

    memory: bytes the student's code may allocate; file_size: bytes per file;
    processes: extra processes or threads; scratch_mb: the student's only writable
    space (a tmpfs on /tmp, also behind /dev/shm), MiB, paid out of ``memory``;
    cpu_seconds: CPU time for the whole submission.
    """

    memory: int = 2 * 2**30
    file_size: int = 64 * 2**20
    processes: int = 64
    scratch_mb: int = 64
    cpu_seconds: int = 600

    def for_child(self, uid: int) -> dict[str, int]:
        """The limits as the child applies them (processes counted for ``uid``)."""
        mine = sum(
            1 for p in Path("/proc").iterdir() if p.name.isdigit() and process_owner(p) == uid
        )
        return {
            "memory": self.memory,
            "file_size": self.file_size,
            "processes": mine + self.processes,
            "scratch_mb": self.scratch_mb,
            "cpu_seconds": self.cpu_seconds,
        }


def _pids_cgroup(maximum: int) -> Path | None:
    """A new pids cgroup allowing ``maximum`` processes and threads; its folder, or None.

    The kernel does not apply ``RLIMIT_NPROC`` to root, so when grading as root
    only a cgroup stops a fork bomb. Tries cgroup v1's pids hierarchy, then v2.
    """
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        group = base / f"autograder-{os.getpid()}-{time.monotonic_ns()}"
        try:
            group.mkdir()
        except OSError:
            continue
        try:
            (group / "pids.max").write_text(str(maximum))
            return group
        except OSError:
            group.rmdir()
    return None


# What of /etc the student's Python needs: the dynamic linker's cache, the
# BLAS alternatives Debian's numpy links through, names for uids, time zones,
# MIME types and a distribution Python's own settings. Nothing else of /etc (no
# keys, no shadow file) is in the sandbox.
ETC = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone",
    "passwd", "group", "nsswitch.conf", "mime.types", "fonts", "matplotlibrc",
    "python3", "python3.11", "python3.12", "python3.13", "python3.14",
)  # fmt: skip


MAX_HELPER_BYTES = 12 * 2**20  #: the assignment's files, in all: base64 of them fits a frame
MAX_MODULE_CHARS = 2**16  #: a helper module longer than this is not compiled in the zygote


def helper_modules(files: dict[str, bytes]) -> dict[str, str]:
    """``{path: text}``: the Python modules among ``files``, for the zygote to compile once."""
    modules = {}
    for path, data in files.items():
        if path.endswith(".py") and len(data) <= MAX_MODULE_CHARS:
            try:
                modules[path] = data.decode()
            except UnicodeDecodeError:
                continue
    return modules


def check_files(files: dict[str, bytes]) -> None:
    """ValueError, in one sentence, when ``files`` are too many bytes for the frame that
    carries them to a student's process (:data:`MAX_HELPER_BYTES`)."""
    total = sum(len(data) for data in files.values())
    if total > MAX_HELPER_BYTES:
        limit = MAX_HELPER_BYTES // 2**20
        raise ValueError(f"the assignment's files hold {total / 2**20:.1f} MiB; at most {limit}")


def encode_files(files: dict[str, bytes]) -> dict[str, str]:
    """``{path: base64}``: ``files`` as the student's process receives them
    (ValueError from :func:`check_files` first)."""
    check_files(files)
    return {path: base64.b64encode(data).decode() for path, data in files.items()}


def run_mark(owner: int) -> str:
    """The last word of the command line of every sandbox of the run whose main process is
    ``owner``, and of every student it forks: ``ps`` shows which run each belongs to."""
    return f"{RUN_MARK}{owner}"


def _ancestors(path: str) -> list[str]:
    """The folders above ``path``, outermost first: ``/a/b/c`` -> ``/a``, ``/a/b``."""
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _python_paths() -> list[str]:
    """The folders the student's Python needs: the interpreter, its prefixes, this package."""
    return sorted(
        {
            sys.prefix,
            sys.base_prefix,
            os.path.dirname(os.path.realpath(sys.executable)),
            str(Path(__file__).resolve().parents[1]),  # the autograder package: the zygote's code
        }
    )


def _bwrap_command(as_root: bool) -> list[str]:
    """bubblewrap's arguments for a read-only system with nothing of the course in it.

    As root, bubblewrap makes no user namespace (root's would map only uid 0, so
    nothing could drop to another uid) and keeps just the capabilities the
    zygote needs to hand each student an unprivileged uid and to signal it.
    """
    command = ["bwrap", "--die-with-parent", "--new-session"]
    if as_root:
        command += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        command += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
        for capability in ("CAP_SETUID", "CAP_SETGID", "CAP_KILL"):
            command += ["--cap-add", capability]
    else:
        command += ["--unshare-all"]
    # The scratch tmpfs first: the binds below may live under /tmp (a clone there).
    command += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    for path in font_lists():
        command += ["--ro-bind", path, f"{SANDBOX_MPLCONFIGDIR}/{os.path.basename(path)}"]
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"):
        if os.path.islink(path):
            command += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            command += ["--ro-bind", path, path]
    command += ["--perms", "0755", "--dir", "/etc"]
    for name in ETC:
        path = f"/etc/{name}"
        if os.path.exists(path):
            command += ["--ro-bind", path, path]
    made = set()
    for path in _python_paths():
        if path.startswith(("/usr/", "/etc/")):
            continue
        for folder in _ancestors(path):  # bubblewrap would make them 0700: unreadable to nobody
            if folder not in made and folder != "/tmp":
                command += ["--perms", "0755", "--dir", folder]
                made.add(folder)
        command += ["--ro-bind", path, path]
    command += ["--chdir", "/tmp"]
    return command


SANDBOX_MPLCONFIGDIR = "/tmp/.matplotlib"  #: matplotlib's folder in bubblewrap's sandbox


def font_lists() -> list[str]:
    """The grader's own matplotlib font lists (``fontlist-v*.json`` in its cache folder).

    A zygote reads them instead of listing the system's fonts itself, about
    0.2 s of CPU per sandbox. Empty until the grader's user has used
    matplotlib once (its workers do, running the lab's test helpers). The
    figures do not change: a font a list names that the sandbox lacks makes
    matplotlib list the fonts afresh, as it did without one.
    """
    cache = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "matplotlib"
    )
    return sorted(str(p) for p in Path(cache).glob("fontlist-v*.json") if p.is_file())


def _environment() -> dict[str, str]:
    keep = ("LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env.update(
        HOME="/tmp",
        IPYTHONDIR="/tmp/.ipython",
        MPLCONFIGDIR=SANDBOX_MPLCONFIGDIR,
        # As stock nbgrader's autograde sets it: a notebook may skip what only a reader
        # needs (nbgrader's FAQ, "Can I modify the notebook behavior during autograding?").
        NBGRADER_EXECUTION="autograde",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        PYTHONHASHSEED="0",
    )
    return env


def _students_folder(owner: int, others: bool) -> str:
    """A new folder for a sandbox without bubblewrap: its home, its caches, its students'.

    Replaces the /tmp paths of :func:`_environment` (a shared /tmp would let a
    student, or anyone on the host, plant settings there for the next run).
    Each student's private folder is made in it and removed when that student
    ends; what a leftover process adds is removed with it at close. others:
    students run as another uid, who may add folders to it but not list it
    (1733, as /tmp is made); the caches stay the grader's own. owner: the
    run's main process, which removes what its workers could not
    (:func:`remove_students_folders`).
    """
    base = tempfile.gettempdir()
    if others and not _reachable_by_others(base):
        base = "/tmp"  # a student of another uid could not even enter the grader's
    folder = tempfile.mkdtemp(prefix=f"{STUDENTS_FOLDER}{owner}-", dir=base)
    for cache in (".ipython", ".matplotlib"):
        os.mkdir(os.path.join(folder, cache), 0o755)
    for path in font_lists():
        shutil.copyfile(path, os.path.join(folder, ".matplotlib", os.path.basename(path)))
    os.chmod(folder, 0o1733 if others else 0o700)
    return folder


def _reachable_by_others(folder: str) -> bool:
    """May any user pass through ``folder`` and every folder above it?"""
    path = Path(folder).resolve()
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in [path, *path.parents])


def _homes(folder: str) -> dict[str, str]:
    """The zygote's home and caches in ``folder`` (:func:`_students_folder`)."""
    return {
        "HOME": folder,
        "TMPDIR": folder,
        "IPYTHONDIR": os.path.join(folder, ".ipython"),
        "MPLCONFIGDIR": os.path.join(folder, ".matplotlib"),
    }


class Sandbox:
    """A zygote that forks one isolated student process per submission."""

    def __init__(
        self,
        use_bwrap: bool = True,
        start_timeout: float = 120,
        warm_up: str = "",
        owner: int | None = None,
        warm_up_code: str = "",
    ) -> None:
        """warm_up: import statements the zygote runs once, before any student;
        warm_up_code: code it runs once after them, as a cell whose outputs and
        names are dropped (both the course's: ``c.Autograder.preload`` and
        ``c.Autograder.warm_up``). owner: the grading run's main process's pid,
        this one's if None.

        Its students run as :func:`~autograder.sandbox.clean_up.run_uid` of it.
        """
        self.unprotected = []
        self.owner = os.getpid() if owner is None else owner
        unprivileged = run_uid(self.owner)
        self.warm_up = warm_up
        self.warm_up_code = warm_up_code
        if use_bwrap and not shutil.which("bwrap"):
            self.unprotected.append("bubblewrap is not installed")
            use_bwrap = False
        self.uid = None  # student code runs as the grader's own user
        self.figures: int | None = None  # figures its students start with; None: not learned
        self.scratch: str | None = None  # the students' folders, when not in bubblewrap
        if use_bwrap:
            as_root = os.geteuid() == 0
            try:
                self._start(_bwrap_command(as_root), start_timeout)
                self.uid = unprivileged if as_root else None
                return
            except RuntimeError as why:
                self.unprotected.append(f"bubblewrap did not start ({why})")
        # Without bubblewrap the student still never runs as root: each child drops
        # to the run's own uid (with no capabilities, no_new_privs and the seccomp
        # filter), so it reads and writes only what any user may; what it leaves in
        # the shared places is removed when the run ends (remove_user_files).
        self.uid = unprivileged if os.geteuid() == 0 else None
        who = "nobody" if self.uid is not None else "the grader's own user"
        self.unprotected.append(
            f"no filesystem sandbox: student code runs as {who} and can read what that "
            "user can read (keep the course and results readable by their owner only)"
        )
        self.scratch = _students_folder(self.owner, others=self.uid is not None)
        try:
            self._start([], start_timeout)
        except BaseException:
            remove_tree(self.scratch)
            raise

    def _start(self, prefix: list[str], start_timeout: float) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        package = Path(__file__).resolve().parents[1]  # autograder/
        # Taken off sys.path again once imported, unless it is already there: installed
        # in site-packages, that folder holds the packages a student's process needs too.
        boot = (
            f"import sys; boot = {str(package.parent)!r}; "
            "added = boot not in sys.path; sys.path.insert(0, boot); "
            f"from {ZYGOTE}; "
            f"zygote({child.fileno()}, boot if added else None, {self.warm_up!r}, "
            f"{self.warm_up_code!r})"
        )
        # The package is imported from the folder bound into the sandbox, however
        # it was installed; -I keeps the environment and the working folder out.
        command = [*prefix, sys.executable, "-I", "-c", boot, run_mark(self.owner)]
        self.cgroup = _pids_cgroup(Limits.processes + PROCESS_SLACK)
        if self.cgroup is None and os.getuid() == 0:
            self.unprotected.append(
                "process limit: grading as root with no pids cgroup to join (RLIMIT_NPROC "
                "does not bind root); run as another user or give the grader a cgroup"
            )
        procs = str(self.cgroup / "cgroup.procs") if self.cgroup else None
        self.process = subprocess.Popen(
            command,
            pass_fds=[child.fileno()],
            env=_environment() | (_homes(self.scratch) if self.scratch else {}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            # Join the cgroup before exec, so nothing the sandbox starts escapes it.
            preexec_fn=(lambda: Path(procs).write_text(str(os.getpid()))) if procs else None,
        )
        child.close()
        self.control = parent
        self.control.settimeout(start_timeout)
        try:
            ready = json.loads(self.control.recv(4096) or b"{}")
        except (OSError, ValueError):
            ready = {}
        if not ready.get("ready"):
            self.process.kill()
            self.process.wait()
            _remove_cgroup(self.cgroup)
            assert self.process.stderr is not None
            detail = self.process.stderr.read().decode(errors="replace").strip()[-500:]
            self.control.close()
            raise RuntimeError(detail or "no reason given")
        self.control.settimeout(None)

    def spawn(self, files: dict[str, bytes], limits: Limits, timeout: float = 30) -> Student:
        """A fresh, isolated student process, with ``files`` ({path: bytes}) in its scratch.

        The files go over the student's own stream socket, before any student code
        runs (the control socket's messages are bounded by the kernel's socket
        buffer); the zygote is sent only the helper modules' text, to compile once.
        """
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ended, ended_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        uid = os.getuid() if self.uid is None else self.uid
        message = {
            "op": "spawn",
            "modules": helper_modules(files),
            "limits": limits.for_child(uid),
            "uid": self.uid,
            "keep": [p for p in _python_paths() if p == "/tmp" or p.startswith("/tmp/")],
            # bubblewrap's /proc has parts covered, so the kernel refuses a fresh one there
            # (and logs "Mount too revealing" for each student): not asked for in it
            "proc": self.scratch is not None,
        }
        fds = [theirs.fileno(), ended_theirs.fileno()]
        try:
            try:
                socket.send_fds(self.control, [json.dumps(message).encode()], fds)
            except OSError as error:
                raise StudentGone(f"the sandbox is gone: {error}", outside=True) from None
            finally:
                theirs.close()
                ended_theirs.close()
            try:
                mine.settimeout(timeout)
                wire.send(mine, {"files": encode_files(files)})
                hello = wire.receive(mine, time.monotonic() + timeout)
                mine.settimeout(None)
            except (OSError, EOFError, ValueError, wire.WireError) as error:
                why = f"the student process did not start: {error}"
                raise StudentGone(why, outside=True) from None
            if "failed" in hello:  # the sandbox could not set the process up: not the student's
                why = f"the sandbox could not set up the student's process: {hello['failed']}"
                raise StudentGone(why, outside=True)
        except StudentGone:
            mine.close()
            ended.close()
            raise
        unprotected = list(hello.get("unprotected", []))
        private = str(hello.get("private") or "")  # said before any student code ran
        mine_to_remove = self.scratch is not None and os.path.dirname(private) == self.scratch
        return Student(
            self, mine, int(hello["pid"]), unprotected, ended, cpu_seconds=limits.cpu_seconds,
            private=private if mine_to_remove else None,
        )  # fmt: skip

    def try_student(self, files: dict[str, bytes], limits: Limits, timeout: float = 30) -> None:
        """Start one student process, run nothing, and end it; RuntimeError (one line) when
        the sandbox cannot set one up.

        Such a failure is the installation's or the course folder's (a folder the
        students' user may not read, without bubblewrap), the same for every student:
        the run stops before anyone is graded instead of failing each of them in turn.
        """
        try:
            self.spawn(files, limits, timeout).close()
        except StudentGone as gone:
            why = str(gone)
            if "PermissionError" in why and self.uid is not None:
                why += (
                    f"; without bubblewrap, student code runs as uid {self.uid}: let it read the "
                    "course folder and the grader's packages (chmod o+rX), or install bubblewrap"
                )
            raise RuntimeError(why) from None

    def learn_figures(
        self, files: dict[str, bytes], limits: Limits, cells: Sequence[str], timeout: float
    ) -> int:
        """Run trusted ``cells`` in a student process; the zygote keeps the PNGs they drew.

        Every student forked after this starts with them (:mod:`~autograder.sandbox.figures`).
        ``cells``: the release's own code, never a student's nor a solution; each may take
        ``timeout`` seconds. Returns how many figures its students start with now;
        a run that fails in any way adds none, and every student draws as before.
        """
        self.figures = self.figures or 0
        try:
            student = self.spawn(files, limits)
        except StudentGone:
            return self.figures
        try:
            student.request({"op": "record_figures"}, timeout)
            for source in cells:
                student.request({"op": "run", "source": source}, timeout)
            drawn = student.request({"op": "figures"}, timeout).get("drawn") or []
        except (StudentGone, CellTimeout, Tampered):
            return self.figures
        finally:
            student.close()
        for entry in drawn:
            message = json.dumps({"op": "remember", "figures": [entry]}).encode()
            if len(message) > REMEMBER_BYTES:
                continue
            try:
                self.control.send(message)
            except OSError:
                break
            self.figures += 1
        return self.figures

    def learn_cells(self, cells: Sequence[str]) -> None:
        """Have the zygote transform the course's own ``cells`` (their text) as IPython
        would, once, for every student forked after this (:mod:`~autograder.sandbox.transforms`).

        ``cells``: the release's text, never a student's nor a solution. Sent in datagrams of
        at most ``REMEMBER_BYTES``; a cell too long for one is left out (it is
        transformed in each student's process, as before).
        """
        room = REMEMBER_BYTES - 64  # the message around the list
        batches: list[list[str]] = [[]]
        size = 2  # "[]"
        for text in cells:
            length = len(json.dumps(text)) + 2  # ASCII (json.dumps escapes the rest), ", "
            if length > room:
                continue
            if size + length > room:
                batches.append([])
                size = 2
            batches[-1].append(text)
            size += length
        for batch in batches:
            if batch:
                try:
                    self.control.send(json.dumps({"op": "cells", "cells": batch}).encode())
                except OSError:
                    return

    def signal(self, pid: int, number: int) -> None:
        """Have the zygote send signal ``number`` to its child ``pid``."""
        try:
            self.control.send(json.dumps({"op": "signal", "pid": pid, "signal": number}).encode())
        except OSError:
            pass

    def alive(self) -> bool:
        """Is the zygote still running?"""
        return self.process.poll() is None

    def close(self) -> None:
        """Stop the zygote and everything it started, however it hid.

        A student's process can leave its session and its pid namespace is
        missing in some containers; its pids cgroup still holds everything
        started inside it, so every process there is killed and waited for.
        """
        self.control.close()
        if self.alive():
            self.process.kill()
        self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        _kill_cgroup(self.cgroup)
        _remove_cgroup(self.cgroup)
        if self.scratch is not None:
            remove_tree(self.scratch)


def _kill_cgroup(group: Path | None, wait: float = 5.0) -> None:
    """SIGKILL every process in a pids cgroup, until none is left (or ``wait`` runs out)."""

    if group is None:
        return
    procs = group / "cgroup.procs"

    def members() -> list[int]:
        try:
            return [int(p) for p in procs.read_text().split()]
        except (OSError, ValueError):
            return []

    kill_until_gone(members, wait)


def _remove_cgroup(group: Path | None, wait: float = 2.0) -> None:
    """Remove a pids cgroup once the processes in it are gone."""
    deadline = time.monotonic() + wait
    while group is not None:
        try:
            group.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


#: what a stand-in is: called with the student's arguments, in the grader's process
StandIn = Callable[..., Any]
MAX_CALLBACK = 2**20  #: bytes of arguments one call to a stand-in may carry


@dataclass
class Student:
    """One submission's sandboxed process; every request has a deadline."""

    sandbox: Sandbox
    sock: socket.socket
    pid: int
    unprotected: list = field(default_factory=list)
    ended: socket.socket | None = None  # how the process ended, from its watcher (child())
    cpu_seconds: float = Limits.cpu_seconds  # its CPU limit: a kill past it is its own doing
    dead: bool = False
    sent: int = 0  # requests so far; each reply must carry its request's number
    private: str | None = None  # its own folder in the sandbox's, where it has no namespaces

    @property
    def namespaced(self) -> bool:
        """Does it run in namespaces of its own (else in a private folder, unwatched)?"""
        return not any(p.startswith("namespaces") for p in self.unprotected)

    def cause_of_death(self, seen: str) -> StudentGone:
        """Why the student's process is gone, now that its socket closed (``seen``).

        The report comes from the process that started it, which the student's
        code can neither see nor signal, so only what the grader and the
        student did not do counts as outside: a SIGKILL under the CPU limit,
        or the watcher itself killed. Without namespaces the student could
        fake either, so every death is then the student's.
        """
        if self.ended is None:
            return StudentGone(seen)
        self.ended.settimeout(GRACE)
        try:
            data = self.ended.recv(4096)
        except TimeoutError:  # alive, yet it closed its side: the student's doing
            self.sandbox.signal(self.pid, signal.SIGKILL)
            return StudentGone(f"{seen}: the notebook closed its connection to the grader")
        except OSError:
            data = b""
        watched = self.namespaced
        try:
            how = json.loads(data) if data else {}
        except ValueError:
            how = {}
        if not how:
            return StudentGone(f"{seen}: its sandbox was killed from outside", outside=watched)
        cpu_limit = self.cpu_seconds
        if "exit" in how:
            return StudentGone(f"the notebook's process exited with status {how['exit']}")
        number = int(how.get("signal", 0))
        name = signal.Signals(number).name if number in set(signal.Signals) else str(number)
        if number == signal.SIGXCPU or float(how.get("cpu_seconds", 0)) >= cpu_limit:
            return StudentGone(f"the notebook ran past its CPU time limit ({cpu_limit} s)")
        if number == signal.SIGKILL:
            return StudentGone(f"{seen}: killed from outside the grader ({name})", outside=watched)
        return StudentGone(f"the notebook's process crashed ({name})")

    def _reply(self, number: int, deadline: float, stand_ins: dict[str, StandIn]) -> dict[str, Any]:
        """The reply to request ``number``, serving the stand-ins the student calls meanwhile.

        One absolute deadline holds over all of it: every read of every frame
        (a reply sent a byte at a time ends at the deadline) and every call served.
        """
        while True:
            reply = wire.receive(self.sock, deadline)
            if "stand_in" in reply:
                self._serve(reply, stand_ins, deadline)
                continue
            if reply.get("id") != number:
                raise wire.WireError(f"a reply to request {reply.get('id')!r}, not {number}")
            return reply

    def _serve(self, call: dict[str, Any], stand_ins: dict[str, StandIn], deadline: float) -> None:
        """Answer one call the student's code made to a stand-in, here, with data only.

        Only a name served during the current request is answered; its
        arguments are bounded (:data:`MAX_CALLBACK`), and the call itself by the
        request's ``deadline`` and a memory budget (:mod:`~autograder.sandbox.served`).
        Errors go back as data; a call past the deadline is the request's
        TimeoutError.
        """
        name = str(call.get("stand_in"))
        try:
            function = stand_ins.get(name)
            if function is None:
                raise NameError(f"{name} is not served by the test running now")
            if len(json.dumps([call.get("args"), call.get("kwargs")])) > MAX_CALLBACK:
                raise ValueError(f"arguments of over {MAX_CALLBACK:,} bytes for {name}")
            args = tuple(wire.decode(a) for a in call.get("args") or [])
            kwargs = {str(k): wire.decode(v) for k, v in (call.get("kwargs") or {}).items()}
            result = served.call(function, args, kwargs, deadline, name)
            answer = {"ok": True, "result": wire.encode(result)}
        except TimeoutError:
            raise
        except Exception as error:  # the stand-in's error, or bad arguments: the student's to see
            answer = {"ok": False, "ename": type(error).__name__, "evalue": str(error)[:2000]}
        self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
        wire.send(self.sock, answer)

    def request(
        self, message: dict[str, Any], timeout: float, stand_ins: dict[str, StandIn] | None = None
    ) -> dict[str, Any]:
        """Send ``message`` and wait up to ``timeout`` seconds for the reply.

        stand_ins: ``{name: function}`` the student's code may call while this
        request runs (:func:`autograder.sandbox.student.call` binds the names);
        each call is computed here and only its result crosses. On timeout the
        student's code is interrupted (KeyboardInterrupt); if it does not stop
        within a few seconds its process is killed. A reply that does not
        answer this request (a forged or stale frame) is ``Tampered``.
        """
        if self.dead:
            raise StudentGone("the student process is gone")
        self.sent += 1
        serving = stand_ins or {}
        deadline = time.monotonic() + timeout
        try:
            self.sock.settimeout(max(timeout, 0.01))  # the send too, not a read's leftover
            wire.send(self.sock, {**message, "id": self.sent, "serve": sorted(serving)})
            return self._reply(self.sent, deadline, serving)
        except TimeoutError:
            self.sandbox.signal(self.pid, signal.SIGINT)
            try:
                reply = self._reply(self.sent, time.monotonic() + GRACE, {})
            except (TimeoutError, EOFError, OSError, wire.WireError):
                self.kill()
                raise CellTimeout() from None
            raise CellTimeout(reply) from None
        except (EOFError, OSError) as error:
            self.dead = True
            raise self.cause_of_death(str(error) or "the student process exited") from None
        except wire.WireError as error:
            self.kill()
            raise Tampered(str(error)) from None

    def kill(self) -> None:
        """Kill the student's process (and with it everything it started)."""
        if not self.dead:
            self.sandbox.signal(self.pid, signal.SIGKILL)
            self.dead = True

    def close(self) -> None:
        """Say goodbye, then make sure the process is gone."""
        if not self.dead:
            try:
                self.sock.settimeout(1)
                wire.send(self.sock, {"op": "bye"})
            except OSError:
                pass
            time.sleep(0)  # let it exit on its own before the kill below
        self.kill()
        self.sock.close()
        if self.ended is not None:
            if not self.namespaced:
                # Its watcher removes its private folder, then reports: waiting for
                # that means the next student (the same uid) never finds the folder.
                self.ended.settimeout(GRACE)
                try:
                    self.ended.recv(4096)
                except OSError:
                    pass
            self.ended.close()
        if self.private is not None:  # its watcher removed it, unless the student killed it
            remove_tree(self.private)


def die_with_parent(parent_pid: int | None) -> None:
    """Have the kernel kill this process when ``parent_pid`` dies, however it dies.

    Otherwise a grader stopped by SIGKILL (or the OOM killer) would leave its
    workers, and their sandboxes, waiting forever for work.
    """
    try:
        c_library().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the worker still exits when the pool's pipe closes
    if parent_pid is not None and os.getppid() != parent_pid:  # it died before the prctl
        os._exit(1)
