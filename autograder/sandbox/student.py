"""The student's side: runs inside the sandbox, never in the grader's process.

The *zygote* (:func:`zygote`, started by :class:`autograder.sandbox.launcher.Sandbox`,
inside bubblewrap) imports IPython and the modules the course preloads once,
runs the course's warm-up code, then waits on its control socket. For every
submission it forks a child, which

1. leaves the zygote's namespaces for fresh user, pid, mount, network and IPC
   namespaces (pid 1 of its own pid namespace, so every process it starts dies
   with it), mounts a private tmpfs as its scratch folder, and sets limits on
   memory, processes, file size and CPU time (:mod:`autograder.sandbox.isolation`);
2. runs the student's cells in an IPython shell, capturing their outputs as
   notebook outputs;
3. answers the grader's questions over its own socket: what is this name, call
   this function on these arrays. Only data crosses (:mod:`autograder.sandbox.wire`).

Test cells never run here: the verdicts are computed by the grader, in a
process student code never touched (:mod:`autograder.pipeline.grading.execute`).
"""

from __future__ import annotations

import base64
import gc
import json
import os
import re
import signal
import socket
import sys
import tempfile
import time
import traceback
import types
import warnings
from collections.abc import Sequence
from typing import Any

from autograder.sandbox import crash_reasons, figures, isolation, transforms, wire
from autograder.sandbox.clean_up import remove_tree
from autograder.sandbox.outputs import Budget, OutputStream, error_output, finish, shorten


def received_files(sock: socket.socket, deadline: float) -> dict[str, bytes]:
    """The assignment's files, as the grader sends them before any student code runs.

    ``{path: bytes}`` from the frame ``{"files": {path: base64}}``
    (:func:`autograder.sandbox.launcher.encode_files`).
    """
    message = wire.receive(sock, deadline)
    files = message.get("files")
    if not isinstance(files, dict):
        raise wire.WireError("no files")
    sock.settimeout(None)  # the student's requests wait as long as the grader takes
    return {str(path): base64.b64decode(data) for path, data in files.items()}


# ------------------------------------------------------------------ the shell


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {
        mime: base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
        for mime, value in data.items()
    }


def _rich(kind: str, data: Any, metadata: Any, **extra: Any) -> dict[str, Any] | None:
    """A display or result output, or None if it is not plain JSON-able data."""
    try:
        data = _jsonable(data)
        json.dumps([data, metadata])
    except (TypeError, ValueError):
        return None
    return {"output_type": kind, "data": data, "metadata": metadata or {}, **extra}


def _size(output: dict[str, Any]) -> int:
    return sum(len(str(value)) for value in output["data"].values())


