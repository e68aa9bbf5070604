"""Every reach into nbgrader's (and nbconvert's) internals, in one place.

Each item says what it works around and the version it was checked against:
nbgrader 0.9.6, nbconvert 7.17, SQLAlchemy 2.1, alembic 1.20. An upgrade of any
of them touches this file only; the comparisons with stock nbgrader check that
each still behaves as stock does (``tests/lab/pipeline/test_grader.py``, cell by cell
on the whole corpus, and ``tests/engine/test_second_assignment.py``, late penalties too).

What the grader takes from nbgrader *as configured* (never as a copied list):
the sanitising and autograding preprocessors of ``Autograde`` and the
feedback preprocessors of ``GenerateFeedback`` (:func:`autograde_steps`,
:func:`feedback_steps`), so a course that adds a step (late penalties, say)
gets it here too.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.metadata
import io
import json
import logging
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import jsonschema
import nbgrader
import nbgrader.api
import nbgrader.dbutil
from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde, GenerateAssignment, GenerateFeedback, NbGraderException
from nbgrader.coursedir import CourseDirectory
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    Execute,
    GetGrades,
    NbGraderPreprocessor,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SAWarning
from traitlets.config import Config
from traitlets.utils.importstring import import_item

from autograder.pipeline.errors import UserError

FORMGRADER = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"


# ------------------------------------------------------------------ gradebook


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


# --------------------------------------------------------------- the steps


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


# ----------------------------------------------------------- cell metadata


CHECKSUM_LENGTH = 32  #: characters of a cell's checksum, as nbgrader's schema requires


class _SchemaCheckedOnce(BaseMetadataValidator):
    """nbgrader's base check of a cell's metadata against its JSON schema, the schema itself
    checked once per process.

    nbgrader 0.9.6 calls ``jsonschema.validate``, which checks the schema before the
    metadata, for every cell: nine tenths of the time. The errors are the same:
    nbgrader's own for a schema version other than this one, and for the rest
    the error ``jsonschema.validate`` would raise (its ``best_match``).
    """

    #: {schema version: a validator of that schema, the schema itself checked}
    checked: dict[int, Any] = {}

    def validate_cell(self, cell: Any) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            return
        if not isinstance(meta, dict) or meta.get("schema_version", 0) != self.schema_version:
            super().validate_cell(cell)  # nbgrader's own errors for these
            return
        validator = self.checked.get(self.schema_version)
        if validator is None:
            kind = jsonschema.validators.validator_for(self.schema)
            kind.check_schema(self.schema)
            validator = self.checked[self.schema_version] = kind(self.schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(meta))
        if error is not None:
            raise error


class RememberingValidator(MetadataValidator, _SchemaCheckedOnce):
    """nbgrader's cell metadata validator, which skips cells it has already passed.

    Whether a cell passes depends only on its type and its nbgrader metadata,
    and nearly every cell of every submission repeats the release's. nbgrader
    0.9.6 checks the JSON schema itself again for every cell: a third of the
    time spent sanitising (``_SchemaCheckedOnce`` checks it once). A
    checksum's value is left out of what is remembered: the schema asks only
    for 32 characters, and each student's executed test cells carry checksums
    of their own.
    """

    passed: set[tuple[str, str]] = set()  # shared by every instance in this process

    def validate_cell(self, cell: Any) -> None:
        meta = cell.metadata.get("nbgrader")
        checksum = meta.get("checksum") if isinstance(meta, dict) else None
        if isinstance(checksum, str) and len(checksum) == CHECKSUM_LENGTH:
            meta = {**meta, "checksum": "0" * CHECKSUM_LENGTH}  # any such string passes
        key = (cell.cell_type, json.dumps(meta, sort_keys=True))
        if key not in self.passed:
            super().validate_cell(cell)
            self.passed.add(key)


class ClearHiddenTestsOnce(ClearHiddenTests):
    """nbgrader's ``ClearHiddenTests``, remembering what it made of each cell's text.

    Every student's page shows the same test cells: their text is cut once per
    process, not once per page (nbgrader reads its delimiters, traitlets, for every
    line). A text it refuses (a region never closed) is refused every time.
    """

    cut: dict[tuple[str, str, str], tuple[str, bool]] = {}  # shared in this process
    MAX_REMEMBERED = 1024  #: texts remembered; the rest are cut each time

    def _remove_hidden_test_region(self, cell: Any) -> bool:
        key = (cell.source, self.begin_test_delimeter, self.end_test_delimeter)
        known = self.cut.get(key)
        if known is None:
            removed = super()._remove_hidden_test_region(cell)
            if len(self.cut) < self.MAX_REMEMBERED:
                self.cut[key] = (cell.source, removed)
            return removed
        cell.source = known[0]
        return known[1]


class CheckCellMetadataOnce(CheckCellMetadata):
    """nbgrader's ``CheckCellMetadata``, validating with :class:`RememberingValidator`."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        try:
            RememberingValidator().validate_nb(nb)
        except ValidationError as error:
            raise ValidationError(
                "Notebook failed to validate; the nbgrader metadata may be corrupted "
                f"({error.message})"
            ) from None
        return nb, resources


