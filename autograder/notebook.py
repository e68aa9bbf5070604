"""Reading and writing the lab notebook's cells by their nbgrader ``grade_id``.

Every tool that puts answers into a notebook (the sample class, the answer
corpus, the grader rebuilding a submission around the source's tests) goes
through these few functions, so cell ids are matched in one way only.
"""

import copy

import nbformat

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def read(path):
    """The notebook at ``path``, as nbformat v4."""
    return nbformat.read(str(path), as_version=4)


def write(nb, path):
    """Write ``nb`` to ``path`` the way Jupyter does (one-space indent, final newline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def nbgrader_meta(cell):
    """The cell's nbgrader metadata, or an empty dict (also when it is not a dict)."""
    metadata = cell.get("metadata", {})
    meta = metadata.get("nbgrader", {}) if isinstance(metadata, dict) else {}
    return meta if isinstance(meta, dict) else {}


def grade_id(cell):
    """The cell's nbgrader grade_id, or None."""
    return nbgrader_meta(cell).get("grade_id")


def is_answer(cell):
    """Is this a cell the student writes in (code answer or manual answer)?"""
    return bool(nbgrader_meta(cell).get("solution"))


def is_test(cell):
    """Is this an autograded test cell?"""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.cell_type == "code"


def answers(nb):
    """``{grade_id: source}`` for every answer cell of ``nb``, in order."""
    return {grade_id(c): c.source for c in nb.cells if is_answer(c)}


def strip_solution_markers(source):
    """The source without nbgrader's ``### BEGIN/END SOLUTION`` lines."""
    lines = source.split("\n")
    return "\n".join(line for line in lines if line.strip() not in SOLUTION_MARKERS)


def fill(nb, sources):
    """A copy of ``nb`` whose answer cells named in ``sources`` hold the given text.

    sources: ``{grade_id: source}``; each must name an answer cell of ``nb``.
    """
    filled = copy.deepcopy(nb)
    cells = {grade_id(c): c for c in filled.cells if is_answer(c)}
    unknown = sorted(set(sources) - set(cells))
    if unknown:
        raise KeyError(f"no answer cell with grade_id {', '.join(unknown)}")
    for name, source in sources.items():
        cells[name].source = source
    return filled


def points(nb):
    """``{grade_id: points possible}`` for every graded cell of ``nb``, in order."""
    return {
        grade_id(c): float(nbgrader_meta(c)["points"])
        for c in nb.cells
        if nbgrader_meta(c).get("grade")
    }


def answer_of(test_id, answer_ids):
    """The answer a test cell grades: ``test_head_causal`` grades ``head``.

    A test's grade_id is ``test_`` + the answer id, optionally + ``_`` + a suffix;
    the longest answer id that fits wins. None if no answer fits.
    """
    fits = [a for a in answer_ids if test_id == f"test_{a}" or test_id.startswith(f"test_{a}_")]
    return max(fits, key=len, default=None)


def is_locked(cell):
    """Is this a read-only cell the instructor wrote (not an answer, not a test)?"""
    meta = nbgrader_meta(cell)
    return bool(meta.get("locked")) and not meta.get("grade") and not meta.get("solution")
