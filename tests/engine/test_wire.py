"""Does only data cross between the grader and a student's process?"""

import base64
import io
import pickle
import socket

import numpy as np
import pytest

from autograder.sandbox import wire


@pytest.mark.parametrize(
    "value",
    [
        None, True, 3, 2.5, "text", (1, 2), [1, [2.0]], {"a": (1,)}, 1 + 2j,
        np.arange(6.0).reshape(2, 3), np.float32(1.5), np.int64(7), (24, 2),
    ],
)  # fmt: skip
def test_round_trip(value):
    """Does every kind of answer come back with its type and value?"""
    back = wire.decode(wire.encode(value))
    assert type(back) is type(value)
    assert np.array_equal(back, value) if isinstance(value, np.ndarray) else back == value


def test_functions_and_objects_do_not_cross():
    """Are functions, objects and object arrays refused?"""
    for value in (lambda: 1, object(), np.array([object()])):
        with pytest.raises(wire.Unencodable):
            wire.encode(value)


def test_pickled_arrays_are_refused():
    """Is an .npy payload holding a pickle refused rather than loaded?"""
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    forged = {"t": "nd", "v": base64.b64encode(buffer.getvalue()).decode()}
    with pytest.raises(wire.WireError):
        wire.decode(forged)
    with pytest.raises(wire.WireError):
        wire.decode({"t": "pickle", "v": base64.b64encode(pickle.dumps(1)).decode()})


def test_deep_nesting_is_refused():
    """Is a value nested past the limit refused instead of exhausting the stack?"""
    data = None
    for _ in range(wire.MAX_DEPTH + 5):
        data = {"t": "list", "v": [data]}
    with pytest.raises(wire.WireError):
        wire.decode(data)


def test_oversized_and_garbage_frames():
    """Are a frame over the size limit and a frame of garbage refused?"""
    a, b = socket.socketpair()
    with a, b:
        a.sendall((wire.MAX_FRAME + 1).to_bytes(8, "big"))
        with pytest.raises(wire.WireError, match="over the limit"):
            wire.receive(b)
        a.sendall((5).to_bytes(8, "big") + b"nope!")
        with pytest.raises(wire.WireError):
            wire.receive(b)


def _npy_text(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode()


def _forged_npy(descr, shape):
    """An .npy file's bytes claiming ``shape`` of ``descr``, with no data behind it."""
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


@pytest.mark.parametrize("descr", ["|V0", "|S0", "<U0", [("a", "<f8"), ("b", "|u1")]])
def test_zero_size_and_structured_dtypes_are_refused(descr):
    """Is an array whose dtype lets a few bytes claim any shape refused before use?"""
    shape = (10**12,) if descr in ("|V0", "|S0", "<U0") else (0,)
    forged = {"t": "nd", "v": base64.b64encode(_forged_npy(descr, shape)).decode()}
    with pytest.raises(wire.WireError):
        wire.decode(forged)


def test_element_count_is_bounded():
    """Is a value of more elements than the limit refused, both ways, whatever its bytes?"""
    many = {"t": "list", "v": [0] * (wire.MAX_ELEMENTS + 1)}
    with pytest.raises(wire.WireError, match="elements"):
        wire.decode(many)
    halves = {
        "t": "tuple",
        "v": [{"t": "nd", "v": _npy_text(np.zeros(wire.MAX_ELEMENTS // 2 + 1, "u1"))}] * 2,
    }
    with pytest.raises(wire.WireError, match="elements"):
        wire.decode(halves)
    with pytest.raises(wire.Unencodable):
        wire.encode(np.zeros(wire.MAX_VALUE + 1, dtype="u1"))
