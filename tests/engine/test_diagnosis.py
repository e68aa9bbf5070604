"""Does the diagnosis engine name a wrong answer by the one edit of the reference it equals?

Each kind of edit is tried on a small reference with a student's answer that
makes that slip in the student's own style (not the mutant's text); then the
rules that keep a hint honest: nothing for a right answer, both for two edits
that give the same values, nothing for more, and no more of the reference than
the edited expression. Every kind is graded for real and self-checked on
a toy course by test_diagnosis_course.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.diagnosis import Mutants, shape_reason
from autograder.diagnosis import mutants as mutants_module

RNG = np.random.default_rng(7)
X, W_Q, W_K = RNG.normal(size=(5, 4)), RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
M = RNG.normal(size=(4, 6))


def weights(x, W_q, W_k):
    q, k = x @ W_q, x @ W_k
    scores = q @ k.T / np.sqrt(k.shape[1])
    future = np.triu(np.ones((len(x), len(x)), dtype=bool), k=1)
    scores = np.where(future, -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def weights_plain(x, W_q, W_k):
    """weights as many students write it: no largest score subtracted (the same shares)."""
    q, k = x @ W_q, x @ W_k
    scores = q @ k.T / np.sqrt(k.shape[1])
    future = np.triu(np.ones((len(x), len(x)), dtype=bool), k=1)
    e = np.exp(np.where(future, -np.inf, scores))
    return e / e.sum(axis=-1, keepdims=True)


WEIGHTS = [weights, weights_plain]


def centred(m):
    return (m - m.mean(axis=0)) / (m.std(axis=0) + 1)


def tally(a, b):
    return 2 * a + b


def lengths(m):
    return np.linalg.norm(m, ord=2, axis=1)


def head_count(d_model, n_heads):
    return 3 * n_heads * d_model * (d_model // n_heads)


# Students' answers, each with one slip written as a student would write it.
def no_scale(x, W_q, W_k):
    s = (x @ W_q) @ (x @ W_k).T
    s[np.triu_indices(len(x), 1)] = -np.inf
    e = np.exp(s - s.max(1)[:, None])
    return e / e.sum(1)[:, None]


def columns_softmax(x, W_q, W_k):
    s = (x @ W_q) @ (x @ W_k).T / np.sqrt(3)
    s[np.triu_indices(len(x), 1)] = -np.inf
    e = np.exp(s - s.max(axis=0))
    return e / e.sum(axis=0)


def diagonal_masked(x, W_q, W_k):
    s = (x @ W_q) @ (x @ W_k).T / np.sqrt(3)
    s[np.triu_indices(len(x))] = -np.inf
    e = np.exp(s - s.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def keys_from_queries(x, W_q, W_k):
    return weights(x, W_q, W_q)


def multiplied_scale(x, W_q, W_k):
    s = (x @ W_q) @ (x @ W_k).T * np.sqrt(3)
    s[np.triu_indices(len(x), 1)] = -np.inf
    e = np.exp(s - s.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def unscaled_root(x, W_q, W_k):  # divides by d_head, not its square root
    s = (x @ W_q) @ (x @ W_k).T / 3
    s[np.triu_indices(len(x), 1)] = -np.inf
    e = np.exp(s - s.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


CASES = [
    ("operator", WEIGHTS, (X, W_Q, W_K), multiplied_scale, "* np.sqrt(k.shape[1])"),
    ("keyword changed (axis)", WEIGHTS, (X, W_Q, W_K), columns_softmax, "`e.sum(axis=0, keep"),
    ("keyword changed (k)", WEIGHTS, (X, W_Q, W_K), diagonal_masked, "k=0)` where it needs"),
    ("a factor dropped", WEIGHTS, (X, W_Q, W_K), no_scale, "with `q @ k.T` where it needs"),
    ("a function dropped", WEIGHTS, (X, W_Q, W_K), unscaled_root, "`k.shape[1]` where it"),
    ("an argument used for another", WEIGHTS, (X, W_Q, W_K), keys_from_queries, "`x @ W_q`"),
    ("operator (+ for -)", centred, (M,), lambda m: (m + m.mean(0)) / (m.std(0) + 1), "m + m.mean"),
    ("a term dropped", centred, (M,), lambda m: (m - m.mean(0)) / m.std(0), "`m.std(axis=0)`"),
    ("grouping", centred, (M,), lambda m: m - m.mean(0) / (m.std(0) + 1), "m - m.mean(axis=0) /"),
    (
        "a reduction over the whole array",
        centred,
        (M,),
        lambda m: (m - m.mean()) / (m.std(0) + 1),
        "`m.mean()`",
    ),
    ("a twin function", centred, (M,), lambda m: (m - m.mean(0)) / (m.var(0) + 1), None),
    ("a constant off by one", tally, (3.0, 4.0), lambda a, b: 3 * a + b, "`3 * a`"),
    ("two arguments swapped", tally, (3.0, 4.0), lambda a, b: 2 * b + a, None),
    ("keyword changed (ord)", lengths, (M,), lambda m: np.abs(m).sum(axis=1), "ord=1"),
    (
        "integer division",
        head_count,
        (12, 5),
        lambda d, n: 3 * n * d * (d / n),
        "d_model / n_heads",
    ),
]


@pytest.mark.parametrize(
    "reference, probe, answer, said", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_slip_is_named_by_its_edit(reference, probe, answer, said):
    with np.errstate(all="ignore"):  # masking the diagonal leaves row 0 nothing: nan
        got = answer(*probe)
    hint = Mutants(reference, [probe]).cause(got)
    if said is None:  # an edit the engine does not make: it must stay silent, not guess
        assert hint == ""
    else:
        assert hint.startswith("your answer behaves as the right computation would with `")
        assert said in hint, hint


def test_a_transpose_added_or_removed_is_named():
    def scores(q, k):
        return q @ k.T

    q, k = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    family = Mutants(scores, [(q, k)])
    assert "`q @ k` where it needs `q @ k.T`" in family.cause(q @ k)
    assert "`q.T @ k.T` where it needs `q @ k.T`" in family.cause(q.T @ k.T)


def test_operands_swapped_are_named():
    def project(x, W):
        return x @ W

    x, W = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    assert "`W @ x` where it needs `x @ W`" in Mutants(project, [(x, W)]).cause(W @ x)


def test_a_right_answer_and_an_unknown_one_name_nothing():
    family = Mutants(weights, [(X, W_Q, W_K)])
    assert family.cause(weights(X, W_Q, W_K)) == ""
    assert family.cause(np.zeros((5, 5))) == ""
    assert family.cause("not numbers") == ""
    assert family.cause(np.zeros(3)) == ""


def test_two_edits_that_give_the_same_values_are_named_together():
    """Each of two expressions edited alike gives these values: both are said."""

    def two_sums(a, b):
        return a.sum(axis=0) + b.sum(axis=0)

    a = np.arange(6.0).reshape(2, 3)
    got = a.sum(axis=0) + a.sum(axis=0)  # both as a: b replaced by a, or a used twice?
    hint = Mutants(two_sums, [(a, a * 0 + 1)]).cause(a.sum(axis=1).sum() + 0 * got)
    assert hint == ""  # equals no edit
    twice = Mutants(two_sums, [(a, a)])
    one_side = twice.edits(a.sum(axis=1).sum() + a.sum(axis=0))[0]
    assert len(one_side) == 2, one_side  # a's sum or b's, each with axis=None... or neither
    assert " or with `" in twice.cause(a.sum(axis=1).sum() + a.sum(axis=0))


def test_many_edits_that_give_the_same_values_name_nothing():
    def product(a, b, c, d):
        return a * b * c * d

    twos = np.full(3, 2.0)
    # dropping any one of four equal factors gives the same values: no one explanation
    assert Mutants(product, [(twos, twos, twos, twos)]).cause(twos**3) == ""


def test_more_probes_tell_apart_edits_one_probe_cannot():
    """On (6, 3) forgetting the 3 and forgetting n_heads give one count; on (8, 4) they do
    not, so the two probes together name the slip alone."""
    student = lambda d, n: 3 * d * (d // n)  # noqa: E731 -- forgets n_heads
    one = Mutants(head_count, [(6, 3)])
    assert " or with `" in one.cause(student(6, 3))
    both = Mutants(head_count, [(6, 3), (8, 4)])
    hint = both.cause(student(6, 3), student(8, 4))
    assert hint.endswith("with `3` where it needs `3 * n_heads`"), hint


def test_a_second_reference_explains_a_slip_in_another_style():
    def mix(weights, values):
        return weights @ values

    def mix_by_rows(weights, values):
        return (weights[:, None] * values).sum(axis=0)

    w, v = np.array([0.2, 0.3, 0.5]), RNG.normal(size=(3, 4))
    summed_features = (w[:, None] * v).sum(axis=1)
    assert Mutants(mix, [(w, v)]).cause(summed_features) == ""
    hint = Mutants([mix, mix_by_rows], [(w, v)]).cause(summed_features)
    assert "`(weights[:, None] * values).sum(axis=1)`" in hint


def test_only_the_edited_expression_is_shown():
    hint = Mutants(WEIGHTS, [(X, W_Q, W_K)]).cause(columns_softmax(X, W_Q, W_K))
    shown = hint.split("`")[1::2]
    assert len(shown) == 2 and all(len(s) <= mutants_module.SHOWN for s in shown)
    assert "np.triu" not in hint and "np.sqrt" not in hint


def test_mutants_are_made_and_run_once_per_process(monkeypatch):
    made = []
    real = mutants_module.mutants
    monkeypatch.setattr(mutants_module, "mutants", lambda f: made.append(f) or real(f))
    monkeypatch.setattr(mutants_module, "_made", {})
    monkeypatch.setattr(mutants_module, "_fingerprints", {})
    for _ in range(3):
        Mutants(weights, [(X.copy(), W_Q.copy(), W_K.copy())])
    assert len(made) == 1
    assert len(mutants_module._fingerprints) == 1


def test_a_reference_that_loops_or_raises_is_still_probed():
    def first_positive(v):
        for i in range(len(v)):
            if v[i] > 0:
                return v[i] * 2
        raise ValueError("none")

    v = np.array([-1.0, 3.0, 5.0])
    assert "`v[i] * 3`" in Mutants(first_positive, [(v,)]).cause(9.0)


def test_nothing_in_a_while_loop_is_edited():
    """An edit there could keep the loop from ending, in the grader's own process."""

    def halvings(n):
        count = 0
        while n > 1:
            n = n // 2
            count += 1
        return count * 1

    family = Mutants(halvings, [(64,)])
    assert family.cause(3) == ""  # n // 4 would give it, but nothing in the loop is edited
    assert "`count = 1` where it needs `count = 0`" in family.cause(7)
    assert "`count * 2`" in family.cause(12)  # after the loop, edits are made as anywhere


@pytest.mark.parametrize(
    "got, expected, said",
    [
        ((20, 2), (5, 8), "joined along axis 0 where they belong side by side along axis 1"),
        ((5, 2), (5, 8), "axis 1 is 2 (d_head) long where it should be 8 (d_model)"),
        ((8, 5), (5, 8), "it is transposed"),
        ((40,), (5, 8), "it is flattened"),
        ((5,), (5, 8), "axis 1 (size 8 (d_model)) is missing"),
        ((4, 5, 2), (4, 10), "your answer is (n_heads, T, d_head)"),
        ((3, 5, 8), (5, 8), "an extra axis 0 of size 3 (np.stack adds an axis"),
        ((5, 1, 8), (5, 8), "a kept or added axis of size 1"),
        ((2, 5, 4), (5, 4, 2), "the same axes in another order"),
    ],
)
def test_a_wrong_shape_is_said_in_the_lessons_names(got, expected, said):
    sizes = {"T": 5, "d_model": 8, "d_head": 2, "n_heads": 4}
    assert said in shape_reason(got, expected, sizes)


def test_a_right_shape_says_nothing():
    assert shape_reason((5, 8), (5, 8)) == ""
