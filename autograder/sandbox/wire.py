"""The data-only wire between the trusted grader and a student's sandboxed process.

Frames are an 8-byte big-endian length and a JSON body. Values cross as tagged
JSON: ``None``, bools, ints, floats and strings as themselves; tuples, lists and
dicts tagged so their types survive; numpy arrays and scalars as their raw
bytes (base64) with a dtype string and a shape, rebuilt with ``np.frombuffer``
(not ``np.load``, whose header parsing cost ten times the copy); pandas
DataFrames and Series as their labels, index and columns, each column a
numpy array of a plain dtype (strings as unicode arrays with a mask of what
is missing), where pandas is installed. Nothing that
crosses can run code on the receiving side: no pickle, no object arrays,
bounded size and depth.

Bytes alone do not bound what a value costs once decoded: an array of a
zero-size dtype (``V0``, ``S0``) can claim any shape in a few bytes, and a
JSON list of small numbers is a large Python list. So a decoded value's
elements are counted (:data:`MAX_ELEMENTS` over the whole value), arrays must
have a plain dtype with a non-zero item size, and nesting is bounded.
"""

from __future__ import annotations

import base64
import builtins
import json
import socket
import struct
import sys
import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

MAX_FRAME = 16 * 2**20  #: bytes; a student's answer is a few small arrays
MAX_VALUE = 8 * 2**20  #: bytes of array data one encoded value may hold
MAX_DEPTH = 20  #: nesting of lists and tuples in a value
MAX_ELEMENTS = 2**22  #: array elements and container items in one decoded value
PLAIN_KINDS = "biufcSUMm"  #: bool, ints, floats, complex, bytes, str, datetimes


class WireError(Exception):
    """The other side sent something that is not a well-formed message."""


class Unencodable(TypeError):
    """A value that cannot cross the wire (a function, an object, an object array)."""


def _numpy() -> Any:
    """numpy, imported when a value needs it: an array arrived, or one is being sent (then
    the sender's code imported it already). The student's process imports no library of its
    own accord: a course without numpy runs without it."""
    import numpy

    return numpy


def exception_class(name: str) -> type[Exception]:
    """The built-in exception called ``name``, or an Exception subclass of that name.

    How an error sent across as data (its name and message) is raised again on
    the other side. Only Exception subclasses: a KeyboardInterrupt or SystemExit
    named by the other side must fail like any error, not stop this process.
    """
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return type(name, (Exception,), {})


def _raw(array: np.ndarray) -> dict[str, Any]:
    """An array as data: its dtype (``"<f8"``), shape and bytes in C order, base64."""
    np = _numpy()
    data = np.ascontiguousarray(array).tobytes()
    return {
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "data": base64.b64encode(data).decode("ascii"),
    }


def _plain(dtype: np.dtype) -> bool:
    """Is ``dtype`` one whose elements each cost bytes on the wire?"""
    return (
        dtype.kind in PLAIN_KINDS
        and dtype.fields is None
        and dtype.subdtype is None
        and dtype.itemsize > 0
    )


class Refs(Protocol):
    """What stands for a value that cannot cross as data: a reference to it.

    Each side of the wire has its own (``student.Kept``, ``execute.Handles``):
    the student's process keeps its objects and sends their numbers; the grader
    sends a number for each of the student's objects it was given and for each
    of its own functions a test passes (a callback the student's code may call).
    """

    def keep(self, value: Any) -> dict[str, Any]:
        """``{"t": "ref" or "callback", "v": ...}`` for ``value``; Unencodable if none."""
        ...

    def find(self, kind: str, body: Any) -> Any:
        """The value a ``ref`` or ``callback`` from the other side stands for; WireError
        for one this side never sent or does not take."""
        ...


class _Counter:
    """Elements decoded (or encoded) so far in one value, against :data:`MAX_ELEMENTS`;
    and the references (:class:`Refs`) the value's parts may use, if any."""

    def __init__(self, error: type[Exception], refs: Refs | None = None) -> None:
        self.count, self.error, self.refs = 0, error, refs

    def add(self, n: int) -> None:
        self.count += n
        if self.count > MAX_ELEMENTS:
            raise self.error(f"a value of more than {MAX_ELEMENTS:,} elements")


MAX_DIMENSIONS = 32  #: numpy's own limit on an array's dimensions


def _from_raw(body: Any, counter: _Counter) -> np.ndarray:
    """The array :func:`_raw` described, checked before anything is allocated."""
    np = _numpy()
    if not isinstance(body, dict) or set(body) != {"dtype", "shape", "data"}:
        raise WireError("an array without exactly a dtype, a shape and its data")
    kind, shape, text = body["dtype"], body["shape"], body["data"]
    if not isinstance(kind, str) or not isinstance(text, str) or not isinstance(shape, list):
        raise WireError("an array whose dtype, shape or data is of the wrong type")
    if len(shape) > MAX_DIMENSIONS or not all(type(n) is int and n >= 0 for n in shape):
        raise WireError(f"an array of shape {str(shape)[:80]}")
    dtype = np.dtype(kind)
    if not _plain(dtype):
        raise WireError(f"an array of dtype {dtype}, which is not plain data")
    size = 1
    for n in shape:
        size *= n
    counter.add(size)
    data = base64.b64decode(text, validate=True)
    if len(data) != size * dtype.itemsize:
        raise WireError(f"an array of shape {tuple(shape)} and dtype {dtype} in {len(data)} bytes")
    return np.frombuffer(data, dtype).reshape(shape).copy()  # writable, as the sender's was