class SourceCells:
    """The gradebook's record of an assignment's source cells, read once per process.

    What ``OverwriteCells`` looks up for every cell of every submission (two or
    three queries each, and a new database connection per notebook). The
    source does not change during a run, and each run's workers read their own
    copy of the gradebook, so the answers are remembered per gradebook URL.
    A notebook's cells are read together, with the notebook's own collections
    (a few queries, not two a cell); a cell it does not have is remembered as
    missing and raises ``MissingEntry``, as nbgrader's lookups do.
    """

    _open: dict[str, SourceCells] = {}

    def __init__(self, db_url: str) -> None:
        self.gradebook = Gradebook(db_url)
        self.found: dict[tuple[str, ...], Any] = {}
        self.read_whole: set[tuple[str, str]] = set()  # (notebook, assignment) looked for
        self.whole: set[tuple[str, str]] = set()  # ... and found: every cell of it is known

    @classmethod
    def of(cls, db_url: str) -> SourceCells:
        """The one view of ``db_url`` in this process."""
        if db_url not in cls._open:
            cls._open[db_url] = cls(db_url)
        return cls._open[db_url]

    def _remember(self, name: str, *key: str) -> Any:
        if (name, *key) not in self.found:
            try:
                self.found[(name, *key)] = getattr(self.gradebook, name)(*key)
            except nbgrader.api.MissingEntry:
                self.found[(name, *key)] = None
        found = self.found[(name, *key)]
        if found is None:
            raise nbgrader.api.MissingEntry()  # a fresh one: a kept one would grow its traceback
        return found

    def find_notebook(self, notebook: str, assignment: str) -> Any:
        return self._remember("find_notebook", notebook, assignment)

    def _read_whole(self, notebook: str, assignment: str) -> None:
        """Remember every source and graded cell of a notebook, from its collections.

        A graded cell is a grade cell or, for a name no grade cell has, a task cell
        (as nbgrader's ``find_graded_cell`` looks). Nothing, if the gradebook has no
        such notebook: each lookup then asks the gradebook (and finds nothing).
        """
        if (notebook, assignment) in self.read_whole:
            return
        self.read_whole.add((notebook, assignment))
        try:
            found = self.find_notebook(notebook, assignment)
        except nbgrader.api.MissingEntry:
            return
        graded = {c.name: c for c in found.task_cells} | {c.name: c for c in found.grade_cells}
        for cell in found.source_cells:
            self.found[("find_source_cell", cell.name, notebook, assignment)] = cell
        for name, cell in graded.items():
            self.found[("find_graded_cell", name, notebook, assignment)] = cell
        self.whole.add((notebook, assignment))

    def _cell(self, name: str, *key: str) -> Any:
        notebook, assignment = key[1:]
        self._read_whole(notebook, assignment)
        if (notebook, assignment) in self.whole:  # all its cells are known: not one is missing
            self.found.setdefault((name, *key), None)
        return self._remember(name, *key)

    def find_source_cell(self, name: str, notebook: str, assignment: str) -> Any:
        return self._cell("find_source_cell", name, notebook, assignment)

    def find_graded_cell(self, name: str, notebook: str, assignment: str) -> Any:
        return self._cell("find_graded_cell", name, notebook, assignment)


