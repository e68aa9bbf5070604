"""Are the lab's own notebooks, written with cells remembered across them, nbformat's text?"""

import nbformat

from autograder.pipeline.course import notebook
from autograder.pipeline.course.notebook_text import NotebookText

from .. import lab


def test_every_committed_notebook_is_written_as_nbformat_writes_it():
    """The source, the release, the executed solution and the sample class, one writer for
    all (so later ones meet cells written before): each text nbformat's, byte for byte?"""
    paths = [
        lab.SOURCE,
        lab.RELEASE,
        lab.SOLUTION,
        *sorted((lab.ROOT / lab.SAMPLE_CLASS).rglob("*.ipynb")),
    ]
    writer = NotebookText()
    for path in paths:
        nb = notebook.read(lab.ROOT / path)
        assert writer.writes(nb) == nbformat.v4.writes(nb), path
    assert len(paths) > 10 and writer._cells


def test_the_lab_notebooks_take_the_quick_size_check():
    """Do the release, the executed solution and the sample class's notebooks pass the
    bounds' quick check (``sanitize._plainly_small``), not only the full scan?"""
    from autograder.pipeline.grading import sanitize

    paths = [lab.RELEASE, lab.SOLUTION, *sorted((lab.ROOT / lab.SAMPLE_CLASS).rglob("*.ipynb"))]
    for path in paths:
        assert sanitize._plainly_small((lab.ROOT / path).read_bytes()), path
    assert len(paths) > 10
