"""Every reach into nbgrader's (and nbconvert's) internals, in one package.

Each item says what it works around and the version it was checked against:
nbgrader 0.9.6, nbconvert 7.17, SQLAlchemy 2.1, alembic 1.20. An upgrade of any
of them touches this package only; the comparisons with stock nbgrader check that
each still behaves as stock does (``tests/lab/pipeline/test_grader.py``, cell by cell
on the whole corpus, and ``tests/engine/test_second_assignment.py``, late penalties too).
One module per part of nbgrader reached into: :mod:`.database` (the gradebook),
:mod:`.steps` (the converters' preprocessors), :mod:`.cells` (cell metadata and the
source's cells), :mod:`.feedback` (the feedback page).

What the grader takes from nbgrader *as configured* (never as a copied list):
the sanitising and autograding preprocessors of ``Autograde`` and the
feedback preprocessors of ``GenerateFeedback`` (:func:`.steps.autograde_steps`,
:func:`.steps.feedback_steps`), so a course that adds a step (late penalties, say)
gets it here too.
"""

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import ClearHiddenTests

from autograder.pipeline.course.internals.cells import (
    CHECKSUM_LENGTH,
    CheckCellMetadataOnce,
    ClearHiddenTestsOnce,
    OverwriteCellsFromMemory,
    OverwriteKernelspecFromMemory,
    RememberingValidator,
    SourceCells,
    _SchemaCheckedOnce,
)
from autograder.pipeline.course.internals.database import (
    AssignLatePenaltiesTo,
    SaveAutoGradesTo,
    alembic_in_process,
    load_dialect,
    newest_revision,
    one_transaction,
    record_assignment,
    submission_cells,
)
from autograder.pipeline.course.internals.feedback import (
    FORMGRADER,
    FeedbackExporter,
    feedback_template,
)
from autograder.pipeline.course.internals.steps import (
    GRADES_FROM_GRADEBOOK,
    AutogradeSteps,
    autograde_steps,
    feedback_steps,
    gradebook_step,
    late_penalty_step,
)

__all__ = [
    "AssignLatePenaltiesTo",
    "AutogradeSteps",
    "CHECKSUM_LENGTH",
    "CSSHTMLHeaderPreprocessor",
    "CheckCellMetadataOnce",
    "ClearHiddenTests",
    "ClearHiddenTestsOnce",
    "FORMGRADER",
    "FeedbackExporter",
    "GRADES_FROM_GRADEBOOK",
    "OverwriteCellsFromMemory",
    "OverwriteKernelspecFromMemory",
    "RememberingValidator",
    "SaveAutoGradesTo",
    "SourceCells",
    "_SchemaCheckedOnce",
    "alembic_in_process",
    "autograde_steps",
    "feedback_steps",
    "feedback_template",
    "gradebook_step",
    "late_penalty_step",
    "load_dialect",
    "newest_revision",
    "one_transaction",
    "record_assignment",
    "submission_cells",
]
