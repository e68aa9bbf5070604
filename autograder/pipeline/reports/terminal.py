"""What the TA reads in the terminal at the end of a run: the table and the summary.

Both are views of the students' :class:`~.results.Outcome`, read back one at a
time; ``grades.csv`` is written by :mod:`.results`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from autograder.pipeline.results import Outcome


def width(text: str) -> int:
    """Columns ``text`` takes in a terminal: 2 for a wide (CJK) character, 0 for a combining
    mark, 1 for any other."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def aligned(rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset()) -> list[str]:
    """``rows`` (the header first) as lines of columns two spaces apart, padded by display
    width; columns in ``right`` are right-aligned, the last is not padded."""
    widths = [max(width(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = []
        for i, text in enumerate(row):
            pad = " " * (widths[i] - width(text)) if i < len(row) - 1 or i in right else ""
            cells.append(pad + text if i in right else text + pad)
        lines.append("  ".join(cells).rstrip())
    return lines


def table(rows: Iterable[Outcome]) -> str:
    """A plain-text table, in the order given: one line per student, score and status.

    The score is the total after any late penalty, which the status names.
    """
    lines: list[tuple[str, str, str]] = []
    for row in rows:
        score = f"{row.score:g} / {row.max_score:g}"
        status = row.status if row.status == "ok" else f"{row.status}: {row.detail}"
        if row.late_penalty:
            status += f" (late: {row.raw_score:g} less a penalty of {row.late_penalty:g})"
        lines.append((row.student_id, f"{score:>11}", status))
    return "\n".join(aligned([("student", f"{'score':>11}", "status"), *lines], frozenset({1})))


def summary(rows: Iterable[Outcome], max_points: dict[str, float]) -> str:
    """The closing summary: counts, mean score, statuses, most-failed tests (one pass).

    max_points: ``{grade_id: points}`` of the autograded test cells.
    """
    graded, total, max_score = 0, 0.0, 0.0
    statuses: dict[str, int] = {}
    failed: dict[str, int] = {}
    for row in rows:
        graded += 1
        total += row.score
        max_score = row.max_score
        if row.status != "ok":
            statuses[row.status] = statuses.get(row.status, 0) + 1
        for grade_id, possible in max_points.items():
            earned = row.points.get(grade_id)
            if earned is not None and earned < possible:
                failed[grade_id] = failed.get(grade_id, 0) + 1
    lines = [f"graded {graded} submission(s)"]
    if graded:
        lines.append(f"mean score {total / graded:.1f} / {max_score:g}")
    for status, count in sorted(statuses.items()):
        lines.append(f"  {count} with status {status}")
    if failed:
        lines.append("most-failed tests:")
        top = sorted(failed.items(), key=lambda item: (-item[1], item[0]))[:5]
        for grade_id, count in top:
            lines.append(f"  {grade_id:<36} failed by {count} of {graded}")
    return "\n".join(lines)
