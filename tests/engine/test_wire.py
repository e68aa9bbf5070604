"""Does only data cross between the grader and a student's process?"""

import base64
import json
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


def test_pickles_do_not_cross():
    """Is a pickle refused, whether as an array's bytes or as a kind of value?"""
    payload = base64.b64encode(pickle.dumps([{"x": 1}])).decode()
    with pytest.raises(wire.WireError):
        wire.decode({"t": "nd", "v": {"dtype": "|O", "shape": [1], "data": payload}})
    with pytest.raises(wire.WireError):
        wire.decode({"t": "nd", "v": payload})  # the .npy bytes of before
    with pytest.raises(wire.WireError):
        wire.decode({"t": "pickle", "v": payload})


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


def _array(dtype, shape, data=b""):
    """An array as the wire carries it, claiming ``shape`` of ``dtype`` over ``data``."""
    return {
        "t": "nd",
        "v": {"dtype": dtype, "shape": shape, "data": base64.b64encode(data).decode()},
    }


@pytest.mark.parametrize(
    "forged",
    [
        _array("|V0", [10**12]),  # zero-size items: any shape in no bytes
        _array("|S0", [10**12]),
        _array("<U0", [10**12]),
        _array("f8,u1", [0]),  # structured
        _array("(2,)f8", [0]),  # a subarray
        _array("<f8", [3], b"\0" * 16),  # fewer bytes than the shape needs
        _array("<f8", [-1], b"\0" * 8),
        _array("<f8", [True], b"\0" * 8),
        _array("<f8", [1.0], b"\0" * 8),
        _array("<f8", [1] * 33, b"\0" * 8),
        _array(["<f8"], [1], b"\0" * 8),
        {"t": "nd", "v": {"dtype": "<f8", "shape": [1], "data": "not base64!"}},
        {"t": "nd", "v": {"dtype": "<f8", "shape": [1], "data": "AAAAAAAAAAA=", "x": 1}},
    ],
    ids=[
        "void0", "bytes0", "str0", "structured", "subarray", "short", "negative", "bool-dim",
        "float-dim", "33-dims", "dtype-list", "bad-base64", "extra-key",
    ],
)  # fmt: skip
def test_arrays_that_are_not_plain_data_are_refused(forged):
    """Is an array whose description does not match plain data refused before it is built?"""
    with pytest.raises(wire.WireError):
        wire.decode(forged)


def test_an_array_arrives_writable_and_in_its_byte_order():
    """Is a decoded array a writable copy, big-endian and non-contiguous ones included?"""
    for value in (np.arange(6.0, dtype=">f8").reshape(2, 3), np.arange(12).reshape(3, 4)[:, ::2]):
        back = wire.decode(wire.encode(value))
        assert back.dtype == value.dtype and np.array_equal(back, value)
        back[0, 0] = 99  # writable, as the sender's was


def test_element_count_is_bounded():
    """Is a value of more elements than the limit refused, both ways, whatever its bytes?"""
    many = {"t": "list", "v": [0] * (wire.MAX_ELEMENTS + 1)}
    with pytest.raises(wire.WireError, match="elements"):
        wire.decode(many)
    halves = {
        "t": "tuple",
        "v": [wire.encode(np.zeros(wire.MAX_ELEMENTS // 2 + 1, "u1"))] * 2,
    }
    with pytest.raises(wire.WireError, match="elements"):
        wire.decode(halves)
    with pytest.raises(wire.Unencodable):
        wire.encode(np.zeros(wire.MAX_VALUE + 1, dtype="u1"))


class _Numbered:
    """A side's references, as a test sees them: each kept value gets the next number."""

    def __init__(self):
        self.kept = []

    def keep(self, value):
        self.kept.append(value)
        return {"t": "ref", "v": [len(self.kept), type(value).__name__, callable(value)]}

    def find(self, kind, body):
        return ("found", kind, body[0])


def test_what_cannot_cross_as_data_crosses_as_a_reference_where_one_is_taken():
    """A generator inside a list, a function, an array of objects: each a numbered reference;
    data around them stays data; without references they are Unencodable as before."""
    gen = (i for i in range(3))
    refs = _Numbered()
    sent = wire.encode([1, gen, {"f": len}, np.array([object()])], refs=refs)
    assert refs.kept[:2] == [gen, len] and len(refs.kept) == 3
    back = wire.decode(json.loads(json.dumps(sent)), refs=refs)
    assert back[0] == 1 and back[1] == ("found", "ref", 1) and back[2] == {"f": ("found", "ref", 2)}
    with pytest.raises(wire.Unencodable):
        wire.encode([1, gen])
    with pytest.raises(wire.WireError):
        wire.decode(sent)  # a reference where none is taken is garbage


def test_a_students_object_by_reference_equals_only_itself():
    """The grader's proxy never asks the student's code whether it equals a test's value, and
    answers no probe (numpy's, copy's) by asking it."""
    from autograder.pipeline.grading.execute import StudentObject

    proxy = StudentObject(run=None, number=1, type_name="evil.Always")
    assert proxy != [0, 2, 4] and not (proxy == 3) and proxy == proxy
    with pytest.raises(AttributeError):
        proxy.__array_interface__  # noqa: B018
    with pytest.raises(AttributeError):
        proxy._private  # noqa: B018
    assert repr(proxy) == "<the student's evil.Always object>"
