"""The student's side: runs inside the sandbox, never in the grader's process.

The *zygote* (:func:`zygote`, started by :class:`autograder.sandbox.Sandbox`,
inside bubblewrap) imports IPython, numpy and matplotlib once, then waits on its
control socket. For every submission it forks a child, which

1. leaves the zygote's namespaces for fresh user, pid, mount, network and IPC
   namespaces (pid 1 of its own pid namespace, so every process it starts dies
   with it), mounts a private tmpfs as its scratch folder, and sets limits on
   memory, processes, file size and CPU time;
2. runs the student's cells in an IPython shell, capturing their outputs as
   notebook outputs;
3. answers the grader's questions over its own socket: what is this name, call
   this function on these arrays. Only data crosses (:mod:`autograder.wire`).

Test cells never run here: the verdicts are computed by the grader, in a
process student code never touched (:mod:`autograder.execute`).
"""

import base64
import ctypes
import gc
import io
import json
import os
import resource
import shutil
import signal
import socket
import sys
import tempfile
import traceback
import warnings

from . import wire

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS = 0x40000000, 0x08000000, 0x04000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x20, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
# statvfs flag -> mount flag: nosuid, nodev, noexec, noatime, nodiratime, relatime
LOCKED_FLAGS = ((2, 2), (4, 4), (8, 8), (1024, 1024), (2048, 2048), (4096, 1 << 21))
MAX_CELL_OUTPUT = 2**20  # characters of stream output kept per cell


def c_library():
    """The C library, for the calls Python lacks: unshare, mount, prctl."""
    return ctypes.CDLL(None, use_errno=True)


def isolate():
    """Enter fresh namespaces; return a list of what could not be isolated.

    Must be called in a freshly forked child; the caller forks once more so the
    student's code runs as pid 1 of the new pid namespace.
    """
    missing = []
    libc = c_library()
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if libc.unshare(flags) != 0:
        missing.append(f"namespaces ({os.strerror(ctypes.get_errno())})")
        return missing
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny")
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"{gid} {gid} 1")
    return missing


def private_scratch(folder, scratch_mb):
    """Mount a private tmpfs on ``folder``, the only place the student may write.

    In the child's own mount namespace: the shared /tmp becomes read-only (so
    nothing is left behind for the next student), the scratch is a fresh tmpfs
    mounted on an empty folder (so it shadows nothing, not even a Python
    installation that lives under /tmp), and /proc shows only the child's own
    pid namespace. Returns '' or what could not be done.
    """
    libc = c_library()
    # A mount namespace of its own, so the parent's view (which removes the
    # scratch folder afterwards) keeps a writable /tmp.
    if libc.unshare(CLONE_NEWNS) != 0:
        return f"private mounts ({os.strerror(ctypes.get_errno())})"
    libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    # Our copy of the /tmp mount, read-only; a remount must keep the flags the
    # mount is locked with (nosuid, nodev, ...).
    locked = os.statvfs("/tmp").f_flag
    kept = sum(flag for st, flag in LOCKED_FLAGS if locked & st)
    if libc.mount(None, b"/tmp", None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept, None) != 0:
        return f"read-only /tmp ({os.strerror(ctypes.get_errno())})"
    options = f"size={scratch_mb}m,mode=700".encode()
    if libc.mount(b"tmpfs", folder.encode(), b"tmpfs", 0, options) != 0:
        return f"private scratch ({os.strerror(ctypes.get_errno())})"
    libc.mount(b"proc", b"/proc", b"proc", 0, None)
    return ""


