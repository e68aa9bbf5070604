"""nbgrader's converters' steps, as the course configures them, made to run on an open
gradebook and in bulk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde, GenerateFeedback
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    Execute,
    GetGrades,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from traitlets.config import Config
from traitlets.utils.importstring import import_item

from autograder.pipeline.course.internals.cells import (
    CheckCellMetadataOnce,
    ClearHiddenTestsOnce,
    OverwriteCellsFromMemory,
    OverwriteKernelspecFromMemory,
)
from autograder.pipeline.course.internals.database import AssignLatePenaltiesTo, SaveAutoGradesTo
from autograder.pipeline.errors import UserError


def _classes(items: list[Any]) -> list[type]:
    return [import_item(item) if isinstance(item, str) else item for item in items]


@dataclass
class AutogradeSteps:
    """nbgrader's ``Autograde`` preprocessors as the course configures them, in three groups.

    sanitize: run before execution, in the worker; after_execute: the steps
    between ``Execute`` and ``SaveAutoGrades``, with the metadata checks
    configured after it (which read the notebook and nothing else), in the
    worker; after_save: ``SaveAutoGrades`` and every other step after it, in
    the main process, which alone holds the gradebook.
    """

    sanitize: list[type]
    after_execute: list[type]
    after_save: list[type]

    @property
    def stock_saving(self) -> bool:
        """Does the gradebook get what stock's own ``SaveAutoGrades`` and, if configured,
        ``AssignLatePenalties`` write, and nothing else? (Then it can be written in bulk.)"""
        rest = [cls for cls in self.after_save if cls is not AssignLatePenalties]
        return rest == [SaveAutoGrades] and self.after_save.count(AssignLatePenalties) <= 1


def autograde_steps(config: Config) -> AutogradeSteps:
    """The configured autograde steps, with nbgrader's metadata check made faster."""
    converter = Autograde(config=config)
    sanitize = [_faster(c) for c in _classes(list(converter.sanitize_preprocessors))]
    steps = [_faster(c) for c in _classes(list(converter.autograde_preprocessors))]
    if Execute not in steps or SaveAutoGrades not in steps:
        raise UserError("Autograde.autograde_preprocessors must keep Execute and SaveAutoGrades")
    run, save = steps.index(Execute), steps.index(SaveAutoGrades)
    checks = [cls for cls in steps[save:] if issubclass(cls, CheckCellMetadata)]
    after_save = [cls for cls in steps[save:] if cls not in checks]
    return AutogradeSteps(sanitize, steps[run + 1 : save] + checks, after_save)


def feedback_steps(config: Config) -> list[type]:
    """The configured ``GenerateFeedback`` preprocessors (``GetGrades`` reads the gradebook)."""
    steps = _classes(list(GenerateFeedback(config=config).preprocessors))
    return [ClearHiddenTestsOnce if cls is ClearHiddenTests else cls for cls in steps]


def _faster(cls: type) -> type:
    faster = {
        OverwriteCells: OverwriteCellsFromMemory,
        OverwriteKernelspec: OverwriteKernelspecFromMemory,
        CheckCellMetadata: CheckCellMetadataOnce,
    }
    return faster.get(cls, cls)


def gradebook_step(cls: type, gradebook: Gradebook, config: Config) -> Preprocessor:
    """One after-save step, writing through ``gradebook`` where nbgrader would open its own."""
    if issubclass(cls, SaveAutoGrades):
        return SaveAutoGradesTo(gradebook, config=config)
    if issubclass(cls, AssignLatePenalties):
        return AssignLatePenaltiesTo(gradebook, config=config)
    return cls(config=config)


def late_penalty_step(steps: list[type], gradebook: Gradebook, config: Config) -> Any:
    """The course's late-penalty step among the after-save ``steps``, through ``gradebook``.

    None when the course assigns no late penalties.
    """
    for cls in steps:
        if issubclass(cls, AssignLatePenalties):
            return AssignLatePenaltiesTo(gradebook, config=config)
    return None


GRADES_FROM_GRADEBOOK = GetGrades
