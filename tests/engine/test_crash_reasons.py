"""Is a crash in the student's code explained with the student's own names and shapes?

Each rule is tried in this process on code compiled as IPython compiles a cell
(its file name is how the explanation knows the student's frames). Every rule
is graded for real, on a page and in the self-check, by test_diagnosis_course.py.
"""

from __future__ import annotations

import itertools
import linecache

import numpy as np
import pytest

from autograder.sandbox.crash_reasons import describe, explain

_cells = itertools.count(1)


def crash(source: str, **names: object) -> tuple[BaseException, str]:
    """Run ``source`` as a notebook cell would run; its error and its explanation."""
    filename = f"<ipython-input-{next(_cells)}-0123abcd>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    space = {"np": np, **names}
    try:
        exec(compile(source, filename, "exec"), space)
    except Exception as error:
        return error, explain(error)
    raise AssertionError("the code did not crash")


MATMUL = "def scores(q, k):\n    return q @ k\n\nscores(np.ones((4, 3)), np.ones((4, 3)))\n"


@pytest.mark.parametrize(
    "source, said",
    [
        pytest.param(
            MATMUL,
            [
                "q @ k: q is a (4, 3) array of floats; k is a (4, 3) array of floats",
                "the left's last axis with the right's second-to-last axis: 3 against 4",
                "k.T is (3, 4), which would fit",
            ],
            id="matrix product inner sizes",
        ),  # fmt: skip
        pytest.param(
            "q = np.ones((2, 4, 3))\nW = np.ones((4, 3))\nout = np.dot(q[0], W)\n",
            ["np.dot(q[0], W): q[0] is a (4, 3) array", "3 against 4"],
            id="np.dot inner sizes",
        ),
        pytest.param(
            "x = np.ones((2, 4, 3))\nW = np.ones((4, 3))\ny = x @ W\n",
            [
                "x is a (2, 4, 3) array",
                "With more than two axes, @ treats every axis but the "
                "last two as a stack of matrices",
            ],
            id="matrix product of a stack: its meaning changes with the axes",
        ),  # fmt: skip
        pytest.param(
            "def shift(s):\n    top = s.max(axis=-1)\n    return s - top\n\n"
            "shift(np.ones((4, 3)))\n",
            [
                "s - top: s is a (4, 3) array of floats; top is a (4,) array of floats",
                "from the right",
                "axis -1: 3 against 4",
                "keepdims=True keeps it as size 1, (4, 1)",
            ],
            id="shapes that do not broadcast: a reduction lost its axis",
        ),  # fmt: skip
        pytest.param(
            "a = np.ones((3, 5))\nb = np.ones((5, 3))\nc = a * b\n",
            ["axis -1: 5 against 3", "axis -2: 3 against 5", "One side is the other transposed"],
            id="shapes that do not broadcast: transposed",
        ),
        pytest.param(
            "s = np.ones((6, 6))\nfuture = np.ones((8, 8), dtype=bool)\n"
            "m = np.where(future, -np.inf, s)\n",
            [
                "future is a (8, 8) array of booleans",
                "np.where lines up future with s",
                "axis -1: 8 against 6",
            ],
            id="a call that broadcasts its arguments together",
        ),  # fmt: skip
        pytest.param(
            "a = np.ones((4, 2))\nb = np.ones((3, 2))\nc = np.concatenate([a, b], axis=1)\n",
            ["a is a (4, 2) array", "b is a (3, 2) array", "along axis 1", "differ on axis 0"],
            id="joined on the wrong axis",
        ),  # fmt: skip
        pytest.param(
            "x = np.ones((2, 3))\ny = np.hstack([x, np.ones(3)])\n",
            ["the same number of axes: (2, 3), (3,)"],
            id="joined pieces of different numbers of axes",
        ),
        pytest.param(
            "x = np.ones((4, 3))\ny = np.stack([x, x.T])\n",
            ["np.stack needs pieces of one shape", "(4, 3), (3, 4)"],
            id="stacked pieces of two shapes",
        ),
        pytest.param(
            "a = np.ones((4, 6))\nb = a.reshape(5, 4)\n",
            ["a.reshape(5, 4): a is a (4, 6) array", "keeps every entry", "24 entries"],
            id="reshape to another number of entries",
        ),
        pytest.param(
            "a = np.ones((4, 6))\nb = a.sum(axis=2)\n",
            ["a has 2 axes (0, 1; or -1 for the last)"],
            id="an axis that does not exist",
        ),
        pytest.param(
            "w = np.ones(5)\nlast = w[5]\n",
            ["w is (5,) (axis 0 has 5); indices start at 0"],
            id="an index past the end",
        ),
        pytest.param(
            "def norm(x):\n    x.sort()\n\nw = norm(np.ones(3))\nfirst = w[0]\n",
            ["w[0]: w is None", "w holds None: a function that ends without `return`"],
            id="a name that holds None",
        ),
        pytest.param(
            "x = np.ones((4, 6))\nparts = 3\nwidth = x.shape[1] / parts\n"
            "y = x.reshape(4, parts, width)\n",
            [
                "width is the float 2.0",
                "width holds the float 2.0, where a size or an index "
                "must be an int: / always gives a float, // divides whole numbers",
            ],
            id="a size that is a float",
        ),  # fmt: skip
        pytest.param(
            "def layer(x):\n    return x\n\nz = layer @ np.ones(3)\n",
            ["layer is a function: call it"],
            id="a name that holds a function",
        ),
        pytest.param(
            "x = np.ones((2, 3))\ny = x - x.mean\n",
            ["x.mean is the method .mean", "call it, x.mean(), with any arguments"],
            id="a method not called",
        ),
        pytest.param(
            "sizes = {'rows': 2, 'columns': 3}\nn = sizes['row']\n",
            [
                "sizes is a dict with the keys 'rows', 'columns'",
                "sizes has no key 'row' (did you mean 'rows'?)",
            ],
            id="a key a dict does not have",
        ),  # fmt: skip
    ],
)
def test_a_crash_is_explained_in_the_students_terms(source: str, said: list[str]):
    _, why = crash(source)
    for words in said:
        assert words in why, why


