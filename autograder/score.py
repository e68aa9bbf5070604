"""Points from an executed notebook, exactly as ``nbgrader autograde`` gives them.

The executed notebook goes through the same post-processing preprocessors as
in stock nbgrader (ignored stderr patterns, cleared metadata, output limits),
then every graded cell is scored by nbgrader's own ``determine_grade``.
"""

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import IgnorePattern, LimitOutput
from nbgrader.utils import determine_grade

from . import notebook

POSTPROCESSORS = (IgnorePattern, ClearMetadataPreprocessor, LimitOutput)


def postprocess(nb, config):
    """The executed notebook after stock nbgrader's post-execution preprocessors."""
    resources = {}
    for preprocessor in POSTPROCESSORS:
        # Called, not .preprocess()d: a preprocessor that is not enabled (nbconvert's
        # ClearMetadataPreprocessor, by default) does nothing, as in stock nbgrader.
        nb, resources = preprocessor(config=config)(nb, resources)
    return nb


def points(nb):
    """``{grade_id: points}`` for every graded cell; None where a TA must grade by hand."""
    return {
        notebook.grade_id(cell): determine_grade(cell)[0]
        for cell in nb.cells
        if notebook.nbgrader_meta(cell).get("grade")
    }


def messages(nb):
    """``{grade_id: "ErrorName: message"}`` for each failing test cell."""
    found = {}
    for cell in nb.cells:
        if notebook.is_test(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    found[notebook.grade_id(cell)] = f"{output.ename}: {output.evalue}"
                    break
    return found