class OverwriteCellsFromMemory(OverwriteCells):
    """nbgrader's ``OverwriteCells``, looking the source cells up in :class:`SourceCells`.

    The same cell-by-cell logic (``preprocess_cell`` and the missing-cell steps
    are nbgrader's); only where the source cells come from differs.
    """

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.db_url = resources["nbgrader"]["db_url"]
        self.gradebook = SourceCells.of(self.db_url)
        nb, resources = super(OverwriteCells, self).preprocess(nb, resources)
        if self.add_missing_cells:
            nb, resources = self.add_missing_grade_cells(nb, resources)
            nb, resources = self.add_missing_task_cells(nb, resources)
        return nb, resources


class OverwriteKernelspecFromMemory(OverwriteKernelspec):
    """nbgrader's ``OverwriteKernelspec``, the source's kernelspec read from :class:`SourceCells`.

    nbgrader's opens the gradebook (a new engine and connection) for every
    notebook to read one column that does not change during a run.
    """

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        found = resources["nbgrader"]
        source = SourceCells.of(found["db_url"]).find_notebook(
            found["notebook"], found["assignment"]
        )
        if source.kernelspec is not None and json.loads(source.kernelspec):
            nb.metadata["kernelspec"] = json.loads(source.kernelspec)
        return nb, resources


# ------------------------------------------------------------------ feedback


def feedback_template(config: Config) -> Config:
    """``config`` with nbgrader's own feedback template, found where formgrader keeps it.

    As nbgrader's converters do (``BaseConverter``), nbconvert's default
    preprocessors are off. nbconvert 7.17 validates every cell after every
    preprocessor, enabled or not (most of a page's time); the exporter this
    configures validates nothing (``FeedbackExporter._preprocess``), and an
    exporter of nbconvert's own given it validates once, after the last step.
    """
    template = Config(config)
    template.Exporter.default_preprocessors = []
    template.HTMLExporter.optimistic_validation = True
    template.HTMLExporter.template_name = "feedback"
    template.HTMLExporter.extra_template_basedirs = [str(FORMGRADER / "templates")]
    template.HTMLExporter.extra_template_paths = [
        str(FORMGRADER / "static" / "node_modules" / "bootstrap" / "dist" / "css")
    ]
    return template


