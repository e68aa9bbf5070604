"""One submission as a worker graded it: the data that crosses from a worker to the main process.

A :class:`Graded` is plain data (picklable, for a local pool or Dask): the main
process records it (:class:`~.recorder.Recorder`) and reads the student's
:class:`~.outcome.Outcome` back from the gradebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autograder.pipeline.errors import Status
from autograder.pipeline.results.rows import AutoGrades


@dataclass
class Graded:
    """One submission as a worker graded it: what the main process records.

    points, messages: keyed by ``grades.csv`` column
    (:class:`~autograder.pipeline.course.notebook.Columns`);
    notebooks: ``{notebook file name: executed notebook as JSON, or None}``;
    once the worker has rendered the page, only what the gradebook reads of it
    (:func:`~autograder.pipeline.course.notebook.for_gradebook`).
    texts: ``{notebook file name: the executed notebook, serialized}``, written
    as they are by the main process (a notebook without one is serialized there).
    auto_grades: ``{notebook file name: what SaveAutoGrades records of it}``
    for each notebook graded, decided by the worker.
    """

    student_id: str
    sha256: str
    status: Status
    detail: str
    points: dict[str, float | None]
    messages: dict[str, str]
    notebooks: dict[str, Any]
    unprotected: list[str] = field(default_factory=list)
    feedback: str | None = None  # the feedback page, HTML
    peak_kib: int = 0  # the worker's peak resident memory so far, KiB
    not_attempted: list[str] = field(default_factory=list)  # answers left as stubs
    texts: dict[str, str] = field(default_factory=dict)
    auto_grades: dict[str, AutoGrades] = field(default_factory=dict)
