"""Figures drawn once by trusted code, copied where a student's figure is the same.

Drawing a course's figures is the costliest part of running a notebook, and
every student draws the figures the release's own cells draw (a picture of
the data, a lesson's diagram). So a worker runs the release's cells once in
a child of its zygote
(:meth:`autograder.sandbox.launcher.Sandbox.learn_figures`) and hands the PNGs that
child drew to the zygote (:func:`remember`); every student's process, forked
from the zygote, starts with them. When a student's code asks matplotlib for
a PNG of a figure whose state is exactly that of one drawn then, the bytes
are copied instead of drawn: the very bytes it would have drawn.

- The key is the figure's whole state before drawing: the figure pickled (the
  ids matplotlib keeps as dictionary keys made positional), the canvas class,
  the call's arguments and every rcParam. A figure that differs in anything,
  or does not pickle, is drawn as usual.
- Only the zygote's entries are used and only the trusted run fills them:
  nothing a student's process does reaches the zygote or another student. A
  student who altered matplotlib's drawing code gets, on their own page only,
  what matplotlib draws for that state.
- Only the release is run, never the source: a figure a solution draws would
  sit in every student's process, and its key would confirm a guess at the
  answer. Entries are sealed with their key too: a student's process holds
  them but can read a picture only by building the very figure it shows.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import pickle
from typing import Any

MAX_FIGURES = 32  #: entries a process keeps, and a trusted run hands over
MAX_PNG = 90 * 2**10  #: bytes; a larger PNG is drawn every time (one goes in one datagram)

_known: dict[bytes, bytes] = {}  # index -> sealed PNG, from the trusted run only
_drawn: list[tuple[bytes, bytes]] = []  # what the trusted run drew: (index, sealed PNG)
_recording = False  # only in the trusted run: a student's process keeps nothing it draws
_reused = 0  # PNGs this process copied instead of drawing


class _StatePickler(pickle.Pickler):
    """Pickles a figure's state the same way in every process that built it alike.

    A transform keeps its parents in a dictionary keyed by ``id()``, which
    differs from process to process; the key keeps the parents, in order,
    without the ids. Sets are sorted, as their order follows string hashing.
    """

    def reducer_override(self, obj: Any) -> Any:
        from matplotlib.transforms import TransformNode

        if isinstance(obj, TransformNode):
            state: dict[str, Any] = dict(vars(obj))
            state["_parents"] = [parent() for parent in state.get("_parents", {}).values()]
            return _made, (type(obj),), state
        if isinstance(obj, (set, frozenset)):
            return type(obj), (sorted(obj, key=repr),)
        return NotImplemented


def _made(kind: type) -> Any:
    """Stands for building a ``kind`` in the key (:class:`_StatePickler`); never called."""
    return object.__new__(kind)


def _state(canvas: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """Everything the PNG depends on, as bytes; raises if some part does not pickle."""
    import matplotlib

    settings = sorted((k, v) for k, v in dict.items(matplotlib.rcParams) if k != "backend")
    whole = (type(canvas).__qualname__, canvas.figure, args, sorted(kwargs.items()), settings)
    buffer = io.BytesIO()
    _StatePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(whole)
    return buffer.getvalue()


def _index_and_secret(state: bytes) -> tuple[bytes, bytes]:
    """Two halves of one digest of ``state``: the entry's name, and its seal's key."""
    digest = hashlib.sha512(state).digest()
    return digest[:32], digest[32:]


def _seal(data: bytes, secret: bytes) -> bytes:
    """``data`` XOR a keystream from ``secret`` (SHAKE-256); sealing twice unseals."""
    pad = hashlib.shake_256(secret).digest(len(data))
    mixed = int.from_bytes(data, "little") ^ int.from_bytes(pad, "little")
    return mixed.to_bytes(len(data), "little")


def install() -> None:
    """Route matplotlib's ``print_figure`` through the entries; once, in the zygote."""
    from matplotlib.backend_bases import FigureCanvasBase

    drawing = FigureCanvasBase.print_figure
    if getattr(drawing, "reuses_figures", False):
        return

    @functools.wraps(drawing)
    def print_figure(self: Any, filename: Any, *args: Any, **kwargs: Any) -> Any:
        global _reused
        if type(filename) is not io.BytesIO or not (_known or _recording):
            return drawing(self, filename, *args, **kwargs)  # nothing to copy it from
        try:
            index, secret = _index_and_secret(_state(self, args, kwargs))
        except Exception:  # something in the figure does not pickle: draw it
            return drawing(self, filename, *args, **kwargs)
        sealed = _known.get(index)
        if sealed is not None:
            filename.write(_seal(sealed, secret))
            _reused += 1
            return None
        start = filename.tell()
        result = drawing(self, filename, *args, **kwargs)
        png = filename.getvalue()[start:]
        if _recording and len(_drawn) < MAX_FIGURES and len(png) <= MAX_PNG:
            _drawn.append((index, _seal(png, secret)))
        return result

    print_figure.reuses_figures = True  # type: ignore[attr-defined]
    FigureCanvasBase.print_figure = print_figure  # type: ignore[method-assign]


def record() -> dict[str, Any]:
    """From now on, keep what this process draws: said to the trusted run's process only."""
    global _recording
    _recording = True
    return {"ok": True}


def drawn() -> dict[str, Any]:
    """What this process drew (``[[index, sealed PNG]]``, base64) and how many it copied."""
    entries = [[base64.b64encode(i).decode(), base64.b64encode(s).decode()] for i, s in _drawn]
    return {"drawn": entries, "reused": _reused}


def remember(entries: list[list[str]]) -> None:
    """Keep ``entries`` (as :func:`drawn` gives them) for every process forked after this."""
    for index, sealed in entries[: max(MAX_FIGURES - len(_known), 0)]:
        _known[base64.b64decode(index)] = base64.b64decode(sealed)
