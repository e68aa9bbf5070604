"""Calls the grader answers for a student's code (stand-ins), bounded as the student is.

While a test runs, the student's code may call trusted functions (a reference
answer served in place of the student's own, :meth:`~autograder.sandbox.launcher.Student.request`'s
``stand_ins``). Each call runs here, in the grader's process, on arguments the
student chose, so its cost is bounded over the whole call, not at its edges:

- **time**: the call must end by the request's deadline (the cell's); a
  Python-level loop still running then is interrupted (an exception raised in
  the serving thread, as ``PyThreadState_SetAsyncExc`` raises one) and the
  request ends as a ``timeout``, exactly as a slow student cell does;
- **memory**: while the call runs, the process may map at most
  :data:`SERVED_MEMORY` bytes more than it had (``RLIMIT_AS``, set back after);
  a call that needs more fails with :class:`Refused`, which the student's code
  receives as an error naming the call, never as a crash of its own.

The arguments' size is bounded before the call by the launcher
(:data:`~autograder.sandbox.launcher.MAX_CALLBACK`) and the result's by the
wire (:data:`~autograder.sandbox.wire.MAX_VALUE`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: bytes of address space a served call may add to the grader's process
SERVED_MEMORY = 192 * 2**20
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096  #: bytes


class Refused(Exception):
    """A served call that would cost the grader more than a call may: said to the student."""


class _TooLate(BaseException):
    """Raised in the serving thread at the deadline (a BaseException: a trusted function's
    ``except Exception`` does not swallow it)."""


def describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A call's arguments as a student reads them: arrays by shape and dtype, others by type."""

    def one(value: Any) -> str:
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple):
            return f"a {shape} {getattr(value, 'dtype', '')} array".replace("  ", " ")
        if isinstance(value, (list, tuple)):
            return f"a {type(value).__name__} of {len(value)}"
        return type(value).__name__

    shown = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    return ", ".join(shown)


def _address_space() -> int | None:
    """Bytes of address space this process maps now (None where /proc does not say)."""
    try:  # os.open, not open(): a text file object costs more than the call it bounds
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 200).split()[0]) * PAGE_SIZE
        finally:
            os.close(fd)
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def _memory_at_most(more: int) -> Iterator[None]:
    """While the block runs, the process may map at most ``more`` bytes beyond what it has."""
    used = _address_space()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if used is None:
        yield
        return
    cap = used + more
    for limit in (soft, hard):
        if limit != resource.RLIM_INFINITY:
            cap = min(cap, limit)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _raise_in(thread: int, exception: type[BaseException] | None) -> None:
    """Have ``thread`` raise ``exception`` at its next Python instruction (None: take back one
    not raised yet)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread),
        ctypes.py_object(exception) if exception is not None else ctypes.c_void_p(None),
    )


class _Watchdog:
    """One thread per process that interrupts each served call at its deadline.

    A thread of its own for every call would cost more than the calls a test
    makes (some 130 us each): this one sleeps until the nearest deadline and
    raises :class:`_TooLate` in the thread whose call ran past it. It sleeps on
    through calls released before that deadline, however many come and go.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._watched: dict[int, list[Any]] = {}  # token -> [deadline, thread, fired]
        self._tokens = 0
        self._thread: threading.Thread | None = None
        self._wakes: float | None = None  # when the thread wakes up next (None: when told)

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for entry in self._watched.values():
                    if not entry[2] and entry[0] <= now:
                        entry[2] = True
                        _raise_in(entry[1], _TooLate)
                waiting = [entry[0] for entry in self._watched.values() if not entry[2]]
                if waiting:
                    self._wakes = min(waiting)
                elif self._wakes is not None and self._wakes <= now:
                    self._wakes = None
                # else it sleeps on until the deadline it was woken for, though that call
                # has ended: the next call of the same cell then need not wake it again.
                self._lock.wait(max(self._wakes - now, 0.0) if self._wakes is not None else None)

    def watch(self, deadline: float) -> int:
        """Start watching the calling thread until ``deadline``; a token for :meth:`release`."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True, name="served")
                self._thread.start()
            self._tokens += 1
            self._watched[self._tokens] = [deadline, threading.get_ident(), False]
            # Woken only if it would sleep past this deadline: a test's calls share the
            # cell's deadline, and waking a thread costs more than the call it watches.
            if self._wakes is None or deadline < self._wakes:
                self._wakes = deadline
                self._lock.notify()
            return self._tokens

    def release(self, token: int | None) -> None:
        """Stop watching; take back an interruption fired but not raised yet."""
        with self._lock:
            entry = self._watched.pop(token, None) if token is not None else None
            if entry is not None and entry[2]:
                _raise_in(entry[1], None)


_WATCHDOG = _Watchdog()


@contextlib.contextmanager
def _until(deadline: float) -> Iterator[None]:
    """Interrupt the block at ``deadline`` (``time.monotonic()``): TimeoutError."""
    token = None
    try:
        try:
            token = _WATCHDOG.watch(deadline)
            yield
        finally:
            _WATCHDOG.release(token)
    except _TooLate:  # raised in the call, or as it ended (then nothing is pending any more)
        _WATCHDOG.release(token)
        raise TimeoutError("a call the grader answered ran past the cell's deadline") from None


def call(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    deadline: float,
    name: str,
) -> Any:
    """``function(*args, **kwargs)``, bounded (see the module); the result.

    TimeoutError at ``deadline``; :class:`Refused` when it needs more memory than
    :data:`SERVED_MEMORY`. name: the name the student's code called it by.
    """
    if time.monotonic() >= deadline:
        raise TimeoutError("the cell's deadline passed before the call")
    try:
        # the cap outermost: an interruption is turned into TimeoutError before it is set back
        with _memory_at_most(SERVED_MEMORY), _until(deadline):
            return function(*args, **kwargs)
    except MemoryError:
        raise Refused(
            f"the grader would not answer this call of {name}({describe(args, kwargs)}): "
            f"answering it needs more than {SERVED_MEMORY // 2**20} MiB of the grader's memory, "
            "the most one call may use. Check the shapes your code passes to it."
        ) from None