def make_shell() -> Any:
    """An IPython shell whose outputs land in ``shell.cell_outputs``; built in the zygote."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    def emit(output: dict[str, Any] | None) -> None:
        if output is not None and shell.budget.take(_size(output), new_output=True):
            shell.cell_outputs.append(output)

    class Publisher(DisplayPublisher):
        def publish(
            self, data: Any, metadata: Any = None, source: Any = None, **kwargs: Any
        ) -> None:
            emit(_rich("display_data", data, metadata))

        def clear_output(self, wait: bool = False) -> None:
            shell.cell_outputs.clear()

    class Hook(DisplayHook):
        def start_displayhook(self) -> None:
            pass

        def write_output_prompt(self) -> None:
            pass

        def write_format_data(self, format_dict: Any, md_dict: Any = None) -> None:
            if not format_dict:  # not formatted: over the budget (see below)
                return
            emit(
                _rich("execute_result", format_dict, md_dict, execution_count=shell.execution_count)
            )

        def finish_displayhook(self) -> None:
            pass

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    shell: Any = InteractiveShell.instance(config=config, display_pub_class=Publisher)
    shell.displayhook = Hook(shell=shell, cache_size=0)
    shell.display_trap.hook = shell.displayhook
    shell.cell_outputs = []
    shell.budget = Budget()
    plain_format = shell.display_formatter.format

    def format_within_budget(obj: Any, include: Any = None, exclude: Any = None) -> Any:
        # Formatting is the costly part of display(); once a cell may show
        # nothing more, skip it (display() then publishes nothing).
        if shell.budget.full():
            shell.budget.take(0, new_output=True)  # counted as cut
            return {}, {}
        return plain_format(obj, include=include, exclude=exclude)

    shell.display_formatter.format = format_within_budget

    def show_traceback(etype: Any, evalue: Any, stb: Any) -> None:
        # An error is always kept (it is what the student needs), cut to size.
        ename = getattr(etype, "__name__", str(etype))
        if isinstance(evalue, BaseException):
            stb = student_traceback(evalue)
        shell.cell_outputs.append(error_output(ename, evalue, stb))

    shell._showtraceback = show_traceback
    # IPython formats each error twice with ultratb, to show it and to store it,
    # inspecting every frame's module and source: milliseconds per error, none
    # of it shown (show_traceback writes its own) or stored (no history).
    shell.InteractiveTB.structured_traceback = lambda *args, **kwargs: []
    shell._format_exception_for_storage = lambda *args, **kwargs: {}
    shell.enable_gui = lambda gui=None: None  # no event loop: figures go inline
    return shell


def student_traceback(error: BaseException, frames: int = 5) -> list[str]:
    """The traceback of ``error`` through the student's own cells only, as text lines.

    Frames of the grader, of IPython and of libraries are left out, so no path
    of the grading machine reaches a feedback page; a cell is named as Jupyter
    names it (``Cell In[11], line 2``). At most the last ``frames`` frames.
    """
    own = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename.startswith(STUDENT_CELL)
    ][-frames:]
    lines = ["Traceback (most recent call last):\n"] if own else []
    lines += traceback.format_list(own) + traceback.format_exception_only(type(error), error)
    why = crash_reasons.explain(error) if own else ""
    lines += [f"\n{why}\n"] if why else []
    return [CELL_NAME.sub(r"Cell In[\1]", line) for line in lines]


STUDENT_CELL = "<ipython-input-"  #: how IPython names the code of a cell it compiled
CELL_NAME = re.compile(r'File "<ipython-input-(\d+)-[0-9a-f]+>"')


def run_cell(shell: Any, source: str) -> dict[str, Any]:
    """Run one cell; its notebook outputs and execution count."""
    shell.cell_outputs = []
    shell.budget.start_cell()
    out = OutputStream("stdout", shell.cell_outputs, shell.budget)
    err = OutputStream("stderr", shell.cell_outputs, shell.budget)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        shell.run_cell(source, store_history=True)
    finally:
        sys.stdout, sys.stderr = saved
    return {
        "outputs": finish(shell.cell_outputs, shell.budget),
        "execution_count": shell.execution_count - 1,
    }


def _is_function(value: Any) -> bool:
    """Is ``value`` something the grader calls by proxy (a function, not a class or data)?"""
    return callable(value) and not isinstance(value, type)


MAX_KEPT = 10_000  #: the student's objects the grader may hold references to, per process
REF_ACTIONS = ("call", "getattr", "iter", "next", "len", "getitem", "str", "repr", "bool")


class Kept:
    """The student's objects the grader holds references to, by number (:class:`.wire.Refs`).

    An object that cannot cross as data (a generator, a figure's axes, an
    instance of the student's class) stays here; the grader gets its number,
    its type's name and whether it can be called, and asks for what it needs of
    it (:func:`act`), each answer again data or a reference. A callback the
    grader passes in (a test's ``lambda``) becomes a function that asks the
    grader, as a stand-in does. Nothing here runs any of the object's code.
    """

    def __init__(self, sock: socket.socket | None) -> None:
        self.sock = sock
        self.objects: dict[int, Any] = {}
        self.numbers: dict[int, int] = {}  # id(object) -> its number, while it is kept

    def keep(self, value: Any) -> dict[str, Any]:
        number = self.numbers.get(id(value))
        if number is None:
            if len(self.objects) >= MAX_KEPT:
                raise wire.Unencodable(f"{type(value).__name__}, past {MAX_KEPT} kept objects")
            number = len(self.objects) + 1
            self.objects[number], self.numbers[id(value)] = value, number
        kind = type(value)
        return {"t": "ref", "v": [number, f"{kind.__module__}.{kind.__qualname__}"[:200],
                                  callable(value)]}  # fmt: skip

    def find(self, kind: str, body: Any) -> Any:
        if kind == "callback" and self.sock is not None:
            return stand_in(self.sock, f"callback {int(body)}")
        number = body[0] if isinstance(body, list) and body else body
        if kind == "ref" and type(number) is int and number in self.objects:
            return self.objects[number]
        raise wire.WireError(f"no such object: {str(body)[:40]}")


def lookup(shell: Any, name: str, kept: Kept | None = None) -> dict[str, Any]:
    """What ``name`` is in the student's namespace, as the grader may learn it."""
    if name not in shell.user_ns:
        return {"kind": "missing"}
    value = shell.user_ns[name]
    if isinstance(value, types.ModuleType):  # the grader uses its own copy, if it has one
        return {"kind": "module", "module": str(getattr(value, "__name__", ""))}
    if _is_function(value):
        return {"kind": "callable"}
    try:
        return {"kind": "value", "value": wire.encode(value, refs=kept)}
    except wire.Unencodable as why:
        return {"kind": "unencodable", "type": str(why)}


def stand_in(sock: socket.socket, name: str) -> Any:
    """A function that asks the grader to answer a call to ``name``: only data crosses.

    Bound in place of the student's own ``name`` while a test checks another
    answer (:func:`call`), so a mistake in ``name`` can neither cost nor earn
    that answer points. The grader computes the answer with its stand-in; no
    code of the tests ever runs, or is seen, here.
    """

    def ask_the_grader(*args: Any, **kwargs: Any) -> Any:
        try:
            message = {
                "stand_in": name,
                "args": [wire.encode(a) for a in args],
                "kwargs": {str(k): wire.encode(v) for k, v in kwargs.items()},
            }
        except wire.Unencodable as why:
            raise TypeError(f"cannot pass {why} to {name}") from None
        wire.send(sock, message)
        answer = wire.receive(sock)
        if answer.get("ok"):
            return wire.decode(answer.get("result"))
        raise wire.exception_class(str(answer.get("ename")))(str(answer.get("evalue")))

    ask_the_grader.__name__ = ask_the_grader.__qualname__ = name
    return ask_the_grader


def call(
    shell: Any,
    name: str,
    encoded_args: list[Any],
    serve: Sequence[str] = (),
    sock: socket.socket | None = None,
    encoded_kwargs: dict[str, Any] | None = None,
    kept: Kept | None = None,
) -> dict[str, Any]:
    """Call the student's function ``name``; the result, or the error, and the arguments after.

    encoded_kwargs: the keyword arguments, encoded as the positional ones are.
    serve: names of the student's other functions that, during this call only,
    are answered by the grader (:func:`stand_in`) instead of the student's code.
    kept: where the student's objects that cannot cross as data are kept (the
    arguments may name them, and the result may be one).
    """
    args = [wire.decode(a, refs=kept) for a in encoded_args]
    kwargs = {str(k): wire.decode(v, refs=kept) for k, v in (encoded_kwargs or {}).items()}
    reply = _invoke(shell, lambda: shell.user_ns[name](*args, **kwargs), name, serve, sock, kept)
    reply["args"] = [_if_changed(a, before) for a, before in zip(args, encoded_args)]
    return reply


def act(shell: Any, message: dict[str, Any], sock: socket.socket, kept: Kept) -> dict[str, Any]:
    """Do what the grader asks of one of the student's kept objects (:class:`Kept`).

    ``message["do"]``, one of ``REF_ACTIONS``: call it (``args``,
    ``kwargs``), read an attribute (``name``, never a dunder), iterate it, take
    its next item, its length, an item (``key``), its ``str``, ``repr`` or truth.
    The object's own code runs as any of the student's code does; the answer
    is data or a reference. Nothing that reaches a verdict is asked of it: a
    comparison with a test's value is made in the grader.
    """
    target = kept.find("ref", message.get("ref"))
    do, label = message.get("do"), f"{type(target).__name__} object"
    args = [wire.decode(a, refs=kept) for a in message.get("args") or []]
    kwargs = {str(k): wire.decode(v, refs=kept) for k, v in (message.get("kwargs") or {}).items()}
    attribute = str(message.get("name", ""))
    actions: dict[str, Any] = {
        "call": lambda: target(*args, **kwargs),
        "getattr": lambda: getattr(target, attribute),
        "iter": lambda: iter(target),
        "next": lambda: next(target),
        "len": lambda: len(target),
        "getitem": lambda: target[args[0]],
        "str": lambda: str(target),
        "repr": lambda: repr(target),
        "bool": lambda: bool(target),
    }
    if do not in actions or (do == "getattr" and attribute.startswith("__")):
        raise wire.WireError(f"not an action on an object: {str(do)[:40]}")
    return _invoke(shell, actions[do], label, message.get("serve") or [], sock, kept)


def _invoke(
    shell: Any,
    run: Any,
    name: str,
    serve: Sequence[str],
    sock: socket.socket | None,
    kept: Kept | None,
) -> dict[str, Any]:
    """Run ``run()`` (the student's code) as a test's call: its result as data (or a
    reference), or its error; its outputs counted and its warnings caught."""
    outputs: list[dict[str, Any]] = []
    shell.cell_outputs = []  # displays during a test call are not shown; they still count
    shell.budget.start_cell()
    missing = object()
    served = [n for n in serve if n != name and not n.startswith("callback ")]
    names = served if sock is not None else []
    saved = {n: shell.user_ns.get(n, missing) for n in names}
    shell.user_ns.update({n: stand_in(sock, n) for n in names})  # type: ignore[arg-type]
    streams = sys.stdout, sys.stderr
    sys.stdout = OutputStream("stdout", outputs, shell.budget)
    sys.stderr = OutputStream("stderr", outputs, shell.budget)
    try:
        # The process's own filters decide which warnings show, as in a kernel (where
        # a ResourceWarning never shows, and a repeated one shows once): a warning
        # shown here is on the test's stderr in stock, which costs the test its points.
        with warnings.catch_warnings(record=True) as caught:
            try:
                result = run()
                reply = {"ok": True, "result": wire.encode(result, refs=kept)}
            except wire.Unencodable as why:
                reply = {"ok": False, "ename": "TypeError", "evalue": f"{name} returned {why}"}
                reply["unencodable"] = True
            except BaseException as error:  # the student's error, reported as data
                shown = error_output(type(error).__name__, error, student_traceback(error))
                reply = {"ok": False, "ename": shown["ename"], "evalue": shown["evalue"]}
                reply["traceback"] = shown["traceback"]
    finally:
        sys.stdout, sys.stderr = streams
        for n, value in saved.items():
            if value is missing:
                shell.user_ns.pop(n, None)
            else:
                shell.user_ns[n] = value
    reply["outputs"] = finish(outputs, shell.budget)
    reply["warnings"] = [shorten(f"{w.category.__name__}: {w.message}", 500) for w in caught[:20]]
    return reply


def _if_changed(arg: Any, before: Any) -> Any:
    """``arg`` encoded, if the call changed it in place; None if it is as it came."""
    try:
        after = wire.encode(arg)
    except wire.Unencodable:
        return None
    return None if after == before else after


def disable(shell: Any, name: str, message: str) -> dict[str, Any]:
    """Bind ``name`` to a function that fails at once (it ran past its time limit)."""

    def runaway(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{message}; not called again")

    runaway.__name__ = name
    shell.user_ns[name] = runaway
    return {"ok": True}


MAX_WATCHED = 1000  #: names a grader may ask to hear about in every reply


def functions(shell: Any, names: Sequence[str]) -> list[str] | None:
    """Those of ``names`` that the student's namespace binds to functions now.

    None if finding out failed (a student's object can make ``isinstance`` run its
    code): the grader then asks about each name it needs.
    """
    try:
        get = shell.user_ns.get  # a traitlets attribute: read once, not once a name
        # _is_function inlined: asked of every watched name in every reply
        return [n for n in names if callable(v := get(n)) and not isinstance(v, type)]
    except Exception:
        return None


def serve(shell: Any, sock: socket.socket) -> None:
    """Answer the grader's requests until it says bye or goes away.

    A request carrying ``watch`` (names) makes every reply from then on carry
    ``functions``: which of those names are functions once the request is done
    (:func:`functions`), so the grader need not look each one up.
    """
    watched: list[str] = []
    kept = Kept(sock)
    handlers = {
        "run": lambda m: run_cell(shell, m["source"]),
        "lookup": lambda m: lookup(shell, m["name"], kept),
        "call": lambda m: call(
            shell, m["name"], m["args"], list(m.get("serve") or []), sock, m.get("kwargs"), kept
        ),
        "ref": lambda m: act(shell, m, sock, kept),
        "disable": lambda m: disable(shell, str(m["name"]), str(m["message"])),
        "record_figures": lambda m: figures.record(),
        "figures": lambda m: figures.drawn(),
    }
    while True:
        try:
            message = wire.receive(sock)
            if message.get("op") == "bye":
                return
            if isinstance(message.get("watch"), list):
                watched = [str(n) for n in message["watch"][:MAX_WATCHED]]
            reply = handlers[message["op"]](message)
            reply["id"] = message.get("id")
            if watched:
                reply["functions"] = functions(shell, watched)
            wire.send(sock, reply)
        except KeyboardInterrupt:
            continue  # an interrupt that arrived between requests
        except (EOFError, OSError, wire.WireError):
            return


# ----------------------------------------------------------------- the zygote


def how_it_ended(status: int, usage: Any) -> dict[str, Any]:
    """What ended a process, from ``os.wait4``'s status and resource usage, as data."""
    cpu = round(usage.ru_utime + usage.ru_stime, 3)
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status), "cpu_seconds": cpu}
    return {"exit": os.WEXITSTATUS(status), "cpu_seconds": cpu}


def child(
    shell: Any, sock: socket.socket, request: dict[str, Any], ended: socket.socket | None = None
) -> None:
    """In a forked child: isolate, start the student's process, report its pid.

    request: ``{"limits": {...}, "uid": int or None, ...}``; the assignment's files
    come first on ``sock`` (:func:`received_files`), before anything else happens.
    The order matters: drop root first (so nothing after runs as root outside),
    enter namespaces, then in the new pid namespace lay out the filesystems,
    apply limits and drop every capability before any student code runs.
    ended: where this process, outside the student's pid namespace and out of
    its reach, tells the grader how the student's process ended
    (:func:`how_it_ended`), so a death the student caused is told from one it did not.
    """
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the zygote's SIG_IGN would reap it unseen
    try:
        request["files"] = received_files(sock, time.monotonic() + 30)
    except (OSError, EOFError, ValueError, wire.WireError):
        os._exit(1)  # the grader is gone, or spoke garbage: nothing to set up
    problems = isolation.drop_privileges(request["uid"]) if request.get("uid") is not None else []
    missing = isolation.isolate()
    problems += missing
    # Without namespaces the student gets a private folder instead of a fresh
    # /tmp; it is removed before the grader hears the student ended, so the
    # next student of this run (the same uid) never finds it.
    private, refused = None, ""
    if missing:
        try:  # in the sandbox's own folder, never a fallback the next run shares
            private = tempfile.mkdtemp(prefix="student-", dir=os.environ.get("TMPDIR") or "/tmp")
        except OSError as error:
            refused = f"no private folder for the student ({error})"
    report, told = os.pipe()
    inner = os.fork()
    if inner:
        os.close(told)
        # nothing here for the student to trace
        isolation.c_library().prctl(isolation.PR_SET_DUMPABLE, 0, 0, 0, 0)
        chunks = []
        while chunk := os.read(report, 65536):  # until the student's process closes it
            chunks.append(chunk)
        os.close(report)
        told_back = b"".join(chunks)
        try:
            set_up_said = json.loads(told_back)
        except ValueError:  # it died before saying anything
            set_up_said = {"failed": "the student's process died while being set up"}
        if isinstance(set_up_said, dict):
            wire.send(sock, {"pid": inner, "failed": str(set_up_said.get("failed"))})
        else:
            said = {"pid": inner, "unprotected": problems + list(set_up_said)}
            wire.send(sock, said | ({"private": private} if private else {}))
        sock.close()
        _, status, usage = os.wait4(inner, 0)
        if private is not None:
            remove_tree(private)
        if ended is not None:
            try:
                ended.sendall(json.dumps(how_it_ended(status, usage)).encode())
            except OSError:
                pass
        os._exit(0)
    # pid 1 of the new pid namespace (when namespaces worked)
    if ended is not None:
        ended.close()  # the student's code must not speak for the process that watches it
    os.close(report)
    try:
        if refused:
            raise RuntimeError(refused)
        mine = set_up(request, private, shell)
    except Exception as error:  # the sandbox's failure, not the student's: told as such
        os.write(told, json.dumps({"failed": f"{type(error).__name__}: {error}"}).encode())
        os._exit(1)
    os.write(told, json.dumps(mine).encode())
    os.close(told)
    serve(shell, sock)
    os._exit(0)


def set_up(request: dict[str, Any], private: str | None, shell: Any) -> list[str]:
    """In the student's process, before any of its code: its files, limits and privileges.

    private: the student's own folder where :func:`~.isolation.isolate` found no
    namespaces (its home, its temporary folder and its files'), None where
    it has a fresh /tmp of its own. Returns what could not be protected.
    """
    os.setsid()
    limits = request["limits"]
    if private is None:
        keep, proc = request.get("keep", ()), request.get("proc", True)
        mine = isolation.fresh_filesystems(limits["scratch_mb"], request["files"], keep, proc)
        home, lab = isolation.SCRATCH, isolation.LAB
    else:
        home = lab = private
        isolation.write_files(lab, request["files"])
        mine = []
        os.environ["TMPDIR"] = tempfile.tempdir = private
    os.chdir(home)
    os.environ["HOME"] = home
    sys.path.insert(0, lab)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    shell.budget = Budget()
    isolation.set_limits(limits)
    return mine + isolation.drop_capabilities()


#: standard modules numerical code imports, itself or through numpy (default_rng
#: imports secrets on first use), loaded before any student runs: where the grader
#: cannot give the sandbox a readable view of Python (no bubblewrap, Python in a
#: home folder only its owner may read), a child can import only what it inherits
PRELOADED = (
    "secrets", "random", "math", "cmath", "fractions", "decimal", "statistics",
    "itertools", "functools", "collections", "copy", "string", "textwrap", "operator",
    "encodings.unicode_escape",  # _mounts() reads /proc/self/mountinfo with it
)  # fmt: skip


#: matplotlib's backend for every figure a student's code draws: shown inline, as
#: Jupyter shows it. Set in the environment, so it holds whenever matplotlib is
#: first imported, in the zygote or only by one student's code.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def warm_up(shell: Any, imports: str = "", code: str = "") -> None:
    """Pay first-use costs in the zygote, then leave the shell as if it were new.

    imports: the course's import statements, run one by one (one that fails,
    such as a helper module only a student's folder holds, is passed over),
    after :data:`PRELOADED`. code: the course's warm-up code
    (``c.Autograder.warm_up``), run once as a cell, its outputs and names
    dropped: drawing one figure, for instance, loads fonts and caches every
    student would otherwise load again. ``gc.freeze`` moves everything that
    exists now out of the collector's reach: otherwise the first collection in
    each child touches every inherited object and copies the zygote's whole
    heap, page by page.
    """
    for line in [f"import {name}" for name in PRELOADED] + imports.splitlines():
        try:
            exec(line, {})
        except Exception:
            pass
    if "matplotlib.pyplot" in sys.modules:
        shell.enable_matplotlib("inline")  # what importing pyplot in a cell would do
    # Always one cell: running the first loads IPython's own lazy parts (bdb, ...),
    # which a child may be unable to import where Python is not readable to it.
    run_cell(shell, code or "pass")
    shell.reset(new_session=True)
    shell.cell_outputs = []
    gc.collect()
    gc.freeze()


def zygote(
    control_fd: int, boot_path: str | None = None, imports: str = "", code: str = ""
) -> None:
    """Preload, then fork one isolated child per request on the control socket.

    boot_path: the folder put on ``sys.path`` to import this package; taken off
    again once it is imported, so no student imports anything from there (None:
    it was on ``sys.path`` already, site-packages, and stays).
    imports, code: the course's import statements to preload and its warm-up
    code (:func:`warm_up`).
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    if boot_path is not None:
        sys.path[:] = [path for path in sys.path if path and path != boot_path]

    libc = isolation.c_library()
    for name in ("unshare", "mount", "prctl", "capset"):  # what each child calls
        getattr(libc, name)
    shell = make_shell()
    warm_up(shell, imports, code)
    if "matplotlib" in sys.modules:  # a course that draws: its figures are learned
        figures.install()
    transforms.PlainPython(shell.input_transformer_manager).install()  # no tokenizing Python
    known = transforms.KnownCells(shell).install()  # course cells: transformed, compiled once
    isolation.c_library().prctl(isolation.PR_SET_DUMPABLE, 0, 0, 0, 0)
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
            isolation.compile_helpers(message.get("modules") or {})
            sock = socket.socket(fileno=fds[0])
            ended = socket.socket(fileno=fds[1]) if len(fds) > 1 else None
            if os.fork() == 0:
                control.close()
                child(shell, sock, message, ended)
            sock.close()
            if ended is not None:
                ended.close()
        elif message["op"] == "remember":  # only the grader speaks here, never a student
            figures.remember(message["figures"])
        elif message["op"] == "cells":  # the course's own cells (the grader's, never a student's)
            known.learn(message["cells"])
            gc.freeze()  # what it learned is every child's, untouched by their collections
        elif message["op"] == "signal":
            try:
                os.kill(int(message["pid"]), int(message["signal"]))
            except ProcessLookupError:
                pass
