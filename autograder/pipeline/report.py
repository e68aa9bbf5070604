"""What the TA gets: ``grades.csv`` and the summary printed at the end.

The CSV's columns are fixed by the course contract:
``student_id,score,max_score,status`` and then one column per graded cell
``grade_id`` holding that cell's points (empty when not graded yet, as for a
manually graded answer before a TA has marked it).
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HEADER = ("student_id", "score", "max_score", "status")


@dataclass
class Row:
    """One student's line of ``grades.csv``.

    points: ``{grade_id: points or None}``; None means not graded (yet).
    status: ``ok``, or one word saying why grading was incomplete.
    detail: a sentence for the TA and the feedback page when status is not ok.
    """

    student_id: str
    points: dict
    max_score: float
    status: str = "ok"
    detail: str = ""
    messages: dict = field(default_factory=dict)
    comments: dict = field(default_factory=dict)  # a TA's comments on written answers

    @property
    def score(self) -> float:
        """Points earned so far; ungraded cells count 0, as in nbgrader's gradebook."""
        return sum(p for p in self.points.values() if p is not None)

    def as_dict(self) -> dict[str, Any]:
        """The row as plain data (what :class:`Row` takes back as keywords)."""
        return asdict(self)


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:g}"


def write_csv(rows: Iterable[Row], grade_ids: list[str], path: Path | str) -> None:
    """Write ``rows``, in the order given, to ``path`` atomically (never half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".grades-", suffix=".csv")
    with os.fdopen(handle, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow([*HEADER, *grade_ids])
        for row in rows:
            writer.writerow(
                [
                    row.student_id,
                    _number(row.score),
                    _number(row.max_score),
                    row.status,
                    *(_number(row.points.get(g)) for g in grade_ids),
                ]
            )
    os.replace(tmp, path)


def read_csv(path: Path | str) -> list[dict[str, str]]:
    """The rows of a ``grades.csv`` as dicts of strings."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def table(rows: Iterable[Row]) -> str:
    """A plain-text table, in the order given: one line per student, score and status."""
    lines = []
    for row in rows:
        score = f"{row.score:g} / {row.max_score:g}"
        status = row.status if row.status == "ok" else f"{row.status}: {row.detail}"
        lines.append((row.student_id, score, status))
    width = max([len("student")] + [len(student) for student, _, _ in lines])
    header = f"{'student':<{width}}  {'score':>11}  status"
    return "\n".join([header] + [f"{s:<{width}}  {c:>11}  {t}" for s, c, t in lines])


def summary(rows: Iterable[Row], max_points: dict[str, float]) -> str:
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
