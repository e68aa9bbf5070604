"""``DIR/report.html``: what the class got wrong, for the instructor, on one page.

Written by every ``grade`` run from the rows it wrote to ``grades.csv``, read
back from disk (so each statistic is gathered in one pass over them). The
page is self-contained (the histogram is inline SVG, no script, no link out
but to the students' feedback pages beside it), so it opens offline and can be
mailed. It shows:

- the score distribution and the statuses;
- per answer: mean points and the share of students with full marks;
- per test cell: pass rate and discrimination (the correlation between passing
  it and the rest of the score), with the tests worth a second look flagged;
- the class's mistakes, grouped: failing tests' messages with numbers, shapes
  and quoted names normalised (:func:`mistake_key`), each group with its
  students and the tests it hits, largest first.
"""

from __future__ import annotations

import html
import math
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import notebook
from .notebook import Columns
from .results import Outcome

FLAG_EASY = 0.95  # pass rate at or above: almost everyone passes
FLAG_HARD = 0.05  # pass rate at or below: almost everyone fails
FLAG_INVERTED = -0.1  # discrimination below: strong students fail it more than weak ones
MIN_FOR_FLAGS = 5  # students needed before a flag means anything
MAX_KEY = 240  # characters of a normalised message kept as its group's key
MAX_MESSAGE = 4 * MAX_KEY  # characters of a message read to make its key


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


def group_mistakes(
    rows: Sequence[Outcome], tests: dict[str, float], owners: dict[str, str]
) -> list[Mistake]:
    """The failing tests of ``rows`` grouped by answer and :func:`mistake_key`, largest first.

    tests: ``{test column: points possible}``; owners: ``{test column: the answer
    it grades}``. Grouping within an answer keeps apart what one message can
    mean in two places (wrong values of the shares, wrong values of the glue).
    A failing test without a message is grouped as "(no message)".
    """
    groups: dict[tuple[str, str], Mistake] = {}
    for row in rows:
        for test, possible in tests.items():
            earned = row.points.get(test)
            if earned is None or earned >= possible:
                continue
            message = str(row.messages.get(test, ""))
            answer, key = owners.get(test, ""), mistake_key(message)
            group = groups.setdefault((answer, key), Mistake(answer, key, message))
            group.students.add(row.student_id)
            group.tests[test] = group.tests.get(test, 0) + 1
    return sorted(groups.values(), key=lambda g: (-len(g.students), -sum(g.tests.values()), g.key))


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


def stats_per_answer(
    rows: Sequence[Outcome], groups: dict[str, list[str]], possible: dict[str, float]
) -> list[tuple[str, float, float, float]]:
    """``(answer, mean points, points possible, share with full marks)`` per answer.

    groups: ``{answer: [its columns]}`` (its tests, or its own manual column).
    A manual answer not graded yet counts 0, as in the gradebook.
    """
    top = {answer: sum(possible[c] for c in cols) for answer, cols in groups.items()}
    total = dict.fromkeys(groups, 0.0)
    full = dict.fromkeys(groups, 0)
    n = 0
    for row in rows:  # one pass: the rows may be read from disk
        n += 1
        for answer, cols in groups.items():
            earned = sum(row.points.get(c) or 0 for c in cols)
            total[answer] += earned
            full[answer] += earned >= top[answer]
    return [
        (answer, total[answer] / n if n else 0.0, top[answer], full[answer] / n if n else 0.0)
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
    notebooks: dict[str, Any], columns: Columns
) -> dict[str, tuple[str, bool]]:
    """``{test column: (what it checks, whether it is hidden from students)}``."""
    return {
        columns.of[(name, notebook.grade_id(c))]: (
            notebook.what_it_checks(c.source),
            "BEGIN HIDDEN TESTS" in c.source,
        )
        for name, nb in notebooks.items()
        for c in nb.cells
        if notebook.is_test(c)
    }


# ------------------------------------------------------------------ the page


def histogram_svg(scores: Sequence[float], max_score: float) -> str:
    """An inline SVG of the score distribution: one bar per point, counts on the left.

    Drawn by hand rather than with matplotlib: importing matplotlib would cost
    every grading run more than half a second, for eight kinds of element.
    """
    top = max(1, math.ceil(max_score))
    counts = [0] * (top + 1)
    for score in scores:
        counts[min(top, max(0, math.floor(score)))] += 1
    tallest = max(1, max(counts))
    width, height, left, bottom, top_pad = 760, 240, 44, 40, 12
    bar = (width - left - 10) / (top + 1)
    plot = height - bottom - top_pad
    parts = [
        f'<svg id="histogram" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="100%" style="max-width:{width}px">',
        f"<title>Scores of {len(scores)} students, 0 to {max_score:g}</title>",
        f'<line x1="{left}" y1="{top_pad + plot}" x2="{width - 10}" y2="{top_pad + plot}" '
        'stroke="#444"/>',
        f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{top_pad + plot}" stroke="#444"/>',
    ]
    for tick in sorted({0, tallest // 2, tallest}):
        y = top_pad + plot - plot * tick / tallest
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="12">{tick}</text>'
        )
    for point, count in enumerate(counts):
        x = left + point * bar
        if count:
            h = plot * count / tallest
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{top_pad + plot - h:.1f}" width="{bar - 2:.1f}" '
                f'height="{h:.1f}" fill="#3b6ea5"><title>{point}: {count} student(s)</title></rect>'
            )
        if point % 5 == 0 or point == top:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{top_pad + plot + 16}" text-anchor="middle" '
                f'font-size="12">{point}</text>'
            )
    parts.append(
        f'<text x="{left + (width - left) / 2:.1f}" y="{height - 4}" text-anchor="middle" '
        f'font-size="13">score (out of {max_score:g}); bar height: students</text></svg>'
    )
    return "".join(parts)