def set_limits(limits):
    """Apply the per-submission resource limits (bytes, counts, seconds).

    The memory limit is on top of what the preloaded libraries already map, so
    ``limits["memory"]`` bytes are the student's to use.
    """
    with open("/proc/self/statm") as handle:
        mapped = int(handle.read().split()[0]) * resource.getpagesize()
    memory = mapped + limits["memory"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size"], limits["file_size"]))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 5))
    nproc = limits["processes"]
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


# ------------------------------------------------------------------ the shell


class OutputStream(io.TextIOBase):
    """A sys.stdout/sys.stderr stand-in that records notebook stream outputs."""

    def __init__(self, name, outputs):
        self.name, self.outputs, self.kept = name, outputs, 0

    def writable(self):
        return True

    def write(self, text):
        text = str(text)
        room = MAX_CELL_OUTPUT - self.kept
        if room <= 0:
            return len(text)
        if len(text) > room:
            text = text[:room] + "\n[output truncated by the grader]\n"
        self.kept += len(text)
        last = self.outputs[-1] if self.outputs else None
        if last and last["output_type"] == "stream" and last["name"] == self.name:
            last["text"].append(text)  # joined by finish(): += on a str would be quadratic
        else:
            self.outputs.append({"output_type": "stream", "name": self.name, "text": [text]})
        return len(text)


def finish(outputs):
    """Join the text pieces of captured stream outputs; returns ``outputs``."""
    for output in outputs:
        if output["output_type"] == "stream" and isinstance(output["text"], list):
            output["text"] = "".join(output["text"])
    return outputs


def _jsonable(data):
    return {
        mime: base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
        for mime, value in data.items()
    }


def make_shell():
    """An IPython shell whose outputs land in ``shell.cell_outputs``; built in the zygote."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, **kwargs):
            shell.cell_outputs.append(
                {"output_type": "display_data", "data": _jsonable(data), "metadata": metadata or {}}
            )

        def clear_output(self, wait=False):
            shell.cell_outputs.clear()

    class Hook(DisplayHook):
        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            shell.cell_outputs.append(
                {
                    "output_type": "execute_result",
                    "data": _jsonable(format_dict),
                    "metadata": md_dict or {},
                    "execution_count": shell.execution_count,
                }
            )

        def finish_displayhook(self):
            pass

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    shell = InteractiveShell.instance(config=config, display_pub_class=Publisher)
    shell.displayhook = Hook(shell=shell, cache_size=0)
    shell.display_trap.hook = shell.displayhook
    shell.cell_outputs = []

    def show_traceback(etype, evalue, stb):
        shell.cell_outputs.append(
            {
                "output_type": "error",
                "ename": getattr(etype, "__name__", str(etype)),
                "evalue": str(evalue),
                "traceback": list(stb),
            }
        )

    shell._showtraceback = show_traceback
    shell.enable_gui = lambda gui=None: None  # no event loop: figures go inline
    shell.enable_matplotlib("inline")
    return shell


def run_cell(shell, source):
    """Run one cell; its notebook outputs and execution count."""
    shell.cell_outputs = []
    out, err = (
        OutputStream("stdout", shell.cell_outputs),
        OutputStream("stderr", shell.cell_outputs),
    )
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        shell.run_cell(source, store_history=True)
    finally:
        sys.stdout, sys.stderr = saved
    return {"outputs": finish(shell.cell_outputs), "execution_count": shell.execution_count - 1}


def lookup(shell, name):
    """What ``name`` is in the student's namespace, as the grader may learn it."""
    if name not in shell.user_ns:
        return {"kind": "missing"}
    value = shell.user_ns[name]
    if callable(value) and not isinstance(value, type):
        return {"kind": "callable"}
    try:
        return {"kind": "value", "value": wire.encode(value)}
    except wire.Unencodable as why:
        return {"kind": "unencodable", "type": str(why)}


def call(shell, name, encoded_args):
    """Call the student's function ``name``; the result, or the error, and the arguments after."""
    args = [wire.decode(a) for a in encoded_args]
    outputs = []
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = OutputStream("stdout", outputs), OutputStream("stderr", outputs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = shell.user_ns[name](*args)
                reply = {"ok": True, "result": wire.encode(result)}
            except wire.Unencodable as why:
                reply = {"ok": False, "ename": "TypeError", "evalue": f"{name} returned {why}"}
            except BaseException as error:  # the student's error, reported as data
                reply = {
                    "ok": False,
                    "ename": type(error).__name__,
                    "evalue": str(error),
                    "traceback": traceback.format_exception(error)[-6:],
                }
    finally:
        sys.stdout, sys.stderr = saved
    reply["outputs"] = finish(outputs)
    reply["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    try:
        reply["args"] = [wire.encode(a) for a in args]
    except wire.Unencodable:
        reply["args"] = encoded_args
    return reply


def serve(shell, sock):
    """Answer the grader's requests until it says bye or goes away."""
    handlers = {
        "run": lambda m: run_cell(shell, m["source"]),
        "lookup": lambda m: lookup(shell, m["name"]),
        "call": lambda m: call(shell, m["name"], m["args"]),
    }
    while True:
        try:
            message = wire.receive(sock)
            if message.get("op") == "bye":
                return
            wire.send(sock, handlers[message["op"]](message))
        except KeyboardInterrupt:
            continue  # an interrupt that arrived between requests
        except (EOFError, OSError, wire.WireError):
            return


# ----------------------------------------------------------------- the zygote


def child(shell, sock, request):
    """In a forked child: isolate, start the student's process, report its pid."""
    # The zygote is not dumpable; its children must be, to write their uid maps.
    c_library().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    problems = isolate()
    scratch = tempfile.mkdtemp(prefix="student-")
    inner = os.fork()
    if inner:
        wire.send(sock, {"pid": inner, "unprotected": problems})
        sock.close()
        os.waitpid(inner, 0)
        shutil.rmtree(scratch, ignore_errors=True)
        os._exit(0)
    # pid 1 of the new pid namespace (when namespaces worked)
    os.setsid()
    if not problems:
        problem = private_scratch(scratch, request["limits"]["scratch_mb"])
        if problem:
            problems.append(problem)
    os.chdir(scratch)
    for name, text in request["files"].items():
        with open(os.path.join(scratch, os.path.basename(name)), "w") as handle:
            handle.write(text)
    sys.path.insert(0, scratch)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    set_limits(request["limits"])
    serve(shell, sock)
    os._exit(0)


# Drawn once in the zygote, so every child starts with matplotlib's fonts, caches
# and lazily imported parts already loaded, instead of paying for them anew.
WARM_UP = """
import matplotlib.pyplot as plt
import numpy as np

fig, axes = plt.subplots(1, 2, figsize=(4, 2), layout="constrained")
for ax in axes:
    image = ax.imshow(np.eye(3), cmap="Blues", vmin=0, vmax=1)
    ax.set_title("warm-up")
    ax.set_xticks(range(3), list("abc"))
    ax.set_xlabel("x")
    ax.text(0, 0, "0.50", ha="center", va="center", fontsize=8, color="white")
fig.colorbar(image, ax=axes, shrink=0.8, label="share")
plt.show()
np.random.default_rng(0).normal(size=(2, 2)) @ np.ones((2, 2))
"""


def warm_up(shell):
    """Pay first-use costs in the zygote, then leave the shell as if it were new.

    ``gc.freeze`` moves everything that exists now out of the collector's reach:
    otherwise the first collection in each child touches every inherited object
    and copies the zygote's whole heap, page by page.
    """
    run_cell(shell, WARM_UP)
    shell.reset(new_session=True)
    shell.cell_outputs = []
    gc.collect()
    gc.freeze()


def zygote(control_fd):
    """Preload, then fork one isolated child per request on the control socket."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import matplotlib

    matplotlib.use("module://matplotlib_inline.backend_inline")
    import matplotlib.pyplot  # noqa: F401  -- paid once, here
    import numpy  # noqa: F401

    shell = make_shell()
    warm_up(shell)
    c_library().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    control = socket.socket(fileno=control_fd)
    control.send(json.dumps({"ready": True}).encode())
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 2**20, 4)
        except OSError:
            return
        if not data:
            return
        message = json.loads(data)
        if message["op"] == "spawn":
            sock = socket.socket(fileno=fds[0])
            if os.fork() == 0:
                control.close()
                child(shell, sock, message)
            sock.close()
        elif message["op"] == "signal":
            try:
                os.kill(int(message["pid"]), int(message["signal"]))
            except ProcessLookupError:
                pass
