"""Does the class report group the class's mistakes and flag the tests worth a look?"""

import pytest

from autograder.pipeline.reports import class_stats
from autograder.pipeline.results import Outcome


@pytest.mark.parametrize(
    "message, key",
    [
        (
            "AssertionError: glue of four (6, 2) parts: expected shape (6, 8), "
            "got (24, 2): you glued along axis 0, the positions",
            "expected shape (…), got (…): you glued along axis N, the positions",
        ),
        (
            "AssertionError: f crashed on arguments [(4, 1), (4, 3)]: ValueError: size 1 and 3",
            "ValueError: size N and N",
        ),
        ("NameError: name 'world_a' is not defined", "name '…' is not defined"),
        (
            "AssertionError: wrong_shape must be a tuple, got list",
            "wrong_shape must be a tuple, got list",
        ),
        ("", "(no message)"),
    ],
)
def test_mistake_key_leaves_out_the_particulars(message, key):
    """Are the subject, numbers, shapes and quoted names left out of a message's key?"""
    assert class_stats.mistake_key(message) == key


def _row(student, points, messages=None):
    return Outcome(student, points, 4.0, messages=messages or {})


def test_same_mistake_in_two_tests_is_one_group_per_answer():
    """Do two tests failing with one message, on other inputs, make one group with both?"""
    tests = {"test_glue": 1.0, "test_glue_more": 1.0, "test_other": 2.0}
    owners = {"test_glue": "glue", "test_glue_more": "glue", "test_other": "other"}
    wrong = "AssertionError: glue of {} answers: got ({}, 2): you glued along axis 0"
    rows = [
        _row("a", {"test_glue": 0, "test_glue_more": 0, "test_other": 2},
             {"test_glue": wrong.format("four", 24), "test_glue_more": wrong.format("two", 10)}),
        _row("b", {"test_glue": 0, "test_glue_more": 1, "test_other": 0},
             {"test_glue": wrong.format("four", 24), "test_other": "AssertionError: x: off by 3"}),
        _row("c", {"test_glue": 1, "test_glue_more": 1, "test_other": 2}),
    ]  # fmt: skip
    causes, _ = class_stats.group_by_cause(rows, tests, owners, {"glue": set(), "other": set()})
    assert [(c.answer, sorted(c.students)) for c in causes] == [
        ("glue", ["a", "b"]),
        ("other", ["b"]),
    ]
    (glued,) = causes[0].mistakes
    assert glued.tests == {"test_glue": 2, "test_glue_more": 1}
    assert "axis N" in glued.key


CHAIN = {"shares": set(), "layer": {"shares"}, "multi": {"layer", "glue"}, "glue": set()}
CHAIN_TESTS = {"test_shares": 1.0, "test_layer": 1.0, "test_glue": 1.0, "test_multi": 1.0}
CHAIN_OWNERS = {t: t.removeprefix("test_") for t in CHAIN_TESTS}


def test_students_are_grouped_by_the_first_broken_answer():
    """Is each student under the first broken answer of a chain, its symptoms folded beneath?

    Three students break the shares, which also costs layer and multi (symptoms);
    one breaks only the glue; the largest group, the root cause, comes first.
    """
    bad = "AssertionError: shares on T=7: wrong values: not divided by sqrt(width)"
    sym = "AssertionError: layer on T=7: wrong values; the worst is at (3, 0)"
    rows = [
        _row(s, {"test_shares": 0, "test_layer": 0, "test_glue": 1, "test_multi": 0},
             {"test_shares": bad, "test_layer": sym, "test_multi": "AssertionError: multi: off"})
        for s in ("a", "b", "c")
    ] + [
        _row("d", {"test_shares": 1, "test_layer": 1, "test_glue": 0, "test_multi": 1},
             {"test_glue": "AssertionError: glue: you glued along axis 0"}),
        _row("e", {"test_shares": 1, "test_layer": 1, "test_glue": 1, "test_multi": 1}),
    ]  # fmt: skip
    causes, stubs = class_stats.group_by_cause(rows, CHAIN_TESTS, CHAIN_OWNERS, CHAIN)
    assert [(c.answer, sorted(c.students)) for c in causes] == [
        ("shares", ["a", "b", "c"]),
        ("glue", ["d"]),
    ]
    shares = causes[0]
    assert [m.key for m in shares.mistakes] == ["wrong values: not divided by sqrt(width)"]
    assert {(m.answer, len(m.students)) for m in shares.symptoms} == {("layer", 3), ("multi", 3)}
    assert stubs == []


