"""Points from an executed notebook, exactly as ``nbgrader autograde`` gives them.

The executed notebook goes through the post-execution preprocessors nbgrader's
``Autograde`` runs between ``Execute`` and ``SaveAutoGrades`` as the course
configures them (by default ignored stderr patterns, cleared metadata, output
limits), then every graded cell is scored by nbgrader's own ``determine_grade``.
"""

from __future__ import annotations

from typing import Any

from nbgrader.utils import determine_grade
from traitlets.config import Config

from autograder.pipeline.course import notebook


def postprocess(nb: Any, steps: list[type], config: Config) -> Any:
    """The executed notebook after nbgrader's post-execution ``steps``."""
    resources: dict[str, Any] = {}
    for preprocessor in steps:
        # Called, not .preprocess()d: a preprocessor that is not enabled (nbconvert's
        # ClearMetadataPreprocessor, by default) does nothing, as in stock nbgrader.
        nb, resources = preprocessor(config=config)(nb, resources)
    return nb


def points(nb: Any) -> dict[str, float | None]:
    """``{grade_id: points}`` for every graded cell; None where a TA must grade by hand."""
    return {
        notebook.grade_id(cell): determine_grade(cell)[0]
        for cell in nb.cells
        if notebook.nbgrader_meta(cell).get("grade")
    }


def messages(nb: Any) -> dict[str, str]:
    """``{grade_id: "ErrorName: message"}`` for each failing test cell."""
    found = {}
    for cell in nb.cells:
        if notebook.is_test(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    found[notebook.grade_id(cell)] = f"{output.ename}: {output.evalue}"
                    break
    return found