def _e(text: Any) -> str:
    return html.escape(str(text))


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _students(ids: Sequence[str], shown: int = 40) -> str:
    links = [f'<a href="feedback/{_e(s)}.html">{_e(s)}</a>' for s in sorted(ids)]
    if len(links) <= shown:
        return ", ".join(links)
    return (
        ", ".join(links[:shown])
        + f" <details><summary>and {len(links) - shown} more</summary>{', '.join(links[shown:])}"
        + "</details>"
    )


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em;
  color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.5em; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
th { background: #f4f4f4; }
col.test { width: 26%; } col.num { width: 7.5em; } col.flags { width: 17%; }
td.num, th.num { text-align: right; width: 8em; }
.flag { color: #b52d25; font-weight: bold; }
.hidden-test { color: #666; font-size: 0.9em; }
.mistake { border: 1px solid #ddd; border-left: 4px solid #b52d25; padding: 0.5em 0.8em;
  margin: 0.8em 0; }
.mistake .key { font-family: monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
.mistake .example { color: #555; font-family: monospace; font-size: 0.9em;
  white-space: pre-wrap; overflow-wrap: anywhere; }
img { max-width: 100%; height: auto; }
"""


def render(
    title: str,
    rows: Sequence[Outcome],
    columns: Columns,
    notebooks: dict[str, Any],
) -> str:
    """The report page for ``rows`` of an assignment whose source notebooks are ``notebooks``."""
    tests = columns.tests()
    possible = columns.possible
    max_score = sum(possible.values())
    about = descriptions_of_tests(notebooks, columns)
    n = len(rows)
    scores = array("d")
    statuses: dict[str, int] = {}
    for row in rows:  # the rows may be read from disk: a few passes, each gathering much
        scores.append(row.score)
        statuses[row.status] = statuses.get(row.status, 0) + 1
    mean = sum(scores) / n if n else 0.0
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>{n} student(s); mean score <b>{mean:.1f} / {max_score:g}</b>.</p>",
        histogram_svg(scores, max_score),
        "<h2 id='statuses'>Statuses</h2><table><tr><th>status</th><th class='num'>students</th>"
        "</tr>",
        *(
            f"<tr><td>{_e(s)}</td><td class='num'>{c}</td></tr>"
            for s, c in sorted(statuses.items(), key=lambda i: (i[0] != "ok", i[0]))
        ),
        "</table>",
        "<h2 id='answers'>Per answer</h2><table><tr><th>answer</th><th class='num'>mean</th>"
        "<th class='num'>possible</th><th class='num'>full marks</th></tr>",
    ]
    for answer, mean_points, top, full in stats_per_answer(
        rows, answer_columns(notebooks, columns), possible
    ):
        parts.append(
            f"<tr class='answer' data-answer='{_e(answer)}'><td><code>{_e(answer)}</code></td>"
            f"<td class='num'>{mean_points:.2f}</td><td class='num'>{top:g}</td>"
            f"<td class='num'>{_pct(full)}</td></tr>"
        )
    parts.append(
        "</table><h2 id='tests'>Per test cell</h2><p>Discrimination is the correlation "
        "between passing the test and the score on everything else: near 0, the test tells "
        "strong and weak students apart no better than chance; below 0, strong students fail "
        "it more often.</p><table><colgroup><col class='test'><col><col class='num'>"
        "<col class='num'><col class='flags'></colgroup><tr><th>test</th><th>what it checks</th>"
        "<th class='num'>pass rate</th><th class='num'>discrimination</th><th>look again</th></tr>"
    )
    for stat in stats_per_test(rows, tests, about):
        r = "–" if stat.discrimination is None else f"{stat.discrimination:+.2f}"
        hidden = " <span class='hidden-test'>(hidden)</span>" if stat.hidden else ""
        parts.append(
            f"<tr class='test' data-test='{_e(stat.column)}'><td><code>{_e(stat.column)}</code>"
            f"{hidden}</td><td>{_e(stat.checks)}</td><td class='num'>{_pct(stat.pass_rate)}</td>"
            f"<td class='num'>{r}</td><td class='flag'>{_e('; '.join(stat.flags))}</td></tr>"
        )
    parts.append("</table><h2 id='mistakes'>The class's mistakes, grouped</h2>")
    groups = answer_columns(notebooks, columns)
    owners = {column: answer for answer, cols in groups.items() for column in cols}
    mistakes = group_mistakes(rows, tests, owners)
    if not mistakes:
        parts.append("<p>No test failed.</p>")
    parts.append(
        "<p>Failing tests grouped by their message, with numbers, shapes and names left "
        "out; largest group first.</p>"
        if mistakes
        else ""
    )
    for group in mistakes:
        hits = ", ".join(
            f"<code>{_e(t)}</code> ({c})"
            for t, c in sorted(group.tests.items(), key=lambda i: -i[1])
        )
        parts.append(
            f"<div class='mistake' data-answer='{_e(group.answer)}' "
            f"data-students='{_e(' '.join(sorted(group.students)))}'>"
            f"<div><b>{len(group.students)} student(s)</b> in <code>{_e(group.answer)}</code>: "
            f"<span class='key'>{_e(group.key)}</span></div>"
            f"<div class='example'>for example: {_e(group.example)}</div>"
            f"<div>tests: {hits}</div><div class='students'>students: "
            f"{_students(sorted(group.students))}</div></div>"
        )
    parts.append("</body></html>")
    return "\n".join(parts)
