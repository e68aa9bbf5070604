"""What a grading run keeps on disk, per student: the rerun state, and the rows.

``DIR/.state/<student>.json`` holds a student's row of ``grades.csv`` (points,
status, messages, a TA's comments) and the content it was graded from. A rerun
skips a student whose content is unchanged. The end of a run reads the rows
back one at a time (:class:`StoredRows`) for the CSV, the summary and the class
report, so the main process keeps no student's row in memory: a row is about
6 KB (3 MB for 500 students, 60 MB for 10,000), and kept rows were what made
its memory grow with the class.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from . import record
from .report import Row

NOT_FINISHED = ""  # the content key of a row a rerun must grade again (a grader error)


class State:
    """``DIR/<folder>/<student>.json``: each student's row and what it was graded from."""

    def __init__(self, out: Path, folder: str = ".state") -> None:
        self.folder = Path(out) / folder

    def load(self, student_id: str) -> dict[str, Any] | None:
        """What was saved for ``student_id`` (``{"sha256": key, "row": {...}}``), or None."""
        path = self.folder / f"{student_id}.json"
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return saved if isinstance(saved, dict) else None

    def row(self, student_id: str) -> Row | None:
        """The row saved for ``student_id``, or None."""
        saved = self.load(student_id)
        try:
            return Row(**saved["row"]) if saved else None
        except (KeyError, TypeError):
            return None

    def save(self, student_id: str, sha256: str, row: Row) -> None:
        """Keep a student's row; ``sha256``: the content and settings it was graded from
        (:data:`NOT_FINISHED` for a row a rerun must not skip)."""
        record.write_atomic(
            self.folder / f"{student_id}.json",
            json.dumps({"sha256": sha256, "row": row.as_dict()}, sort_keys=True),
        )


class StoredRows(Sequence[Row]):
    """The rows of ``student_ids``, in that order, read from ``state`` when asked for.

    Only the ids live in memory; each pass over the rows reads them from disk
    one at a time.
    """

    def __init__(self, state: State, student_ids: list[str]) -> None:
        self.state, self.ids = state, student_ids

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...

    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        if isinstance(index, slice):
            return [self._load(i) for i in self.ids[index]]
        return self._load(self.ids[index])

    def __iter__(self) -> Iterator[Row]:
        for student_id in self.ids:
            yield self._load(student_id)

    def _load(self, student_id: str) -> Row:
        row = self.state.row(student_id)
        if row is None:
            raise OSError(f"the grading state of {student_id} in {self.state.folder} is gone")
        return row
