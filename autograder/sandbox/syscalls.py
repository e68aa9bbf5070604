"""A seccomp filter for student code: no new namespaces, no mounts.

Dropping every capability stops a student's process from changing the mounts
it was given, but Linux lets any process create a user namespace of its own,
where it holds every capability again and may mount a fresh, unlimited tmpfs
(memory that no rlimit counts). Docker's default profile and bubblewrap's
``--disable-userns`` close the same door; this is the few instructions of it
we need, written as classic BPF so no extra package is required.

Denied: ``unshare`` and ``clone`` with any ``CLONE_NEW*`` flag, ``setns``, every
mount-related call, and ``clone3`` (whose flags live in memory a filter cannot
read; it fails with ENOSYS, and the C library then falls back to ``clone``).
System calls of another ABI (x32, or 32-bit calls on a 64-bit kernel) fail with
ENOSYS, so they cannot slip past the numbers below.
"""

import ctypes
import errno
import platform

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
NAMESPACE_FLAGS = 0x7E020000  #: CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
X32_BIT = 0x40000000

#: audit architecture, then system call numbers
ARCHES = {
    "x86_64": {
        "arch": 0xC000003E,
        "namespaces": (272, 56),  # unshare, clone
        "clone3": 435,
        # setns, mount, umount2, pivot_root, open_tree, move_mount, fsopen,
        # fsconfig, fsmount, fspick, mount_setattr
        "denied": (308, 165, 166, 155, 428, 429, 430, 431, 432, 433, 442),
        "x32": True,
    },
    "aarch64": {
        "arch": 0xC00000B7,
        "namespaces": (97, 220),
        "clone3": 435,
        "denied": (268, 40, 39, 41, 428, 429, 430, 431, 432, 433, 442),
        "x32": False,
    },
}

# classic BPF opcodes
LD_ABS_W, JEQ_K, JSET_K, JGE_K, RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (the low word of arg 0)

Instruction = tuple[int, int, int, int]  # code, jump if true, jump if false, k


class SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]


def _assemble(lines: list[tuple]) -> list[Instruction]:
    """Resolve ``(code, k, true_label, false_label)`` lines and ``("label", name)`` marks."""
    where, count = {}, 0
    for line in lines:
        if line[0] == "label":
            where[line[1]] = count
        else:
            count += 1
    out: list[Instruction] = []
    for line in lines:
        if line[0] == "label":
            continue
        code, k, true, false = line
        here = len(out)
        out.append(
            (
                code,
                0 if true is None else where[true] - here - 1,
                0 if false is None else where[false] - here - 1,
                k,
            )
        )
    return out


def program(table: dict) -> list[Instruction]:
    """The filter for one architecture (an entry of :data:`ARCHES`)."""
    lines: list[tuple] = [
        (LD_ABS_W, ARCH, None, None),
        (JEQ_K, table["arch"], None, "enosys"),
        (LD_ABS_W, NR, None, None),
    ]
    if table["x32"]:
        lines.append((JGE_K, X32_BIT, "enosys", None))
    lines += [(JEQ_K, number, "eperm", None) for number in table["denied"]]
    lines.append((JEQ_K, table["clone3"], "enosys", None))
    lines += [(JEQ_K, number, "flags", None) for number in table["namespaces"]]
    lines += [
        (RET_K, RET_ALLOW, None, None),
        ("label", "flags"),
        (LD_ABS_W, ARG0, None, None),
        (JSET_K, NAMESPACE_FLAGS, "eperm", None),
        (RET_K, RET_ALLOW, None, None),
        ("label", "eperm"),
        (RET_K, RET_ERRNO | errno.EPERM, None, None),
        ("label", "enosys"),
        (RET_K, RET_ERRNO | errno.ENOSYS, None, None),
    ]
    return _assemble(lines)


def install() -> str:
    """Install the filter in this process (and all it starts); '' or what went wrong.

    Sets ``no_new_privs`` first, which an unprivileged filter requires and which
    keeps any program the student runs from gaining privileges.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"no_new_privs ({ctypes.get_errno()})"
    table = ARCHES.get(platform.machine())
    if table is None:
        return f"system call filter (no filter for {platform.machine()})"
    instructions = program(table)
    filters = (SockFilter * len(instructions))(*[SockFilter(*i) for i in instructions])
    prog = SockFprog(len(instructions), filters)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        return f"system call filter ({ctypes.get_errno()})"
    return ""
