"""What a grading run keeps on disk, per student: the rerun state, and the outcomes.

``DIR/.state/<student>.json`` holds a student's :class:`~.outcome.Outcome`
(points, status, messages, a TA's comments, the late penalty: what the
gradebook held when it was last recorded) and the content it was graded from. A rerun
skips a student whose content is unchanged. The end of a run reads the outcomes
back one at a time (:class:`StoredOutcomes`) for the CSV, the summary and the class
report, so the main process keeps no student's outcome in memory: one is about
6 KB (3 MB for 500 students, 60 MB for 10,000), and kept outcomes were what made
its memory grow with the class.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, overload

from autograder.pipeline import locks
from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.files import write_atomic
from autograder.pipeline.results.outcome import Outcome


@contextlib.contextmanager
def exclusive(path: Path, what: str, wait: bool = True) -> Iterator[None]:
    """Hold a class folder's lock (``path``) for the block; a second run waits for it, and
    says so. what: the folder, as the waiting run names it.

    wait: False raises :class:`~autograder.pipeline.locks.Busy` at once instead of waiting.
    """
    waiting = f"waiting for another grading run on {what} to finish ({{who}})"
    with locks.held(path, "a grading run", wait, waiting):
        yield


NOT_FINISHED = ""  #: the rerun key of an outcome a rerun must grade again (a grader error)


def rerun_key(sha256: str, settings: str) -> str:
    """What a student's outcome was graded from: their files' content and the run's settings.

    A rerun skips the student only when both are unchanged.
    """
    return f"{sha256}:{settings}"


@dataclass(frozen=True)
class ClassFolder:
    """A grading run's output folder (``grade --out``), and where each of its files goes.

    It holds exactly one class: ``grades.csv``, one feedback page per student,
    the class report, the rerun state, and (for a dry run) the graded notebooks;
    while a run lasts, also its :attr:`scratch` folder.
    """

    root: Path
    DEFAULT: ClassVar[Path] = Path("grades")  #: where a run writes unless told otherwise

    @property
    def csv(self) -> Path:
        """``grades.csv``: a row per student, a column per graded cell."""
        return self.root / "grades.csv"

    @property
    def feedback(self) -> Path:
        """The folder of feedback pages, ``<student>.html`` each."""
        return self.root / "feedback"

    def page(self, student_id: str) -> Path:
        """One student's feedback page."""
        return self.feedback / f"{student_id}.html"

    @property
    def report(self) -> Path:
        """The class report: what the class got wrong."""
        return self.root / "report.html"

    @property
    def state(self) -> Store:
        """Each student's outcome and what it was graded from (``.state/``)."""
        return Store(self.root)

    @property
    def autograded(self) -> Path:
        """A dry run's graded notebooks (a real run keeps them in the course)."""
        return self.root / "autograded"

    @property
    def lock(self) -> Path:
        """Held while a run writes here."""
        return self.root / ".lock"

    @property
    def scratch(self) -> Path:
        """The running grader's own folder (the workers' copy of the gradebook).

        Under :attr:`lock`, so the next run here replaces one a killed run left.
        """
        return self.root / ".scratch"

    def write_page(self, student_id: str, html: str) -> None:
        """Write one student's feedback page."""
        write_atomic(self.page(student_id), html)

    def write_report(self, html: str) -> None:
        """Write the class report."""
        write_atomic(self.report, html)

    @property
    def attempts_file(self) -> Path:
        """``{student: hand-ins graded on submit}``, as ``serve`` last counted them."""
        return self.root / ".attempts.json"

    def write_attempts(self, attempts: dict[str, int]) -> None:
        """Keep each student's attempts graded on submit, for every run's class report."""
        write_atomic(self.attempts_file, json.dumps(attempts, sort_keys=True))

    def attempts(self) -> dict[str, int]:
        """What :meth:`write_attempts` kept ({} if nothing, or nothing readable)."""
        try:
            kept = json.loads(self.attempts_file.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(kept, dict):
            return {}
        return {str(k): v for k, v in kept.items() if isinstance(v, int)}

    def keep_only(self, student_ids: set[str]) -> list[str]:
        """Remove the pages, saved outcomes and (dry runs') graded notebooks of students not
        in ``student_ids``; their ids.

        The folder holds exactly one class: grading another class into it leaves
        no page of the first behind.
        """
        gone = set()
        for folder, suffix in ((self.feedback, ".html"), (self.state.folder, ".json")):
            if not folder.is_dir():
                continue
            for path in folder.glob(f"*{suffix}"):
                if path.name.removesuffix(suffix) not in student_ids:
                    path.unlink()
                    gone.add(path.name.removesuffix(suffix))
        if self.autograded.is_dir():
            for folder in self.autograded.iterdir():
                if folder.is_dir() and not folder.is_symlink() and folder.name not in student_ids:
                    shutil.rmtree(folder)
                    gone.add(folder.name)
        return sorted(gone)


#: the field of a saved outcome that holds its rerun key: named "sha256" in every file written so
#: far, so it keeps that name (a rerun key begins with the submission's sha256)
KEY_FIELD = "sha256"
#: in the course folder: what the gradebook last recorded of each student, per assignment
LEDGER = ".autograder"


def ledger(assignment: Assignment) -> Store:
    """What the course's gradebook last recorded of each student of ``assignment``.

    Each with the rerun key it was graded from
    (:data:`~autograder.pipeline.results.store.NOT_FINISHED`: a grade to be redone).
    """
    return Store(assignment.root / LEDGER, assignment.id)


class Store:
    """``DIR/<folder>/<student>.json``: each student's outcome and what it was graded from."""

    def __init__(self, out: Path, folder: str = ".state") -> None:
        self.folder = Path(out) / folder

    def load(self, student_id: str) -> dict[str, Any] | None:
        """What was saved for ``student_id`` (``{KEY_FIELD: its rerun key, "row": {...}}``),
        or None."""
        path = self.folder / f"{student_id}.json"
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return saved if isinstance(saved, dict) else None

    def key(self, student_id: str) -> str | None:
        """The rerun key ``student_id``'s outcome was saved with (:func:`rerun_key`, or
        :data:`~autograder.pipeline.results.store.NOT_FINISHED`), or None."""
        key = (self.load(student_id) or {}).get(KEY_FIELD)
        return key if isinstance(key, str) else None

    def outcome(self, student_id: str) -> Outcome | None:
        """The outcome saved for ``student_id``, or None."""
        saved = self.load(student_id)
        try:
            return Outcome(**saved["row"]) if saved else None
        except (KeyError, TypeError):
            return None

    def student_ids(self) -> list[str]:
        """Every student with a saved outcome, sorted."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name.removesuffix(".json") for p in self.folder.glob("*.json"))

    def save(self, student_id: str, key: str, outcome: Outcome) -> None:
        """Keep a student's outcome.

        key: the rerun key it was graded from (:func:`rerun_key`;
        :data:`~autograder.pipeline.results.store.NOT_FINISHED` for one a rerun must not skip).
        """
        write_atomic(
            self.folder / f"{student_id}.json",
            json.dumps({KEY_FIELD: key, "row": outcome.as_dict()}, sort_keys=True),
        )


class StoredOutcomes(Sequence[Outcome]):
    """The outcomes of ``student_ids``, in that order, read from ``state`` when asked for.

    Only the ids live in memory; each pass over them reads them from disk
    one at a time.
    """

    def __init__(self, state: Store, student_ids: list[str]) -> None:
        self.state, self.ids = state, student_ids

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Outcome: ...

    @overload
    def __getitem__(self, index: slice) -> list[Outcome]: ...

    def __getitem__(self, index: int | slice) -> Outcome | list[Outcome]:
        if isinstance(index, slice):
            return [self._load(i) for i in self.ids[index]]
        return self._load(self.ids[index])

    def __iter__(self) -> Iterator[Outcome]:
        for student_id in self.ids:
            yield self._load(student_id)

    def _load(self, student_id: str) -> Outcome:
        outcome = self.state.outcome(student_id)
        if outcome is None:
            raise OSError(f"the grading state of {student_id} in {self.state.folder} is gone")
        return outcome
