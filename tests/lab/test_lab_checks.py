"""Do the test cells' messages depend only on the answer, and do the pictures read right?

``lab_checks.py`` as the source folder holds it, called directly.
"""

import importlib.util
import re
from xml.etree import ElementTree

import numpy as np
import pytest

from . import lab


@pytest.fixture(scope="module")
def lab_checks():
    path = (lab.ROOT / lab.SOURCE).with_name("lab_checks.py")
    spec = importlib.util.spec_from_file_location("lab_checks_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _worst(lab_checks, got, expected):
    """The index ``check_close`` names as the worst: ``"(1, 0)"``."""
    with pytest.raises(AssertionError) as failed:
        lab_checks.check_close(got, expected, "f")
    return str(failed.value).split("the worst is at index ")[1].split(", got")[0]


@pytest.mark.parametrize("nudge", [-1, 0, 1])
def test_two_equal_errors_name_the_first_whatever_their_last_bits(lab_checks, nudge):
    """A row of two shares, one too big and one too small by the same: always the first?"""
    expected = np.array([[1.0, 0.0], [0.09936, 0.90064]])
    got = np.array([[1.0, 0.0], [0.85010, 0.14990]])
    # the second error made larger or smaller in its last bits, as a vector loop may
    for _ in range(4):
        got[1, 1] = np.nextafter(got[1, 1], got[1, 1] + nudge)
    assert _worst(lab_checks, got, expected) == "(1, 0)"


def test_a_larger_error_is_still_the_worst(lab_checks):
    """Not every near-tie: an error a thousandth larger is named where it is?"""
    expected = np.array([0.2, 0.3, 0.5])
    got = np.array([0.3, 0.3, 0.6001])  # errors 0.1, 0 and 0.1001
    assert _worst(lab_checks, got, expected) == "(2,)"
    got = np.array([0.3, np.nan, 0.3])
    assert _worst(lab_checks, got, expected) == "(1,)"


X, W_Q, W_K = np.eye(3, 4), np.arange(12.0).reshape(4, 3), -np.arange(12.0).reshape(4, 3)


def _refusal(lab_checks, *args):
    given = lab_checks.stand_in("attention_weights", [((X, W_Q, W_K), np.eye(3))])
    with pytest.raises(lab_checks.NotExpected) as refused:
        given(*args)
    return str(refused.value)


def test_a_stand_in_names_the_argument_that_differs_by_value(lab_checks):
    """Swapped arguments named as swapped; another shape and other values, by name?"""
    assert "with W_k where W_q goes and W_q where W_k goes" in _refusal(lab_checks, X, W_K, W_Q)
    assert "with a (4, 2) W_q where the test gives a (4, 3) one" in _refusal(
        lab_checks, X, W_Q[:, :2], W_K
    )
    said = _refusal(lab_checks, X, W_Q + 1, W_K)
    assert "with another W_q than the one the test gives (this test" in said  # W_q alone
    assert "3 arguments where it takes" not in _refusal(lab_checks, X, W_Q, W_K + 0.5)
    assert "2 arguments where it takes 3" in _refusal(lab_checks, X, W_Q)


def _failure(lab_checks, fn, *args):
    with pytest.raises(AssertionError) as failed:
        lab_checks.quietly(fn, *args)
    return str(failed.value)


def test_an_answer_that_raises_is_not_said_to_crash(lab_checks):
    """The student's own raise, a library's error, and a stand-in's refusal, each told apart?"""

    def own(v):
        raise ValueError("needs three")

    def library(v):
        return np.ones(2) @ np.ones(3)  # numpy's error

    def refused(v):
        return lab_checks.stand_in("blend", unknown="blend is not called here")(v)

    assert "own on arguments (4,): your code raised ValueError: needs three" in _failure(
        lab_checks, own, np.ones(4)
    )
    assert "your code crashed with ValueError" in _failure(lab_checks, library, np.ones(4))
    said = _failure(lab_checks, refused, np.ones(4))
    assert said == "refused on arguments (4,): blend is not called here"


def test_the_graders_traceback_tells_a_raise_from_a_crash(lab_checks):
    """An error from the grader's sandbox carries the student's frames as text: read alike?"""
    raised = ValueError("needs three")
    raised.student_traceback = [
        "Traceback (most recent call last):\n",
        '  Cell In[4], line 3, in own\n    raise ValueError("needs three")\n',
        "ValueError: needs three\n",
    ]
    crashed = ValueError("shapes")
    crashed.student_traceback = [
        "Traceback (most recent call last):\n",
        "  Cell In[4], line 2, in f\n    return a @ b\n",
        "ValueError: shapes\n",
    ]
    assert lab_checks._own_raise(raised) and not lab_checks._own_raise(crashed)


def test_a_crash_the_grader_explained_says_why_in_the_message(lab_checks):
    """The sandbox's explanation (under the student's traceback) ends the test's message, so
    the page's summary says it; the student's own raise has none and says none."""
    crashed = ValueError("matmul: mismatch")
    crashed.student_traceback = [
        "Traceback (most recent call last):\n",
        "  Cell In[4], line 2, in f\n    return q @ k\n",
        "ValueError: matmul: mismatch\n",
        "\nq @ k: q is a (4, 3) array of floats; k is a (4, 3) array of floats.\n"
        "Why: a matrix product lines up the left's last axis with the right's "
        "second-to-last axis: 3 against 4.\n",
    ]

    def f(v):
        raise crashed

    said = _failure(lab_checks, f, np.ones(4))
    assert said.endswith(
        "your code crashed with ValueError: matmul: mismatch\nq @ k: q is a (4, 3) array of "
        "floats; k is a (4, 3) array of floats.\nWhy: a matrix product lines up the left's "
        "last axis with the right's second-to-last axis: 3 against 4."
    ), said
    assert not lab_checks._own_raise(crashed)


def _contrast(lab_checks, a, b):
    light, dark = sorted((lab_checks._luminance(a), lab_checks._luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_every_share_is_legible_on_its_colour(lab_checks):
    """Does each share's number keep WCAG's 4.5:1 on its own cell's blue, from 0 to 1?"""
    for share in np.linspace(0, 1, 201):
        fill = lab_checks.blue(share)
        assert _contrast(lab_checks, fill, lab_checks.ink(fill)) >= 4.5, (share, fill)
    assert lab_checks.blue(0) == lab_checks.BLUES[0] and lab_checks.blue(1) == lab_checks.BLUES[-1]


def test_a_heatmap_is_its_numbers_and_leaves_the_future_blank(lab_checks):
    """Does the SVG write each past share as text, none right of the diagonal, labels escaped?"""
    table = np.array([[1.0, 0, 0], [0.25, 0.75, 0], [0.2, 0.3, 0.5]])
    svg = lab_checks.heatmaps_svg([table], ["head <1>"], ["<", "&", '"'], 'a "causal" head', True)
    root = ElementTree.fromstring(svg)  # well-formed, whatever the labels hold
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert [t for t in texts if re.fullmatch(r"\d\.\d\d", t or "")] == [
        "1.00", "0.25", "0.75", "0.20", "0.30", "0.50"
    ]  # fmt: skip
    assert "head <1>" in texts and "<" in texts and root.get("aria-label") == 'a "causal" head'
    full = lab_checks.heatmaps_svg([table], ["head"], ["a", "b", "c"], "all", False)
    assert full.count("0.00") == 3


def test_a_cause_is_looked_for_only_when_the_check_fails(lab_checks):
    """A hint given as a function: not called for a right answer, its words for a wrong one?"""
    called = []

    def cause():
        called.append(True)
        return "The scores are not scaled."

    lab_checks.check_close(np.eye(2), np.eye(2), "f", hint=cause)
    lab_checks.check_shape(np.eye(2), (2, 2), "f", hint=cause)
    assert called == []
    with pytest.raises(AssertionError, match=r"f: wrong values: the scores are not scaled;"):
        lab_checks.check_close(2 * np.eye(2), np.eye(2), "f", hint=cause)
    with pytest.raises(AssertionError, match=r"got \(3,\): The scores are not scaled\.$"):
        lab_checks.check_shape(np.ones(3), (2, 2), "f", hint=cause)
    assert len(called) == 2


def test_random_arrays_are_the_seeds_draws_and_each_calls_own(lab_checks):
    """Drawn once per seed and shapes, are they still the generator's draws, and copies?"""
    shapes = ((3, 4), (4, 2), 5)
    rng = np.random.default_rng(801)
    fresh = [rng.normal(size=shape) for shape in shapes]
    first = lab_checks.random_arrays(801, *shapes)
    first[0] *= 40  # a test that changes its inputs in place
    again = lab_checks.random_arrays(801, *shapes)
    assert all(np.array_equal(a, b) for a, b in zip(again, fresh, strict=True))
    assert (801, shapes) in lab_checks._drawn
    listed = lab_checks.random_arrays(801, [3, 4])  # a list is no key: drawn afresh
    assert np.array_equal(listed[0], fresh[0])


#: calls counted by the functions the tests of ``remembered`` hand it (it refuses closures)
_CALLS: list[int] = []
#: a default no key can hold (an array is not hashable)
_AN_ARRAY = np.ones(2)


def test_a_remembered_reference_is_computed_once_and_each_call_gets_its_own(lab_checks):
    """Same arrays: one computation, equal answers, and a copy per caller; other arrays, a
    keyword, a list, an object array or a large array, or an answer of objects or a large
    one: computed afresh, nothing kept."""
    calls = _CALLS
    calls.clear()

    def weights(x, w):  # counts in a global: remembered refuses a closure
        _CALLS.append(1)
        return x @ w

    kept = lab_checks.remembered(weights)
    x, w = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
    first = kept(x, w)
    first[0, 0] = -1.0  # a caller that changes the answer in place
    again = kept(x.copy(), w.copy())
    assert np.array_equal(again, x @ w) and len(calls) == 1
    assert kept(x, 2 * w)[0, 0] == 6.0 and len(calls) == 2  # other bytes, other answer
    assert kept(x.astype(np.float32), w).dtype == np.float64 and len(calls) == 3  # other dtype
    kept(x, w=w)
    kept(x, np.ones((3, 2), dtype=object))
    big = np.ones((3, 1 + lab_checks.MAX_REMEMBERED_BYTES // 24))
    kept(np.ones((1, 3)), big)
    kept(np.ones((1, 3)), big)
    assert len(calls) == 7
    assert kept.__name__ == "weights" and kept.__wrapped__ is weights

    def rows(x):  # an answer of objects: a copy would share them, so none is kept
        _CALLS.append(1)
        return np.array([list(row) for row in x] + [None], dtype=object)

    listed = lab_checks.remembered(rows)
    assert listed(x)[0] == [0.0, 1.0, 2.0] and listed(x)[0] == [0.0, 1.0, 2.0]
    assert len(calls) == 9

    def outer(x):  # small arguments, a large answer (T positions give T x T shares)
        _CALLS.append(1)
        return np.outer(x, x)

    grown = lab_checks.remembered(outer)
    column = np.arange(1.0 + lab_checks.MAX_REMEMBERED_BYTES // 64)
    assert grown(column).nbytes > lab_checks.MAX_REMEMBERED_BYTES
    assert np.array_equal(grown(column), np.outer(column, column))
    assert len(calls) == 11


def test_remembered_keeps_no_failure_and_at_most_its_bound(lab_checks, monkeypatch):
    """An exception is raised again on the next call, never kept; past the bound, answers are
    computed every time (the memory a class's calls take stays bounded)."""
    monkeypatch.setattr(lab_checks, "MAX_REMEMBERED", 2)
    monkeypatch.setattr(lab_checks, "_remembered", {})
    calls = _CALLS
    calls.clear()

    def twice(x):
        _CALLS.append(1)
        if x.sum() < 0:
            raise ValueError("negative")
        return 2 * x

    kept = lab_checks.remembered(twice)
    for _ in range(2):
        with pytest.raises(ValueError, match="negative"):
            kept(-np.ones(2))
    assert len(calls) == 2
    for value in (1.0, 2.0, 3.0, 3.0):
        assert kept(np.full(2, value))[0] == 2 * value
    assert len(calls) == 6 and len(lab_checks._remembered) == 2
    scale = 2.0
    with pytest.raises(TypeError, match="closure"):
        lab_checks.remembered(lambda x: scale * x)
    with pytest.raises(TypeError, match="defaults that are not plain values"):
        lab_checks.remembered(lambda x, scale=_AN_ARRAY: x)
    lab_checks.remembered(lambda x, scale=2.0: scale * x)  # a plain default: part of the key


def test_remembered_tells_apart_functions_of_one_code_with_other_defaults(lab_checks):
    """Two functions made by one ``def`` with other defaults give their own answers."""

    def make(factor):
        def scaled(x, factor=factor):
            return factor * x

        return lab_checks.remembered(scaled)

    x = np.ones(2)
    assert make(2.0)(x)[0] == 2.0 and make(3.0)(x)[0] == 3.0 and make(2.0)(x)[0] == 2.0


def test_the_quick_allclose_is_numpys(lab_checks):
    """Does ``_allclose`` decide as ``np.allclose`` does, for arrays near the tolerance, with
    nan and inf, and at the ends of the float range?"""
    rng = np.random.default_rng(8)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 5e-324]
    for trial in range(3000):
        shape = tuple(rng.integers(0, 4, size=rng.integers(0, 3)))
        b = rng.normal(size=shape) * 10.0 ** rng.integers(-12, 12)
        rtol, atol = [(1e-6, 1e-9), (1e-9, 1e-12), (1e-5, 1e-8)][trial % 3]
        scale = atol + rtol * np.abs(b)
        a = b + rng.choice([-1.0, 1.0], size=shape) * scale * rng.choice([0.5, 1.0, 1.5, 2.0])
        if trial % 4 == 0 and a.size:
            a.flat[rng.integers(a.size)] = rng.choice(specials)
        if trial % 5 == 0 and b.size:
            b.flat[rng.integers(b.size)] = rng.choice(specials)
        with np.errstate(all="ignore"):
            expected = bool(np.allclose(a, b, rtol=rtol, atol=atol))
        assert lab_checks._allclose(a, b, rtol, atol) == expected, (a, b, rtol, atol)


def _as_cells(space, *sources):
    """Run each source as a notebook cell (its code named as IPython names a cell's)."""
    import linecache

    for n, source in enumerate(sources, start=900):
        name = f"<ipython-input-{n}-0123abcd>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        exec(compile(source, name, "exec"), space)


def test_in_a_kernel_a_crash_is_explained_only_in_the_students_own_code(lab_checks):
    """Where the student's code runs in the kernel (stock nbgrader, Jupyter), the message
    explains a crash in the student's line, never one in a served stand-in's (the test's
    reference runs in a cell too, and is no student's line)."""
    space = {"np": np}
    _as_cells(
        space,
        "def scores(q, k):\n    return q @ k\n",
        "def layer(x):\n    return helper(x)\n",
        "def _reference(x):\n    return x @ x\n",
    )
    own = _failure(lab_checks, space["scores"], np.ones((4, 3)), np.ones((4, 3)))
    assert "q @ k: q is a (4, 3) array of floats" in own
    assert "Why: a matrix product lines up the left's last axis" in own
    with lab_checks.served(space, helper=space["_reference"]):
        theirs = _failure(lab_checks, space["layer"], np.ones((2, 3)))
    assert "crashed with ValueError" in theirs and "Why:" not in theirs, theirs
