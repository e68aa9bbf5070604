"""nbgrader's gradebook database, reached into: its migrations run in this process,
one transaction per batch of students, grades saved and late penalties assigned
through a gradebook the caller holds open."""

from __future__ import annotations

import ast
import contextlib
import io
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbgrader
import nbgrader.api
import nbgrader.dbutil
from nbgrader.api import Gradebook
from nbgrader.converters import GenerateAssignment, NbGraderException
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import (
    AssignLatePenalties,
    NbGraderPreprocessor,
    SaveAutoGrades,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SAWarning
from traitlets.config import Config

from autograder.pipeline.errors import UserError


def newest_revision(versions: Path) -> str | None:
    """The newest of the alembic revisions in the folder ``versions``: the ``revision``
    no other file's ``down_revision`` names. None unless that is exactly one revision
    (a branch, a merge, a file not read plainly): then alembic itself must say.

    Read from each script's two literal assignments, without importing alembic,
    which imports every SQL dialect it supports (about 60 ms of a cold run).
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in sorted(versions.glob("*.py")):
        try:
            tree = ast.parse(script.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return None
        found: dict[str, Any] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and target.id in ("revision", "down_revision"):
                    try:
                        found[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        return None
        revision, parent = found.get("revision"), found.get("down_revision", "")
        if not isinstance(revision, str) or not (parent is None or isinstance(parent, str)):
            return None  # a merge names several parents: alembic's business
        revisions.add(revision)
        if parent:
            parents.add(parent)
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


@contextlib.contextmanager
def alembic_in_process() -> Iterator[None]:
    """Have nbgrader learn its schema version without starting ``alembic heads``.

    nbgrader 0.9.6 stamps a new gradebook by running the ``alembic`` command (a
    second Python process importing nbgrader again: seconds, and a PATH that
    must hold the venv). The newest revision is read from nbgrader's migration scripts
    (:func:`newest_revision`), or, where they are not plain, by alembic's own
    API in process: a run whose gradebook holds the assignment already never needs it.
    """
    newest = newest_revision(Path(nbgrader.dbutil.ALEMBIC_DIR) / "versions")
    if newest is None:
        import alembic.config
        import alembic.script

        scripts = alembic.config.Config()
        scripts.set_main_option("script_location", nbgrader.dbutil.ALEMBIC_DIR)
        newest = alembic.script.ScriptDirectory.from_config(scripts).get_current_head()
    original = nbgrader.api.get_alembic_version
    nbgrader.api.get_alembic_version = lambda: newest
    try:
        yield
    finally:
        nbgrader.api.get_alembic_version = original


@contextlib.contextmanager
def _kernels_quiet() -> Iterator[None]:
    """Standard error at the file level goes nowhere while the block runs.

    nbgrader's ``InstantiateTests`` starts a kernel for each notebook with
    ``### AUTOTEST`` lines, and each kernel's own log (a warning about its
    transport) would reach the TA's terminal: nothing in it is theirs to act on.
    What nbgrader says goes through its logger, kept apart.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def record_assignment(coursedir: CourseDirectory, config: Config) -> None:
    """Record the assignment's cells in the gradebook, as ``nbgrader generate_assignment`` does.

    Runs nbgrader's own ``GenerateAssignment`` with the release written to a
    scratch folder, so only the gradebook changes.
    """
    with tempfile.TemporaryDirectory(prefix="release-") as scratch:
        release = coursedir.release_directory
        coursedir.release_directory = scratch
        converter = GenerateAssignment(coursedir=coursedir, config=config)
        converter.force = True
        log = io.StringIO()
        converter.log.addHandler(logging.StreamHandler(log))
        converter.log.setLevel(logging.WARNING)
        try:
            with alembic_in_process(), _kernels_quiet():
                converter.start()
        except NbGraderException:
            raise UserError(f"could not set up the gradebook: {log.getvalue().strip()}") from None
        finally:
            coursedir.release_directory = release


def load_dialect(db_url: str) -> None:
    """Import the SQLAlchemy dialect of the database at ``db_url`` now.

    SQLAlchemy imports a dialect when its first engine connects (sqlite's, with
    its async variants, about 9 ms): done by the process that forks the
    workers, before it forks them, each worker starts with it. An unknown
    scheme is left for opening the gradebook to report.
    """
    try:
        make_url(db_url).get_dialect()
    except Exception:
        pass


@contextlib.contextmanager
def one_transaction(gradebook: Gradebook) -> Iterator[Gradebook]:
    """``gradebook``, in which every change commits together at the end, or not at all.

    nbgrader's API commits after every change (every student, submission and
    grade): slow, and a crash halfway would leave a student half-recorded.
    Inside this block its commits only flush. SQLAlchemy 2 warns about a
    relationship nbgrader's ``update_or_create_submission`` sets; harmless.
    """
    session = gradebook.db
    session.commit = session.flush
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SAWarning)
            yield gradebook
    except BaseException:
        session.rollback()
        raise
    finally:
        del session.commit
    session.commit()


