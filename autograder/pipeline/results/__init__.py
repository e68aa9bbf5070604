"""Grading results: one typed outcome per student, and every place it is kept or shown.

The course gradebook is the one truth for points. A grading run records each
student's executed notebooks and grades there (:class:`Recorder`, with
nbgrader's own steps: late penalties included), then reads back what the
gradebook holds (:func:`from_gradebook`: a TA's grades and overrides,
comments, the late penalty) as an :class:`Outcome`. That outcome, and nothing
computed beside it, is what ``grades.csv`` (:func:`write_csv`), the feedback
page, the class report and the summary show, and what the rerun state
(:class:`Store`) keeps. Only this package writes grading results:
``tests/test_layers.py`` checks it.
"""

from .outcome import (
    HEADER,
    Outcome,
    after_penalty,
    cell_text,
    from_gradebook,
    read_csv,
    write_csv,
)
from .recorder import Recorder, gradebook_has_assignment, write_atomic
from .store import (
    NOT_FINISHED,
    Store,
    StoredRows,
    exclusive,
    keep_only,
    page_path,
    write_page,
    write_report,
)

__all__ = [
    "HEADER",
    "NOT_FINISHED",
    "Outcome",
    "Recorder",
    "Store",
    "after_penalty",
    "StoredRows",
    "cell_text",
    "exclusive",
    "from_gradebook",
    "gradebook_has_assignment",
    "keep_only",
    "page_path",
    "read_csv",
    "write_atomic",
    "write_csv",
    "write_page",
    "write_report",
]
