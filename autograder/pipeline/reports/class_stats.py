"""The class's statistics, for its report (:mod:`.class_report`): gathered from the
students' :class:`~autograder.pipeline.results.Outcome` rows in one pass over them.

- the class's mistakes by cause (:func:`group_by_cause`): each student under the
  first broken answer of a chain, in dependency order, the failures it causes in
  the answers that use it folded beneath; the answers left as stubs apart;
  failing tests' messages grouped with numbers, shapes and quoted names left out
  (:func:`mistake_key`);
- per answer: mean points and the share of students with full marks
  (:func:`stats_per_answer`);
- per test cell: pass rate and discrimination (the correlation between passing
  it and the rest of the score), the tests worth a second look flagged
  (:func:`stats_per_test`).
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autograder.pipeline.course import dependencies, notebook
from autograder.pipeline.course.assignment import HIDDEN_TESTS
from autograder.pipeline.course.notebook import Columns
from autograder.pipeline.results import Outcome

FLAG_EASY = 0.95  #: pass rate at or above: almost everyone passes
FLAG_HARD = 0.05  #: pass rate at or below: almost everyone fails
FLAG_INVERTED = -0.1  #: discrimination below: strong students fail it more than weak ones
MIN_FOR_FLAGS = 5  #: students needed before a flag means anything
MAX_KEY = 240  #: characters of a normalised message kept as its group's key
MAX_MESSAGE = 4 * MAX_KEY  #: characters of a message read to make its key
SHOWN_STUDENTS = 40  #: students listed in a group before "and N more"


# ------------------------------------------------------------------ mistakes

# Whitespace is taken in one place only (never "\s*,?\s*"), so no run of it can
# be split between two parts in several ways: matching is linear in the message.
_SHAPE = re.compile(r"\(\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*\)")
_ITEM = r"(?:\(…\)|\[…\])"
_LIST_OF_SHAPES = re.compile(rf"\[\s*{_ITEM}(?:\s*(?:,\s*)?{_ITEM})*\s*(?:,\s*)?\]")
_NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![A-Za-z_])")
_QUOTED = re.compile(r"'[^'\n]{1,80}'|\"[^\"\n]{1,80}\"")


def mistake_key(message: str) -> str:
    """The mistake a failing test's message names, with its particulars left out.

    ``AssertionError: stack of four (6, 2) arrays: expected shape (6, 8), got
    (24, 2): you stacked along axis 0, ...`` becomes ``expected shape (…), got
    (…): you stacked along axis N, ...``: what was called on what (the text
    before the first ``": "``) goes, shapes become ``(…)``, numbers ``N`` and
    quoted names ``'…'``, so one misconception met by several tests, on
    several inputs, is one group.
    """
    text = message[:MAX_MESSAGE].strip()
    text = text.removeprefix("AssertionError: ")
    subject, sep, rest = text.partition(": ")
    if sep and rest.strip():
        text = rest
    text = _QUOTED.sub("'…'", text)
    text = _SHAPE.sub("(…)", text)
    for _ in range(3):  # lists of shapes, then lists of those
        text = _LIST_OF_SHAPES.sub("[…]", text)
    text = _NUMBER.sub("N", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:MAX_KEY] or "(no message)"


@dataclass
class Mistake:
    """One group of failures: tests of one answer whose messages share a :func:`mistake_key`."""

    answer: str
    key: str
    example: str  # one original message, as a student saw it
    students: set[str] = field(default_factory=set)
    tests: dict[str, int] = field(default_factory=dict)  # test column -> failures


def _add(
    groups: dict[tuple[str, str], Mistake], answer: str, test: str, message: str, sid: str
) -> None:
    """Count one failing ``test`` of ``answer`` by student ``sid`` in its group."""
    key = mistake_key(message)
    group = groups.setdefault((answer, key), Mistake(answer, key, message))
    group.students.add(sid)
    group.tests[test] = group.tests.get(test, 0) + 1


def _largest_first(groups: dict[tuple[str, str], Mistake]) -> list[Mistake]:
    return sorted(groups.values(), key=lambda g: (-len(g.students), -sum(g.tests.values()), g.key))


def _failures(
    row: Outcome, tests: dict[str, float], owners: dict[str, str]
) -> list[tuple[str, str, str]]:
    """``(test, answer, message)`` of each test ``row`` lost points in, in column order."""
    found = []
    for test, possible in tests.items():
        earned = row.points.get(test)
        if earned is not None and earned < possible:
            found.append((test, owners.get(test, ""), str(row.messages.get(test, ""))))
    return found


@dataclass
class Cause:
    """Students whose chain of broken answers starts at ``answer``.

    mistakes: the failures in ``answer`` itself, grouped by message; symptoms:
    the failures they cause in answers that use it, grouped by answer and message.
    """

    answer: str
    students: set[str] = field(default_factory=set)
    mistakes: list[Mistake] = field(default_factory=list)
    symptoms: list[Mistake] = field(default_factory=list)


@dataclass
class Unattempted:
    """Students who left ``answer`` as its stub, and the failures that follow from it."""

    answer: str
    students: set[str] = field(default_factory=set)
    downstream: int = 0  # failing tests in answers that use it


def group_by_cause(
    rows: Sequence[Outcome],
    tests: dict[str, float],
    owners: dict[str, str],
    graph: dict[str, set[str]],
) -> tuple[list[Cause], list[Unattempted]]:
    """The class's failures, each student under the first broken answer of each chain.

    A broken answer (one that lost points) is a root when no answer it uses,
    directly or not (``graph``: :func:`.dependencies.uses`), is broken or left
    as a stub; the failures of an answer that uses a broken root are its
    symptoms, folded under that root. Failures of a stub, and those that follow
    from one, are counted apart. Within a cause, each student is grouped by the
    message most of the answer's failing tests share (:func:`mistake_key`; on a
    tie the longer, since one that names a cause says more than a bare "wrong
    values"), counting every failing test of the answer. Causes come largest
    first, then in the order of ``owners``'s answers; a student with two
    independent mistakes is under both.
    """
    order = {answer: i for i, answer in enumerate(dict.fromkeys(owners.values()))}
    above = {answer: dependencies.upstream(answer, graph) for answer in order}
    causes: dict[str, Cause] = {}
    mistakes: dict[str, dict[tuple[str, str], Mistake]] = {}
    symptoms: dict[str, dict[tuple[str, str], Mistake]] = {}
    skipped_by: dict[str, Unattempted] = {}
    for row in rows:
        sid, skipped = row.student_id, set(row.not_attempted)
        for answer in skipped:
            skipped_by.setdefault(answer, Unattempted(answer)).students.add(sid)
        failures = [f for f in _failures(row, tests, owners) if f[1] not in skipped]
        broken = {answer for _, answer, _ in failures}
        seen: dict[str, dict[str, list[str]]] = {}  # root answer -> key -> its messages
        for test, answer, message in failures:
            upstream = above.get(answer, set())
            if not upstream & (broken | skipped):
                causes.setdefault(answer, Cause(answer)).students.add(sid)
                seen.setdefault(answer, {}).setdefault(mistake_key(message), []).append(message)
                continue
            roots = [u for u in upstream & broken if not above.get(u, set()) & (broken | skipped)]
            for root in roots:
                _add(symptoms.setdefault(root, {}), answer, test, message, sid)
            if not roots:
                for stub in upstream & skipped:
                    skipped_by[stub].downstream += 1
        for answer, keys in seen.items():  # each student once per cause, by its main message
            key = max(keys, key=lambda k: (len(keys[k]), len(k)))
            for test, _, _ in (f for f in failures if f[1] == answer):
                _add(mistakes.setdefault(answer, {}), answer, test, keys[key][0], sid)
    for answer, cause in causes.items():
        cause.mistakes = _largest_first(mistakes.get(answer, {}))
        cause.symptoms = _largest_first(symptoms.get(answer, {}))
    ranked = sorted(causes.values(), key=lambda c: (-len(c.students), order.get(c.answer, 0)))
    stubs = sorted(skipped_by.values(), key=lambda u: (-len(u.students), order.get(u.answer, 0)))
    return ranked, stubs


# ------------------------------------------------------------------ statistics


def correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's correlation of two equally long sequences; None where one is constant."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


@dataclass
class CellStats:
    """One test cell across the class: pass rate (0..1), discrimination (-1..1), flags."""

    column: str
    checks: str
    hidden: bool
    pass_rate: float
    discrimination: float | None
    flags: list[str]


def stats_per_test(
    rows: Sequence[Outcome], tests: dict[str, float], about: dict[str, tuple[str, bool]]
) -> list[CellStats]:
    """Each test's pass rate and discrimination over ``rows``.

    about: ``{test column: (what it checks, hidden?)}``. Discrimination is the
    correlation between passing the test and the score on everything else.
    """
    passed = {test: array("d") for test in tests}  # 1.0 or 0.0 per student
    rest = {test: array("d") for test in tests}  # the score on everything else
    for row in rows:  # one pass: the rows may be read from disk
        score = row.score
        for test, possible in tests.items():
            earned = row.points.get(test) or 0
            passed[test].append(1.0 if earned >= possible else 0.0)
            rest[test].append(score - earned)
    n = len(rows)
    found = []
    for test in tests:
        rate = sum(passed[test]) / n if n else 0.0
        r = correlation(passed[test], rest[test])
        flags = []
        if n >= MIN_FOR_FLAGS:
            if rate >= FLAG_EASY:
                flags.append("almost everyone passes")
            elif rate <= FLAG_HARD:
                flags.append("almost everyone fails")
            if r is not None and r < FLAG_INVERTED:
                flags.append("strong students fail it more than weak ones")
        checks, hidden = about.get(test, ("", False))
        found.append(CellStats(test, checks, hidden, rate, r, flags))
    return found


@dataclass
class AnswerStats:
    """One answer across the class: mean points and share with full marks (0..1).

    For a written answer both are over the students a TA has graded (None when
    none has been yet); ``awaiting`` counts the others.
    """

    answer: str
    mean: float | None
    possible: float
    full: float | None
    awaiting: int = 0


def stats_per_answer(
    rows: Sequence[Outcome], groups: dict[str, list[str]], possible: dict[str, float]
) -> list[AnswerStats]:
    """Each answer's :class:`AnswerStats` over ``rows``.

    groups: ``{answer: [its columns]}`` (its tests, or its own manual column).
    A column holding None in a row is an answer no TA has graded yet.
    """
    top = {answer: sum(possible[c] for c in cols) for answer, cols in groups.items()}
    total = dict.fromkeys(groups, 0.0)
    full = dict.fromkeys(groups, 0)
    graded = dict.fromkeys(groups, 0)
    awaiting = dict.fromkeys(groups, 0)
    for row in rows:  # one pass: the rows may be read from disk
        for answer, cols in groups.items():
            if any(row.points.get(c, 0) is None for c in cols):
                awaiting[answer] += 1
                continue
            earned = sum(row.points.get(c) or 0 for c in cols)
            graded[answer] += 1
            total[answer] += earned
            full[answer] += earned >= top[answer]
    return [
        AnswerStats(
            answer,
            total[answer] / graded[answer] if graded[answer] else None,
            top[answer],
            full[answer] / graded[answer] if graded[answer] else None,
            awaiting[answer],
        )
        for answer in groups
    ]


def answer_columns(notebooks: dict[str, Any], columns: Columns) -> dict[str, list[str]]:
    """``{answer id: its graded columns}``: its tests, or itself if graded by hand."""
    groups: dict[str, list[str]] = {}
    for name, nb in notebooks.items():
        ids = [notebook.grade_id(c) for c in nb.cells if notebook.is_answer(c)]
        for cell in nb.cells:
            if not notebook.is_graded(cell):
                continue
            gid = notebook.grade_id(cell)
            column = columns.of[(name, gid)]
            owner = gid if notebook.is_answer(cell) else notebook.answer_of(gid, ids)
            label = owner or "(no answer)"
            if len(notebooks) > 1:
                label = f"{name}: {label}"
            groups.setdefault(label, []).append(column)
    return groups


def descriptions_of_tests(
    notebooks: dict[str, Any], columns: Columns, hidden_tests: str = HIDDEN_TESTS
) -> dict[str, tuple[str, bool]]:
    """``{test column: (what it checks, whether it is hidden from students)}``.

    hidden_tests: the line that opens a cell's hidden tests (the course's
    :attr:`~autograder.pipeline.course.assignment.Assignment.hidden_tests`).
    """
    return {
        columns.of[(name, notebook.grade_id(c))]: (
            notebook.what_it_checks(c.source),
            hidden_tests in c.source,
        )
        for name, nb in notebooks.items()
        for c in nb.cells
        if notebook.is_test(c)
    }


# ------------------------------------------------------------------ the page
