"""``DIR/report.html``: what the class got wrong, for the instructor, on one page.

Written by every ``grade`` run from the rows it wrote to ``grades.csv``, read
back from disk (so each statistic is gathered in one pass over them). The
page is self-contained (the histogram is inline SVG, no script, no link out
but to the students' feedback pages beside it), so it opens offline and can be
mailed. It shows:

- the score distribution and the statuses;
- the class's mistakes by cause, each student under the first broken answer of
  a chain, the failures it causes folded beneath; the answers left as stubs
  apart;
- per answer: mean points and the share of students with full marks (a written
  answer over the students a TA has graded, the others "awaiting a TA");
- per test cell: pass rate and discrimination, with the tests worth a second
  look flagged.

The numbers are gathered by :mod:`.class_stats`; this module draws them. The
page is a Jinja template (``templates/class_report/report.html.j2``), escaped
as it is filled.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from autograder.pipeline.course import dependencies
from autograder.pipeline.course.assignment import HIDDEN_TESTS
from autograder.pipeline.course.notebook import Columns
from autograder.pipeline.reports import template_cache
from autograder.pipeline.reports.class_stats import (
    SHOWN_STUDENTS,
    answer_columns,
    descriptions_of_tests,
    group_by_cause,
    stats_per_answer,
    stats_per_test,
)
from autograder.pipeline.results import Outcome


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


TEMPLATES = Path(__file__).parent / "templates" / "class_report"


@functools.cache
def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=template_cache.kept_templates(),
    )
    environment.filters["pct"] = lambda share: "–" if share is None else f"{100 * share:.0f}%"
    return environment.get_template("report.html.j2")


def render(
    title: str,
    rows: Sequence[Outcome],
    columns: Columns,
    notebooks: dict[str, Any],
    hidden_tests: str = HIDDEN_TESTS,
    attempts: dict[str, int] | None = None,
) -> str:
    """The report page for ``rows`` of an assignment whose source notebooks are ``notebooks``.

    hidden_tests: the line that opens a cell's hidden tests, as the course configures it;
    attempts: ``{student: hand-ins graded on submit}`` (``serve``), shown grouped by count.
    """
    tests = columns.tests()
    possible = columns.possible
    about = descriptions_of_tests(notebooks, columns, hidden_tests)
    scores = array("d")
    statuses: dict[str, int] = {}
    for row in rows:  # the rows may be read from disk: a few passes, each gathering much
        scores.append(row.score)
        statuses[row.status] = statuses.get(row.status, 0) + 1
    groups = answer_columns(notebooks, columns)
    owners = {column: answer for answer, cols in groups.items() for column in cols}
    graph: dict[str, set[str]] = {}
    for name, nb in notebooks.items():
        prefix = f"{name}: " if len(notebooks) > 1 else ""
        for answer, used in dependencies.uses(nb).items():
            graph[prefix + answer] = {prefix + u for u in used}
    causes, stubs = group_by_cause(rows, tests, owners, graph)
    n = len(scores)
    return _template().render(
        title=title,
        students=n,
        mean=sum(scores) / n if n else 0.0,
        max_score=sum(possible.values()),
        histogram=Markup(histogram_svg(scores, sum(possible.values()))),
        statuses=sorted(statuses.items(), key=lambda i: (i[0] != "ok", i[0])),
        causes=causes,
        stubs=stubs,
        answers=stats_per_answer(rows, groups, possible),
        tests=stats_per_test(rows, tests, about),
        shown=SHOWN_STUDENTS,
        attempts=_by_count(attempts or {}),
    )


def _by_count(attempts: dict[str, int]) -> list[tuple[int, list[str]]]:
    """``[(attempts, [students])]``, fewest attempts first."""
    grouped: dict[int, list[str]] = {}
    for student, count in attempts.items():
        grouped.setdefault(count, []).append(student)
    return sorted(grouped.items())
