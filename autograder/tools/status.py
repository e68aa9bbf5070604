"""``python -m autograder status [STUDENT ...]``: the TA's one place to look before ``--final``.

One row per student, each place a grade is kept or shown read side by side:
the course's gradebook (the one truth), ``grades.csv`` and the feedback page
of the class folder (``--out``), the page ready for nbgrader's exchange, and
each LMS file an export wrote (:mod:`~autograder.pipeline.lms.exported`). A
row flags where they disagree, and what is not final: a written answer
awaiting a TA, a notebook not fully graded. It also says the TA's decisions
it is read with: removals, extensions, hand-in times and late penalties.
Exit status 0 when every place agrees and every grade is final, else 1.
Nothing is changed.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.api import MissingEntry

from autograder.pipeline import results
from autograder.pipeline.course import extensions, removals, students
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import course_url, existing
from autograder.pipeline.files import read_bounded
from autograder.pipeline.lms import exported
from autograder.pipeline.reports import terminal
from autograder.pipeline.results import after_penalty
from autograder.pipeline.settings import class_folder

_log = logging.getLogger(__name__)

#: the total a feedback page states (``Score: <b>41.0 / 45.0</b>``)
PAGE_SCORE = re.compile(rb"Score: <b>([0-9.]+) / ([0-9.]+)</b>")
MAX_PAGE = 16 * 2**20  #: bytes of a feedback page read to find its total


@dataclass
class Held:
    """What the gradebook holds of one student's submission."""

    score: float
    needs_ta: bool
    handed_in: datetime | None
    late_penalty: float
    extension: timedelta | None


@dataclass
class Row:
    """One student, across every place (None: not there)."""

    student_id: str
    gradebook: float | None = None
    csv: float | None = None
    page: float | None = None
    exchange: str = "-"
    lms: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    disagree: list[str] = field(default_factory=list)
    not_final: list[str] = field(default_factory=list)


def _held(assignment: Assignment) -> dict[str, Held]:
    with existing(course_url(assignment)) as gb:
        if gb is None:
            return {}
        try:
            submissions = gb.find_assignment(assignment.id).submissions
        except MissingEntry:
            return {}
        return {
            sub.student.id: Held(
                after_penalty(float(sub.score), float(sub.late_submission_penalty or 0)),
                bool(sub.needs_manual_grade),
                sub.timestamp,
                float(sub.late_submission_penalty or 0),
                sub.extension,
            )
            for sub in submissions
        }


def _page_score(page: Path) -> float | None:
    data = read_bounded(page, MAX_PAGE)
    found = PAGE_SCORE.search(data) if data is not None else None
    return float(found.group(1)) if found else None


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _same(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) < 0.005


def rows(assignment: Assignment, out: results.ClassFolder) -> dict[str, Row]:
    """``{student_id: Row}`` for every student any place holds (see the module)."""
    held = _held(assignment)
    in_csv = {r["student_id"]: r for r in results.read_csv(out.csv)} if out.csv.is_file() else {}
    recorded = results.ledger(assignment)
    removed = removals.recorded(assignment)
    granted = extensions.granted(assignment)
    lms_files = exported.read(assignment)
    ids = set(held) | set(in_csv) | set(removed)
    found: dict[str, Row] = {}
    for sid in sorted(ids):
        row = found[sid] = Row(sid)
        if sid in removed:
            row.notes.append(f"removed {removed[sid].removed:%Y-%m-%d}")
        if sid in held:
            row.gradebook = held[sid].score
            if held[sid].needs_ta:
                row.not_final.append("a written answer awaits a TA")
            when = held[sid].handed_in
            row.notes.append(f"handed in {when:%Y-%m-%d %H:%M}" if when else "no hand-in time")
            if held[sid].late_penalty:
                row.notes.append(f"late penalty {held[sid].late_penalty:g}")
            if held[sid].extension:
                row.notes.append(f"extension {held[sid].extension}")
        elif sid not in removed:
            row.disagree.append("not in the gradebook")
        if sid in granted and not (sid in held and held[sid].extension):
            row.notes.append("extension in extensions.toml")
        status = str(((recorded.load(sid) or {}).get("row") or {}).get("status", ""))
        if sid in held and status and status != "ok":
            row.not_final.append(f"graded {status}")
        if sid in in_csv:
            row.csv = float(in_csv[sid]["score"])
        if out.page(sid).is_file():
            row.page = _page_score(out.page(sid))
        ready = assignment.folder("feedback_directory", sid)
        pages = sorted(ready.glob("*.html")) if ready.is_dir() else []
        if pages:
            mine = out.page(sid).read_bytes() if out.page(sid).is_file() else b""
            row.exchange = "same" if all(p.read_bytes() == mine for p in pages) else "differs"
        for kind, file in sorted(lms_files.items()):
            row.lms[kind] = file.totals.get(sid)
        _compare(row, sid in removed)
    return found


def _compare(row: Row, removed: bool) -> None:
    """Say where ``row``'s places disagree with its gradebook total."""
    if removed:
        for kind, total in row.lms.items():
            if total is not None:
                row.disagree.append(f"removed, but in the {kind} file")
        return
    if row.gradebook is None:
        return
    if row.csv is None:
        row.disagree.append("not in grades.csv")
    elif not _same(row.csv, row.gradebook):
        row.disagree.append(f"grades.csv says {row.csv:g}")
    if row.page is None:
        row.disagree.append("no feedback page")
    elif not _same(row.page, row.gradebook):
        row.disagree.append(f"the page says {row.page:g}")
    if row.exchange == "differs":
        row.disagree.append("the exchange's page is not the class folder's")
    for kind, total in row.lms.items():
        if total is not None and not _same(total, row.gradebook):
            row.disagree.append(f"the {kind} file says {total:g}: export again")


def status(
    student: list[str] | None = None,
    *,
    out: Path | str | None = None,
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Print the course's status, one row per student (or only ``student``); exit status 0
    when every place agrees and every grade is final, else 1.

    out: the class folder (the grade run's ``--out``).
    """
    chosen = find_assignment(course, assignment)
    folder = results.ClassFolder(class_folder(chosen, out))
    found = rows(chosen, folder)
    for sid in student or []:
        students.check(sid, set(found), chosen.id)
    shown = [found[s] for s in (student or sorted(found))]
    kinds = sorted({kind for row in shown for kind in row.lms})
    header = ("student", "gradebook", "grades.csv", "page", "exchange", *kinds, "notes")
    table = [header]
    for row in shown:
        flags = [f"NOT FINAL: {w}" for w in row.not_final] + [
            f"DISAGREE: {d}" for d in row.disagree
        ]
        table.append(
            (
                row.student_id,
                _points(row.gradebook),
                _points(row.csv),
                _points(row.page),
                row.exchange,
                *(_points(row.lms.get(kind)) for kind in kinds),
                "; ".join(flags + row.notes),
            )
        )
    right = frozenset({1, 2, 3, *range(5, 5 + len(kinds))})
    _log.info("\n".join(terminal.aligned(table, right)))
    differ = [r.student_id for r in shown if r.disagree]
    waiting = [r.student_id for r in shown if r.not_final]
    _log.info("")
    if not shown:
        _log.info(f"no student of {chosen.id} in the gradebook or {folder.csv} yet")
        return 0
    if not differ and not waiting:
        _log.info(f"{len(shown)} student(s): every place agrees, every grade is final")
        return 0
    if differ:
        _log.info(f"{len(differ)} student(s) where places disagree: {', '.join(differ)}")
    if waiting:
        _log.info(f"{len(waiting)} grade(s) not final: {', '.join(waiting)}")
    return 1
