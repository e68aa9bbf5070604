"""nbgrader's cell metadata and the source's cells, checked and overwritten from memory:
each schema checked once per kind of cell, the source read once per run."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import nbgrader
import nbgrader.api
import nbgrader.dbutil
from nbgrader.api import Gradebook
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    OverwriteCells,
    OverwriteKernelspec,
)

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