def test_stubs_are_apart_and_take_their_consequences_with_them():
    """Is an answer left as a stub listed apart, with what fails because of it, and no cause?"""
    rows = [
        _row("a", {"test_shares": 0, "test_layer": 0, "test_glue": 1, "test_multi": 0},
             {"test_shares": "AssertionError: shares: not attempted yet",
              "test_layer": "AssertionError: layer cannot be checked until shares works"}),
    ]  # fmt: skip
    rows[0].not_attempted = ["shares"]
    causes, stubs = class_stats.group_by_cause(rows, CHAIN_TESTS, CHAIN_OWNERS, CHAIN)
    assert causes == []
    assert [(u.answer, u.students, u.downstream) for u in stubs] == [("shares", {"a"}, 2)]


def test_a_written_answer_awaits_a_ta_until_graded():
    """Is an ungraded written answer shown as awaiting a TA, not as 0 points for everyone?"""
    rows = [_row("a", {"essay": None, "t": 1}), _row("b", {"essay": 2.0, "t": 0})]
    stats = {
        s.answer: s
        for s in class_stats.stats_per_answer(
            rows, {"essay": ["essay"], "f": ["t"]}, {"essay": 2.0, "t": 1.0}
        )
    }
    assert (stats["essay"].mean, stats["essay"].full, stats["essay"].awaiting) == (2.0, 1.0, 1)
    assert (stats["f"].mean, stats["f"].full, stats["f"].awaiting) == (0.5, 0.5, 0)
    nobody = class_stats.stats_per_answer([rows[0]], {"essay": ["essay"]}, {"essay": 2.0})
    assert (nobody[0].mean, nobody[0].full, nobody[0].awaiting) == (None, None, 1)


def test_flags_easy_hard_and_inverted_tests():
    """Are tests everyone passes, everyone fails, or strong students fail, flagged?"""
    tests = {"easy": 1.0, "hard": 1.0, "inverted": 1.0, "fine": 1.0}
    rows = []
    for i in range(10):
        strong = i >= 5
        rows.append(
            _row(f"s{i}", {"easy": 1, "hard": 0, "inverted": 0 if strong else 1,
                           "fine": 1 if strong else 0, "rest": 10 if strong else 0})
        )  # fmt: skip
    stats = {s.column: s for s in class_stats.stats_per_test(rows, tests, {})}
    assert stats["easy"].flags == ["almost everyone passes"]
    assert stats["hard"].flags == ["almost everyone fails"]
    assert stats["inverted"].flags == ["strong students fail it more than weak ones"]
    assert stats["fine"].flags == [] and stats["fine"].discrimination > 0.9
    assert stats["easy"].discrimination is None  # no spread: no correlation


def test_correlation():
    """Is Pearson's r right on small hand-checked cases?"""
    assert class_stats.correlation([0, 1, 0, 1], [1, 3, 1, 3]) == pytest.approx(1.0)
    assert class_stats.correlation([0, 1, 0, 1], [3, 1, 3, 1]) == pytest.approx(-1.0)
    assert class_stats.correlation([1, 1], [0, 5]) is None


ADVERSARIAL = [
    "x: [" + "(…)   " * 40 + "!",
    "x: [" + "(6, 2)   " * 40 + "!",
    "x: [" + "[(…) (…)]  " * 40 + "!",
    "x: (" + "1 , " * 5_000 + "!",
    "x: " + "'" * 20_000,
    "x: " + "1e" * 20_000,
    "x: " + "[(" * 20_000,
]


@pytest.mark.slow  # renders many pages
def test_no_message_stalls_the_report():
    """Does every adversarial message get its key at once, never backtracking for hours?

    Run in its own process with a minute to spare: a pattern that backtracks
    catastrophically takes years on these, a linear one microseconds.
    """
    import subprocess
    import sys

    code = (
        "import sys, json; from autograder.pipeline.reports.class_stats import mistake_key;"
        "[mistake_key(m) for m in json.load(sys.stdin)]; print('done')"
    )
    import json

    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(ADVERSARIAL), capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "done", done.stderr