def test_an_error_with_no_known_rule_still_names_the_operands():
    """No rule for this error: the operands are still shown, and no rule is guessed."""
    _, why = crash("n = 0\nv = 3 // n\n")
    assert why.startswith("3 // n: n is the int 0"), why
    assert "Why:" not in why


def test_explaining_changes_nothing_and_calls_nothing_of_the_students():
    """An explanation reads operands; it never draws random numbers or calls the student's
    functions again (each could change what the student's code computes next)."""
    source = (
        "calls = []\n"
        "def noisy():\n    calls.append(1)\n    return np.ones(3)\n"
        "rng = np.random.default_rng(0)\n"
        "y = np.ones((2, 2)) @ (noisy() + rng.normal(size=3))\n"
    )
    error, why = crash(source)
    frame_space = error.__traceback__.tb_next.tb_frame.f_globals
    assert frame_space["calls"] == [1]
    assert np.allclose(
        frame_space["rng"].normal(size=3), np.random.default_rng(0).normal(size=6)[3:]
    )
    # the right operand is unknown without calling them again, so no rule is guessed
    assert "np.ones((2, 2)) is a (2, 2) array" in why and "Why:" not in why


def test_an_explanation_that_fails_is_no_explanation():
    """Code Python cannot point into (no cell source kept) gives "", never a second error."""
    filename = "<ipython-input-999-ffff>"
    linecache.cache.pop(filename, None)
    try:
        exec(compile("np.ones(2) @ np.ones(3)", filename, "exec"), {"np": np})
    except ValueError as error:
        assert explain(error) == ""


def test_code_outside_the_students_cells_is_not_explained():
    with pytest.raises(ValueError) as caught:
        np.ones(2) @ np.ones(3)
    assert explain(caught.value) == ""


@pytest.mark.parametrize(
    "value, said",
    [
        (np.ones((2, 3)), "a (2, 3) array of floats"),
        (np.arange(3), "a (3,) array of ints"),
        (np.float64(2.5), "the number"),
        (None, "None"),
        (3, "the int 3"),
        ([np.ones(2), np.ones(3)], "a list of 2: [a (2,) array of floats, a (3,) array of floats]"),
    ],
)
def test_values_are_described_as_a_student_would_say_them(value: object, said: str):
    assert said in describe(value)
