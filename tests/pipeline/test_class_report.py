"""Does the class report group the class's mistakes and flag the tests worth a look?"""

import pytest

from autograder.pipeline import class_report
from autograder.pipeline.results import Outcome


@pytest.mark.parametrize(
    "message, key",
    [
        (
            "AssertionError: concat_heads of four (6, 2) answers: expected shape (6, 8), "
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
    assert class_report.mistake_key(message) == key


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
    groups = class_report.group_mistakes(rows, tests, owners)
    assert [(g.answer, sorted(g.students)) for g in groups] == [
        ("glue", ["a", "b"]),
        ("other", ["b"]),
    ]
    assert groups[0].tests == {"test_glue": 2, "test_glue_more": 1}
    assert "axis N" in groups[0].key


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
    stats = {s.column: s for s in class_report.stats_per_test(rows, tests, {})}
    assert stats["easy"].flags == ["almost everyone passes"]
    assert stats["hard"].flags == ["almost everyone fails"]
    assert stats["inverted"].flags == ["strong students fail it more than weak ones"]
    assert stats["fine"].flags == [] and stats["fine"].discrimination > 0.9
    assert stats["easy"].discrimination is None  # no spread: no correlation


def test_correlation():
    """Is Pearson's r right on small hand-checked cases?"""
    assert class_report.correlation([0, 1, 0, 1], [1, 3, 1, 3]) == pytest.approx(1.0)
    assert class_report.correlation([0, 1, 0, 1], [3, 1, 3, 1]) == pytest.approx(-1.0)
    assert class_report.correlation([1, 1], [0, 5]) is None


ADVERSARIAL = [
    "x: [" + "(…)   " * 40 + "!",
    "x: [" + "(6, 2)   " * 40 + "!",
    "x: [" + "[(…) (…)]  " * 40 + "!",
    "x: (" + "1 , " * 5_000 + "!",
    "x: " + "'" * 20_000,
    "x: " + "1e" * 20_000,
    "x: " + "[(" * 20_000,
]


def test_no_message_stalls_the_report():
    """Does every adversarial message get its key at once, never backtracking for hours?

    Run in its own process with a minute to spare: a pattern that backtracks
    catastrophically takes years on these, a linear one microseconds.
    """
    import subprocess
    import sys

    code = (
        "import sys, json; from autograder.pipeline.class_report import mistake_key;"
        "[mistake_key(m) for m in json.load(sys.stdin)]; print('done')"
    )
    import json

    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(ADVERSARIAL), capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "done", done.stderr
