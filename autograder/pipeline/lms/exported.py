"""What each LMS file an export wrote held, kept for ``status`` to hold against the gradebook.

An export (:mod:`~autograder.pipeline.lms.canvas`, :mod:`~autograder.pipeline.lms.moodle`)
writes a file the TA uploads; a TA's grade or a regrade after it leaves that
file behind the gradebook. Each export records here, per LMS, the file it
wrote, when, and each student's total in it (in the course's points, before
any scaling to the LMS's maximum), in ``.autograder/<assignment>.lms.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.files import write_atomic
from autograder.pipeline.results.store import LEDGER


@dataclass(frozen=True)
class LmsFile:
    """One LMS file as written: where, when (UTC), ``{student_id: total}``, and the column it
    filled ("" where the LMS has no choice of column)."""

    kind: str
    file: str
    when: str
    totals: dict[str, float]
    column: str = ""


def path(assignment: Assignment) -> Path:
    """The course's record of the LMS files written for ``assignment``."""
    return assignment.root / LEDGER / f"{assignment.id}.lms.json"


def read(assignment: Assignment) -> dict[str, LmsFile]:
    """``{LMS: LmsFile}`` of the last file each LMS's export wrote (empty if none; a record
    that cannot be read counts as none)."""
    try:
        data = json.loads(path(assignment).read_text())
        return {kind: LmsFile(kind, **entry) for kind, entry in data.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def record(
    assignment: Assignment, kind: str, file: Path, totals: dict[str, float], column: str = ""
) -> None:
    """Keep what ``kind``'s export just wrote into ``file`` (into ``column``, for Canvas: the
    next export fills the same one unless told another)."""
    found = {
        k: {"file": w.file, "when": w.when, "totals": w.totals, "column": w.column}
        for k, w in read(assignment).items()
    }
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    found[kind] = {
        "file": str(Path(file).resolve()),
        "when": when,
        "totals": totals,
        "column": column,
    }
    write_atomic(path(assignment), json.dumps(found, indent=1, sort_keys=True))
