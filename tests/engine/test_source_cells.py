"""Does the grader's view of the gradebook's source cells answer as nbgrader's lookups do?"""

import itertools

import nbgrader.api
import pytest
from nbgrader.api import Gradebook
from sqlalchemy import event

from autograder.pipeline.course import internals

CELLS = {  # notebook: [(name, kind)]; a name may be in several notebooks, as in nbgrader
    "n.ipynb": [("setup", "locked"), ("g1", "grade"), ("t1", "task"), ("a1", "answer")],
    "m.ipynb": [("g1", "grade"), ("t1", "grade"), ("only_m", "task")],
    "empty.ipynb": [],
}
NAMES = ["setup", "g1", "t1", "a1", "only_m", "nowhere"]
LOOKUPS = ["find_source_cell", "find_graded_cell"]


@pytest.fixture
def db_url(tmp_path):
    """A gradebook holding :data:`CELLS` in assignment ``a``."""
    url = f"sqlite:///{tmp_path}/gradebook.db"
    with internals.alembic_in_process(), Gradebook(url) as gradebook:
        gradebook.add_assignment("a")
        for notebook, cells in CELLS.items():
            gradebook.add_notebook(notebook, "a")
            for name, kind in cells:
                code = "markdown" if kind == "task" else "code"
                gradebook.add_source_cell(
                    name, notebook, "a", cell_type=code, locked=kind != "answer",
                    source=f"{name} text", checksum=f"sum-{name}",
                )  # fmt: skip
                if kind == "grade":
                    gradebook.add_grade_cell(name, notebook, "a", max_score=2, cell_type=code)
                if kind == "task":
                    gradebook.add_task_cell(name, notebook, "a", max_score=3, cell_type=code)
    return url


def _answer(source, kind, *key):
    """What ``source.kind(*key)`` gives, as comparable data: the row's kind and id, or
    "missing"."""
    try:
        found = getattr(source, kind)(*key)
    except nbgrader.api.MissingEntry:
        return "missing"
    return (type(found).__name__, found.id, found.name)


def test_every_lookup_answers_as_nbgraders(db_url):
    """For every cell name, in every notebook (and in ones that do not exist), is each answer
    nbgrader's own: the same row, or MissingEntry?"""
    view = internals.SourceCells(db_url)
    notebooks = [*CELLS, "absent.ipynb"]
    with Gradebook(db_url) as gradebook:
        for kind, name, notebook, assignment in itertools.product(
            LOOKUPS, NAMES, notebooks, ["a", "b"]
        ):
            key = (name, notebook, assignment)
            expected = _answer(gradebook, kind, *key)
            assert _answer(view, kind, *key) == expected, (kind, key)
            assert _answer(view, kind, *key) == expected, ("again", kind, key)
    view.gradebook.close()


def test_a_notebooks_cells_are_read_together(db_url):
    """Do all the lookups of a notebook's cells cost a few queries, not one or two each?"""
    view = internals.SourceCells(db_url)
    statements = []
    engine = view.gradebook.db.get_bind()
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    for kind, name in itertools.product(LOOKUPS, NAMES):
        _answer(view, kind, name, "n.ipynb", "a")
    # the notebook, then its source, grade and task cells
    assert len(statements) <= 4, statements
    view.gradebook.close()
