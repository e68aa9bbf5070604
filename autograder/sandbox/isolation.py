"""The student's process shut off from everything else, as it starts (in a child of the zygote).

In the order :func:`autograder.sandbox.student.child` calls them: an
unprivileged user (:func:`drop_privileges`), fresh namespaces
(:func:`isolate`), a fresh scratch folder with the helper files read-only and
every other mount read-only (:func:`fresh_filesystems`), no capabilities and
:mod:`~autograder.sandbox.syscalls`' filter (:func:`drop_capabilities`), and
the limits on memory, processes, file size and CPU time (:func:`set_limits`).
Each returns what it could not do, for the page's list of missing protections.
Only the standard library: this runs in every student's process.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import marshal
import os
import resource
from collections.abc import Sequence

from autograder.sandbox import syscalls

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS = 0x40000000, 0x08000000, 0x04000000
MS_RDONLY, MS_NOSUID, MS_NODEV = 0x1, 0x2, 0x4
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
# statvfs flag -> mount flag: nosuid, nodev, noexec, noatime, nodiratime, relatime
LOCKED_FLAGS = ((2, 2), (4, 4), (8, 8), (1024, 1024), (2048, 2048), (4096, 1 << 21))

# What a student's process sees: its writable space is a fresh tmpfs on /tmp
# (also behind /dev/shm); the helper files sit read-only in LAB, on sys.path.
SCRATCH = "/tmp"
#: where the helper files sit, read-only, in the sandbox
LAB = "/tmp/lab"


@functools.cache
def c_library() -> ctypes.CDLL:
    """The C library, for the calls Python lacks: unshare, mount, prctl, capset.

    One per process: the zygote makes it, and looks up the functions its children
    call (:func:`~autograder.sandbox.student.zygote`), so each child inherits them
    rather than loading them again.
    """
    return ctypes.CDLL(None, use_errno=True)


def _read_proc(name: str) -> str:
    """The text of ``/proc/self/<name>``, read without a text file object: what each new
    student's process reads while it starts, where every object made costs time."""
    fd = os.open(f"/proc/self/{name}", os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode()


def _write_proc(name: str, text: str) -> None:
    """Write ``text`` to ``/proc/self/<name>`` in one write, as the kernel wants it."""
    fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _errno() -> str:
    return os.strerror(ctypes.get_errno())


def drop_privileges(uid: int) -> list[str]:
    """Become ``uid`` (and gid) with no supplementary groups; [] or what failed.

    Called by root before anything else, so the student's process is not root
    as seen from outside: it cannot read root-only files bound into the sandbox.
    """
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except OSError as error:
        return [f"unprivileged user ({error.strerror})"]
    return []


def isolate() -> list[str]:
    """Enter fresh namespaces; return a list of what could not be isolated.

    Must be called in a freshly forked child; the caller forks once more so the
    student's code runs as pid 1 of the new pid namespace. The new user
    namespace maps only this process's own uid and gid, to themselves.
    """
    libc = c_library()
    uid, gid = os.getuid(), os.getgid()
    # Changing uid cleared this; the uid maps below need it set.
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if libc.unshare(flags) != 0:
        return [f"namespaces ({_errno()})"]
    _write_proc("setgroups", "deny")
    _write_proc("uid_map", f"{uid} {uid} 1")
    _write_proc("gid_map", f"{gid} {gid} 1")
    return []


def _mounts() -> list[tuple[str, bool]]:
    """``[(mount point, writable)]`` of this mount namespace, from /proc/self/mountinfo."""
    found = []
    for line in _read_proc("mountinfo").splitlines():
        fields = line.split()
        point = fields[4].encode().decode("unicode_escape")  # \040 is a space
        found.append((point, "rw" in fields[5].split(",")))
    return found


def _read_only(point: str) -> str:
    """Remount ``point`` read-only, keeping the flags it is locked with; '' or the error."""
    locked = os.statvfs(point).f_flag
    kept = sum(flag for st, flag in LOCKED_FLAGS if locked & st)
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | kept
    if c_library().mount(None, point.encode(), None, flags, None) != 0:
        return f"read-only {point} ({_errno()})"
    return ""


def fresh_filesystems(
    scratch_mb: int, files: dict[str, bytes], keep: Sequence[str] = (), proc: bool = True
) -> list[str]:
    """Give the student a fresh writable space and make everything else read-only.

    In the student's own mount namespace: a new tmpfs of ``scratch_mb`` MiB on
    /tmp, also mounted behind /dev/shm, is the only writable place, and it
    vanishes with the student; ``files`` ({path: bytes}) are written to
    :data:`LAB` and made read-only; every other mount (the sandbox's root, /dev)
    becomes read-only, so nothing a student writes is left for the next one.
    keep: folders under /tmp that must stay visible (a Python installation in a
    clone under /tmp): bound again, read-only, on top of the new tmpfs. proc:
    mount a /proc of the student's own pid namespace (outside bubblewrap; in it
    the kernel refuses one).
    Returns a list of what could not be done.
    """
    libc = c_library()
    libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    held = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in keep}
    options = f"size={scratch_mb}m,mode=755".encode()
    if libc.mount(b"tmpfs", SCRATCH.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        return [f"private scratch ({_errno()})"]
    problems = []
    for path, fd in held.items():
        os.makedirs(path, exist_ok=True)
        source = f"/proc/self/fd/{fd}".encode()
        if libc.mount(source, path.encode(), None, MS_BIND | MS_REC, None) != 0:
            problems.append(f"keeping {path} visible ({_errno()})")
        os.close(fd)
    shm = os.path.join(SCRATCH, ".shm")
    os.mkdir(shm, 0o700)
    if os.path.isdir("/dev/shm") and libc.mount(shm.encode(), b"/dev/shm", None, MS_BIND, None):
        problems.append(f"private /dev/shm ({_errno()})")
    write_files(LAB, files)
    link_files(LAB, SCRATCH)
    if libc.mount(LAB.encode(), LAB.encode(), None, MS_BIND, None) != 0:
        problems.append(f"read-only helper files ({_errno()})")
    else:
        problems.append(_read_only(LAB))
    mine = (SCRATCH, "/dev/shm", "/proc")
    kept = tuple(held)
    for point, writable in _mounts():
        ours = any(point == m or point.startswith(m + "/") for m in mine)
        if writable and (not ours or any(point == k or point.startswith(k + "/") for k in kept)):
            problems.append(_read_only(point))
    if proc:
        libc.mount(b"proc", b"/proc", b"proc", 0, None)
    return [p for p in problems if p]


def write_files(folder: str, files: dict[str, bytes]) -> None:
    """Write ``files`` ({path: bytes}, paths relative and in subfolders too) into ``folder``.

    A path that would leave ``folder`` (absolute, or through ``..``) is skipped.
    A Python module among them gets its bytecode beside it, when the zygote
    compiled it (:func:`compile_helpers`): the folder is read-only to the
    student, so without it every student's first import would compile it again.
    """
    os.makedirs(folder, exist_ok=True)
    for name, data in files.items():
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts or name.startswith("/"):
            continue
        path = os.path.join(folder, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
        compiled = _bytecode.get((name, data))
        if compiled is not None:
            cached = importlib.util.cache_from_source(path)
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            with open(cached, "wb") as handle:
                handle.write(compiled)


def link_files(lab: str, working: str) -> None:
    """Make the assignment's files in ``lab`` reachable from the working folder ``working``
    by the paths the notebook uses (``open("data.txt")``, ``data/scores.csv``), as
    ``nbgrader autograde`` lays them beside the notebook: a link for each top-level entry."""
    for entry in os.listdir(lab):
        target = os.path.join(working, entry)
        if entry != "__pycache__" and not os.path.lexists(target):
            os.symlink(os.path.relpath(os.path.join(lab, entry), working), target)


#: helper modules' bytecode, compiled in the zygote: ``{(path, bytes): .pyc bytes}``
_bytecode: dict[tuple[str, bytes], bytes] = {}
MAX_COMPILED = 32  #: helper modules the zygote keeps bytecode for


def compile_helpers(modules: dict[str, str]) -> None:
    """Compile ``modules`` ({path: text}) once, in the zygote.

    As checked-hash ``.pyc`` files (PEP 552): Python uses one only while the
    source beside it hashes as it did, whatever the files' times, and compiles
    the source as usual otherwise. The files are the course's, sent by the grader,
    never a student's; compiling runs none of their code.
    """
    for name, text in modules.items():
        base = os.path.basename(name)
        source = text.encode()
        if not base.endswith(".py") or (name, source) in _bytecode:
            continue
        if len(_bytecode) >= MAX_COMPILED:
            break
        try:
            code = compile(source, base, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue  # the student's import fails with Python's own message
        header = importlib.util.MAGIC_NUMBER + (0b11).to_bytes(4, "little")
        _bytecode[(name, source)] = (
            header + importlib.util.source_hash(source) + marshal.dumps(code)
        )


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> list[str]:
    """Drop every capability for good, then install :mod:`autograder.sandbox.syscalls`' filter.

    The bounding and ambient sets are cleared too, so no program the student
    runs can regain one. Returns a list of what could not be done.
    """
    libc = c_library()
    for capability in range(64):  # past the kernel's last one, prctl just says EINVAL
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    problems = []
    if libc.capset(ctypes.byref(CapHeader(LINUX_CAPABILITY_VERSION_3, 0)), (CapData * 2)()):
        problems.append(f"dropping capabilities ({_errno()})")
    problems.append(syscalls.install())
    lines = _read_proc("status").splitlines()
    status = dict(line.split(":", 1) for line in lines if ":" in line)
    if int(status.get("CapEff", "0").strip(), 16):
        problems.append(f"capabilities left: {status['CapEff'].strip()}")
    return [p for p in problems if p]


def set_limits(limits: dict[str, int]) -> None:
    """Apply the per-submission resource limits (bytes, counts, seconds).

    The memory limit is on top of what the preloaded libraries already map, and
    the scratch tmpfs is paid out of it (tmpfs pages are not counted by
    ``RLIMIT_AS``), so ``limits["memory"]`` bytes are the student's in all.
    """
    mapped = int(_read_proc("statm").split()[0]) * resource.getpagesize()
    own = max(limits["memory"] - limits["scratch_mb"] * 2**20, 2**24)
    memory = mapped + own
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size"], limits["file_size"]))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 5))
    nproc = limits["processes"]
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
