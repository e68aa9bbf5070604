"""Grading results: one typed outcome per student, and every place it is kept or shown.

The course gradebook is the one truth for points. A grading run records each
student's executed notebooks and grades there (:class:`Recorder`, with
nbgrader's own steps: late penalties included), then takes what the
gradebook holds (:func:`from_gradebook`: a TA's grades and overrides,
comments, the late penalty; :func:`from_written` for a student it did not
hold before) as an :class:`Outcome`. That outcome, and nothing
computed beside it, is what ``grades.csv`` (:func:`write_csv`), the feedback
page, the class report and the summary show, and what the rerun state
(:class:`Store`) keeps. Only this package writes grading results:
``tests/test_layers.py`` checks it.
"""

from autograder.pipeline.results.graded import Graded
from autograder.pipeline.results.outcome import (
    HEADER,
    Outcome,
    after_penalty,
    cell_text,
    from_gradebook,
    from_grading,
    from_written,
    read_csv,
    write_csv,
)
from autograder.pipeline.results.recorder import Recorder
from autograder.pipeline.results.store import (
    NOT_FINISHED,
    ClassFolder,
    Store,
    StoredOutcomes,
    exclusive,
    ledger,
    rerun_key,
)

__all__ = [
    "HEADER",
    "NOT_FINISHED",
    "ClassFolder",
    "Graded",
    "Outcome",
    "Recorder",
    "Store",
    "after_penalty",
    "StoredOutcomes",
    "cell_text",
    "exclusive",
    "from_grading",
    "from_gradebook",
    "from_written",
    "ledger",
    "read_csv",
    "rerun_key",
    "write_csv",
]