def encode(
    value: Any, depth: int = 0, counter: _Counter | None = None, refs: Refs | None = None
) -> Any:
    """A JSON-able form of ``value``; raises Unencodable for what cannot cross.

    refs: where given, an object of another type (a function, a generator, a
    figure's axes, an array of objects) crosses as a reference instead (:class:`Refs`).
    """
    counter = counter or _Counter(Unencodable, refs)
    if depth > MAX_DEPTH:
        raise Unencodable("nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    np = sys.modules.get("numpy")  # only a value of numpy's can be an array: never imported here
    if np is not None and isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.hasobject:
            return _referred(value, counter, "an array of Python objects")
        if not _plain(array.dtype):
            raise Unencodable(f"an array of dtype {array.dtype}")
        if array.nbytes > MAX_VALUE:
            raise Unencodable(f"an array of {array.nbytes:,} bytes, over {MAX_VALUE:,}")
        counter.add(array.size)
        return {"t": "nd" if isinstance(value, np.ndarray) else "np", "v": _raw(array)}
    if isinstance(value, complex):
        return {"t": "complex", "v": [value.real, value.imag]}
    if isinstance(value, (tuple, list)):
        counter.add(len(value))
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {"t": kind, "v": [encode(item, depth + 1, counter) for item in value]}
    if isinstance(value, dict):
        counter.add(len(value))
        return {
            "t": "dict",
            "v": [
                [encode(k, depth + 1, counter), encode(v, depth + 1, counter)]
                for k, v in value.items()
            ],
        }
    pandas = sys.modules.get("pandas")  # only a value of pandas' can be one: never imported here
    if pandas is not None and isinstance(value, (pandas.DataFrame, pandas.Series)):
        return _encode_table(value, pandas, depth, counter)
    return _referred(value, counter, type(value).__name__)


def _referred(value: Any, counter: _Counter, what: str) -> Any:
    """A reference to ``value`` where the value's references are taken, else Unencodable."""
    if counter.refs is None:
        raise Unencodable(what)
    return counter.refs.keep(value)


# ------------------------------------------------------------------ pandas, as columns
# A DataFrame or Series crosses as what it is made of, each part through the codec
# above: its labels (strings, numbers), its index (a range, or a column), and each column
# as a numpy array of a plain dtype. A column of strings (pandas' ``str`` or ``object``)
# crosses as a unicode array and a mask of its missing values. Nothing else of an
# object crosses, and nothing is ever unpickled.

LABELS = (str, int, float, bool, type(None))  #: what a column or index name may be


def _label(name: Any) -> Any:
    np = _numpy()
    if isinstance(name, np.generic):
        name = name.item()
    if not isinstance(name, LABELS):
        raise Unencodable(f"a table labelled by {type(name).__name__}")
    return name


def _encode_column(column: Any, pandas: Any, depth: int, counter: _Counter) -> dict[str, Any]:
    """One column (a Series or Index) as ``{"data": array, "missing": bool array or None}``."""
    np = _numpy()
    values = column.to_numpy()
    if values.dtype.kind in "OT":  # strings, pandas' own or Python's
        missing = np.asarray(pandas.isna(column), dtype=bool)
        kept = [v for v, gone in zip(values, missing, strict=True) if not gone]
        if not all(isinstance(v, str) for v in kept):
            raise Unencodable(f"a column of {column.dtype} that is not strings")
        text = np.array(
            [v if not gone else "" for v, gone in zip(values, missing, strict=True)], dtype=str
        )
        shown_missing = encode(missing, depth + 1, counter) if missing.any() else None
        return {"data": encode(text, depth + 1, counter), "missing": shown_missing, "text": True}
    return {"data": encode(np.asarray(values), depth + 1, counter), "missing": None, "text": False}


def _encode_index(index: Any, pandas: Any, depth: int, counter: _Counter) -> dict[str, Any]:
    name = encode(_label(index.name), depth + 1, counter)
    if isinstance(index, pandas.RangeIndex):
        return {"range": [index.start, index.stop, index.step], "name": name}
    if isinstance(index, pandas.MultiIndex):
        raise Unencodable("a table with a MultiIndex")
    return {"column": _encode_column(index, pandas, depth, counter), "name": name}


def _encode_table(value: Any, pandas: Any, depth: int, counter: _Counter) -> dict[str, Any]:
    index = _encode_index(value.index, pandas, depth, counter)
    if isinstance(value, pandas.Series):
        column = _encode_column(value, pandas, depth, counter)
        name = encode(_label(value.name), depth + 1, counter)
        return {"t": "series", "v": {"name": name, "index": index, "column": column}}
    if isinstance(value.columns, pandas.MultiIndex):
        raise Unencodable("a DataFrame with MultiIndex columns")
    counter.add(value.shape[1])
    labels = [encode(_label(c), depth + 1, counter) for c in value.columns]
    columns = [
        _encode_column(value.iloc[:, i], pandas, depth, counter) for i in range(value.shape[1])
    ]
    return {"t": "frame", "v": {"labels": labels, "index": index, "columns": columns}}


def _decode_column(body: Any, depth: int, counter: _Counter) -> Any:
    """The numpy array a column crossed as (strings with None where missing)."""
    np = _numpy()
    data = decode(body["data"], depth + 1, counter)
    if not isinstance(data, np.ndarray) or data.ndim != 1:
        raise WireError("a table's column that is not a 1-D array")
    if not body["text"]:
        return data
    if data.dtype.kind != "U":
        raise WireError("a column of strings that is not strings")
    values = data.astype(object)
    if body["missing"] is not None:
        missing = decode(body["missing"], depth + 1, counter)
        if not isinstance(missing, np.ndarray) or missing.shape != data.shape:
            raise WireError("a column's missing values of another shape")
        values[missing.astype(bool)] = None
    return values


def _decode_index(body: Any, pandas: Any, depth: int, counter: _Counter) -> Any:
    name = decode(body["name"], depth + 1, counter)
    if "range" in body:
        start, stop, step = (int(n) for n in body["range"])
        return pandas.RangeIndex(start, stop, step, name=name)
    return pandas.Index(_decode_column(body["column"], depth, counter), name=name)


def _decode_table(kind: str, body: Any, depth: int, counter: _Counter) -> Any:
    try:
        import pandas
    except ImportError:
        what = "DataFrame" if kind == "frame" else "Series"
        raise WireError(f"a pandas {what}, but pandas is not installed here") from None
    index = _decode_index(body["index"], pandas, depth, counter)
    if kind == "series":
        values = _decode_column(body["column"], depth, counter)
        return pandas.Series(values, index=index, name=decode(body["name"], depth + 1, counter))
    labels = [decode(label, depth + 1, counter) for label in body["labels"]]
    columns = [_decode_column(column, depth, counter) for column in body["columns"]]
    if len(labels) != len(columns) or any(len(c) != len(index) for c in columns):
        raise WireError("a DataFrame whose labels, columns and index do not match")
    frame = pandas.DataFrame(dict(enumerate(columns)), index=index)
    frame.columns = labels
    return frame


def decode(
    data: Any, depth: int = 0, counter: _Counter | None = None, refs: Refs | None = None
) -> Any:
    """The value ``encode`` made ``data`` from; raises WireError on anything else.

    refs: where given, a reference the other side sent is looked up there
    (:class:`Refs`); without, a reference is an error.
    """
    counter = counter or _Counter(WireError, refs)
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not isinstance(data, dict) or "t" not in data or "v" not in data:
        raise WireError(f"not a value: {str(data)[:80]}")
    kind, body = data["t"], data["v"]
    try:
        if kind == "nd":
            return _from_raw(body, counter)
        if kind == "np":
            return _from_raw(body, counter)[()]
        if kind == "complex":
            return complex(float(body[0]), float(body[1]))
        if kind in ("tuple", "list", "dict"):
            counter.add(len(body))
        if kind == "tuple":
            return tuple(decode(item, depth + 1, counter) for item in body)
        if kind == "list":
            return [decode(item, depth + 1, counter) for item in body]
        if kind == "dict":
            return {decode(k, depth + 1, counter): decode(v, depth + 1, counter) for k, v in body}
        if kind in ("frame", "series"):
            return _decode_table(kind, body, depth, counter)
        if kind in ("ref", "callback") and counter.refs is not None:
            counter.add(1)
            return counter.refs.find(kind, body)
    except WireError:
        raise
    except Exception as error:  # a malformed dtype or base64, wrong lists, unhashable keys
        raise WireError(f"malformed {kind}: {error}") from None
    raise WireError(f"unknown value kind {kind!r}")


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    """Send one message (a JSON-able dict) as a frame."""
    body = json.dumps(message, allow_nan=True).encode()
    sock.sendall(struct.pack(">Q", len(body)) + body)


def _exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    """``size`` bytes from ``sock``; TimeoutError once ``deadline`` (``time.monotonic()``) has
    passed, however the bytes trickle in: each read waits only what is left."""
    chunks, remaining = [], size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the other side's reply ran past its deadline")
            sock.settimeout(left)
        chunk = sock.recv(min(remaining, 2**20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket, deadline: float | None = None) -> dict[str, Any]:
    """Read one frame; a dict. EOFError when the other side is gone, WireError on garbage.

    deadline: a ``time.monotonic()`` time by which the whole frame must have
    arrived, else TimeoutError (None: the socket's own timeout, per read).
    """
    (size,) = struct.unpack(">Q", _exactly(sock, 8, deadline))
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes is over the limit of {MAX_FRAME}")
    try:
        message = json.loads(_exactly(sock, size, deadline))
    except (ValueError, RecursionError) as error:
        raise WireError(f"not JSON: {error}") from None
    if not isinstance(message, dict):
        raise WireError("a frame that is not a message")
    return message