class _GivenGradebook(NbGraderPreprocessor):
    """Mixin: an nbgrader preprocessor that writes through a gradebook it is given.

    Stock ``SaveAutoGrades`` and ``AssignLatePenalties`` open a gradebook of
    their own per notebook, which cannot see (or would wait on) the grader's
    open transaction.
    """

    def __init__(self, gradebook: Gradebook, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.given = gradebook

    def _from(self, resources: dict[str, Any]) -> None:
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.db_url = resources["nbgrader"]["db_url"]
        self.gradebook = self.given


class SaveAutoGradesTo(_GivenGradebook, SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades`` (0.9.6), through the given gradebook.

    Stock looks up each cell's grade and comment with a query of its own and
    commits after each: some 40 round trips a notebook. Here the notebook's
    grades and comments are read in two queries first, and written in one flush.
    """

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        self._from(resources)
        grades, comments = submission_cells(
            self.given, self.assignment_id, self.student_id, self.notebook_id
        )
        self.gradebook = _Prefetched(self.given, grades, comments)
        session = self.given.db
        with session.no_autoflush, _commits_deferred(session):
            done = NbGraderPreprocessor.preprocess(self, nb, resources)
        session.commit()  # inside one_transaction, a flush
        return done


class _Prefetched:
    """A gradebook whose ``find_grade`` and ``find_comment`` answer from prefetched rows.

    grades, comments: ``{(notebook stem, cell name): row}`` (:func:`submission_cells`);
    anything else, and a cell not prefetched, goes to the real gradebook.
    """

    def __init__(self, gradebook: Gradebook, grades: dict[Any, Any], comments: dict[Any, Any]):
        self.gradebook, self.grades, self.comments = gradebook, grades, comments

    def find_grade(self, cell: str, notebook: str, assignment: str, student: str) -> Any:
        found = self.grades.get((notebook, cell))  # rows are never falsy: `or` is safe
        return found or self.gradebook.find_grade(cell, notebook, assignment, student)

    def find_comment(self, cell: str, notebook: str, assignment: str, student: str) -> Any:
        found = self.comments.get((notebook, cell))
        return found or self.gradebook.find_comment(cell, notebook, assignment, student)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.gradebook, name)


@contextlib.contextmanager
def _commits_deferred(session: Any) -> Iterator[None]:
    """Within the block, ``session.commit()`` does nothing (the caller commits after)."""
    before = session.__dict__.get("commit")
    session.commit = lambda: None
    try:
        yield
    finally:
        if before is None:
            del session.commit
        else:
            session.commit = before


def submission_cells(
    gradebook: Gradebook, assignment: str, student: str, notebook: str | None = None
) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], Any]]:
    """A submission's ``(grades, comments)``, each ``{(notebook stem, cell name): row}``.

    Two queries in all, where reading ``grade.name`` row by row loads each
    cell on its own. notebook: only that notebook's (default: every one).
    Empty when the gradebook has no such submission.
    """
    api = nbgrader.api

    def rows(model: Any) -> dict[tuple[str, str], Any]:
        query = (
            gradebook.db.query(model, api.Notebook.name, api.BaseCell.name)
            .join(api.BaseCell, api.BaseCell.id == model.cell_id)
            .join(api.SubmittedNotebook, api.SubmittedNotebook.id == model.notebook_id)
            .join(api.Notebook, api.Notebook.id == api.SubmittedNotebook.notebook_id)
            .join(
                api.SubmittedAssignment,
                api.SubmittedAssignment.id == api.SubmittedNotebook.assignment_id,
            )
            .join(api.Assignment, api.Assignment.id == api.SubmittedAssignment.assignment_id)
            .filter(
                api.Assignment.name == assignment, api.SubmittedAssignment.student_id == student
            )
        )
        if notebook is not None:
            query = query.filter(api.Notebook.name == notebook)
        return {(stem, name): row for row, stem, name in query}

    return rows(api.Grade), rows(api.Comment)


class AssignLatePenaltiesTo(_GivenGradebook, AssignLatePenalties):
    """nbgrader's ``AssignLatePenalties`` (0.9.6), through the given gradebook."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        self._from(resources)
        self.init_plugin()
        submission = self.gradebook.find_submission(self.assignment_id, self.student_id)
        notebook = self.gradebook.find_submission_notebook(
            self.notebook_id, self.assignment_id, self.student_id
        )
        notebook.late_submission_penalty = None
        if submission.total_seconds_late > 0:
            penalty = self.plugin_inst.late_submission_penalty(
                self.student_id, notebook.score, submission.total_seconds_late
            )
            if penalty is not None:
                notebook.late_submission_penalty = self._check_late_penalty(notebook, penalty)
        return nb, resources