def _version(distribution: str) -> str:
    """An installed distribution's version, or "" if it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ""


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter, tuned for one notebook rendered for many students.

    Markdown and highlighted code are cached by their text (bounded caches from
    ``make_cache``): every student's notebook has the same prose and tests. A
    template may cache whole cells too, with the filters ``cell_key``,
    ``cached_cell`` and ``remember_cell`` (the feedback page's does).
    ``clean`` turns nbconvert's HTML for Markdown into what a page may show
    (the feedback page passes :func:`~autograder.pipeline.reports.markup.safe_markdown_html`).
    nbconvert 7.17's last step, a BeautifulSoup pass that costs as much as the
    rest of the page, only adds alt text to images and ``tabindex`` to cells;
    two substitutions do the same. ``kept``: where compiled templates are kept
    between runs (:mod:`~autograder.pipeline.reports.template_cache`). Uses the
    exporter's private ``_init_resources`` and ``_nb_metadata``.
    """

    #: outputs nbconvert gives a fresh id on every page: a cell holding one is never reused
    FRESH_EVERY_TIME = ("application/javascript", "application/vnd.jupyter.widget-view+json")
    #: characters of a cell's HTML, at most, that are remembered (a page's cells: 1,400 median)
    MAX_CELL_HTML = 32 * 2**10

    def __init__(
        self,
        make_cache: Any,
        clean: Callable[[str], str],
        kept: jinja2.BytecodeCache | None = None,
        **kwargs: Any,
    ) -> None:
        self._kept = kept  # before nbconvert makes its environment, in super().__init__
        super().__init__(**kwargs)
        self._clean = clean
        self._markdown, self._code, self._cells = make_cache(), make_cache(), make_cache()
        self._css: dict[tuple[int, Any], list[str]] = {}  # (preprocessor, config_dir) -> header
        self._highlight = Highlight2HTML(pygments_lexer="ipython3", parent=self)

    def _create_environment(self) -> jinja2.Environment:
        """nbconvert's environment, keeping what it compiles in ``kept`` (if given)."""
        environment = super()._create_environment()
        environment.bytecode_cache = self._kept
        return environment

    def _preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        """The enabled preprocessors in turn, on ``nb`` and ``resources`` themselves.

        nbconvert's own deep-copies both, normalizes and validates the notebook
        after the last step. A page's notebook and resources are built for it
        alone (:meth:`~autograder.pipeline.reports.feedback_page.Renderer.render`),
        its cells were validated when the submission was read, and each output
        when it was made (``execute``); ``tests/engine/test_stages.py`` validates
        rendered pages' notebooks and compares the pages with nbconvert's. The
        CSS header, the same on every page, is made once per preprocessor and
        configuration folder.
        """
        for preprocessor in self._preprocessors:
            if type(preprocessor) is CSSHTMLHeaderPreprocessor and preprocessor.enabled:
                key = (id(preprocessor), resources.get("config_dir"))
                if key not in self._css:
                    self._css[key] = preprocessor._generate_header(resources)
                resources["inlining"] = {"css": self._css[key]}
                continue
            nb, resources = preprocessor(nb, resources)
        return nb, resources

    def _cell_key(self, cell: Any, *page: Any) -> str:
        """What a cell's HTML depends on, as text: the cell, and what of the page it shows
        (``page``, as the template says); "" for a cell whose HTML is made afresh each time."""
        for output in cell.get("outputs", []):
            if any(kind in output.get("data", {}) for kind in self.FRESH_EVERY_TIME):
                return ""
        try:
            return json.dumps([cell, page], sort_keys=True)
        except (TypeError, ValueError):
            return ""

    def _cached_cell(self, key: str) -> str:
        """The HTML a cell with this key was rendered to before; "" if none is remembered."""
        return str(self._cells.get(key, "")) if key else ""

    def _remember_cell(self, html: str, key: str) -> str:
        """``html``, remembered as the rendering of cells with this key (if not too long)."""
        if not key or len(html) > self.MAX_CELL_HTML:
            return html
        return str(self._cells.get_or_make(key, key, lambda: html))

    @pass_context
    def markdown2html(self, context: Any, source: str) -> str:
        """Markdown as HTML, made safe by ``clean``."""
        if context.get("cell", {}).get("attachments"):
            return self._clean(super().markdown2html(context, source))
        return self._markdown.get_or_make(
            source,
            source,
            lambda: self._clean(super(FeedbackExporter, self).markdown2html(context, source)),
        )

    def markdown_made(self, source: str) -> str | None:
        """The HTML :meth:`markdown2html` made of ``source`` this run, if it is remembered."""
        return self._markdown.get(source)

    def remember_markdown(self, source: str, html: str) -> None:
        """Take ``html`` as what :meth:`markdown2html` gives for ``source`` (kept from before)."""
        self._markdown.get_or_make(source, source, lambda: html)

    def markdown_making(self) -> str | None:
        """Everything Markdown's HTML depends on besides its text, as text: the versions that
        parse, highlight, sanitise and draw it, the exporter's options, and the code of this
        module and of ``clean``'s. None where it depends on files too (embedded images)."""
        if self.embed_images:
            return None
        module = sys.modules.get(getattr(self._clean, "__module__", ""))
        try:
            code = [
                hashlib.sha256(Path(path).read_bytes()).hexdigest()
                for path in (__file__, getattr(module, "__file__", None) or __file__)
            ]
        except OSError:
            return None
        made_by = ("nbconvert", "mistune", "nh3", "latex2mathml", "pygments")
        return json.dumps(
            {
                "versions": [_version(name) for name in made_by],
                "options": [self.anchor_link_text, self.exclude_anchor_links, self.lexer_options],
                "clean": getattr(self._clean, "__qualname__", repr(self._clean)),
                "code": code,
            },
            sort_keys=True,
            default=repr,
        )

    def highlighted(self, source: str, metadata: Any = None) -> str:
        """A code cell's text as the page's template highlights it, remembered for every page."""
        return self._highlight_cached(source, None, metadata)

    def remember_highlighted(self, source: str, html: str) -> None:
        """Take ``html`` as what :meth:`highlighted` gives for ``source`` (kept from before)."""
        self._code.get_or_make((source, None), source, lambda: html)

    def highlighting(self) -> str:
        """Everything the highlighted HTML depends on besides the code: versions and options."""
        import pygments  # noqa: PLC0415 (nbconvert imports it with its filters)

        lexers = ("IPython", "ipython_pygments_lexers", "nbconvert")
        return json.dumps(
            {
                "pygments": pygments.__version__,
                "lexer": self._highlight.pygments_lexer,
                "versions": [_version(name) for name in lexers],
                "options": self._highlight.extra_formatter_options,
            },
            sort_keys=True,
            default=repr,
        )

    #: Markdown that has the parser and the sanitiser build their common rules (both compile
    #: them on first use): a worker forked after :meth:`warm_markdown` starts with them
    WARM_MARKDOWN = (
        "# A heading\n\nSome *text*, **bold**, `code`, a [link](https://example.org), $x^2$ "
        "and\n\n$$y = 2x$$\n\n- one\n- two\n\n1. first\n\n> quoted\n\n```python\nx = 1\n```"
        "\n\n| a | b |\n| - | - |\n| 1 | 2 |\n"
    )

    def warm_markdown(self) -> None:
        """Build the Markdown parser's and the sanitiser's rules once, rendering nothing kept."""
        self._clean(super().markdown2html({}, self.WARM_MARKDOWN))

    def compile_lexer(self) -> None:
        """Build the highlighter's lexer once (pygments compiles its rules on first use)."""
        self._highlight(" ")

    def _highlight_cached(self, source: str, language: Any = None, metadata: Any = None) -> str:
        return self._code.get_or_make(
            (source, language), source, lambda: self._highlight(source, language, metadata)
        )

    def from_notebook_node(
        self, nb: Any, resources: Any = None, **kw: Any
    ) -> tuple[Any, dict[str, Any]]:
        """HTMLExporter.from_notebook_node, with the caches and without the soup."""
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", self._highlight_cached)
        self.register_filter("cell_key", self._cell_key)
        self.register_filter("cached_cell", self._cached_cell)
        self.register_filter("remember_cell", self._remember_cell)
        self.register_filter(
            "filter_data_type",
            WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources
            ),
        )
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        html = re.sub(
            r"<img(?![^>]*\balt=)",
            '<img alt="No description has been provided for this image"',
            html,
        )
        html = re.sub(
            r'(<div class="[^"]*\b(?:jp-Cell-inputWrapper|jp-OutputArea-output)\b[^"]*")',
            r'\1 tabindex="0"',
            html,
        )
        return html, resources
