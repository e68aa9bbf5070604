"""Finding the class's submissions, wherever the TA downloaded them from.

Three shapes are understood, each read by its own module:

- nbgrader's layout, ``SUBMISSIONS/<student_id>/<assignment>/<notebook>.ipynb``
  (:mod:`.nbgrader_layout`);
- a folder of files downloaded from an LMS (:mod:`.lms_files`);
- a ``.zip`` of either (read in memory, never extracted to disk).

Which shape a folder or archive is, is decided by its top level (below any
single wrapping folder): LMS names there (Canvas files, Moodle participants)
make it an LMS download, whatever a student's own folders hold inside;
otherwise nbgrader's layout is looked for. Every notebook found is graded or
named in a warning. Each student's work is one :class:`~.submission.Submission`.

A student id is plain text, never a path, markup or a formula: letters and
digits of any script and ``. _ - @ +``, starting with a letter or digit. A
folder whose name is not such an id is named in a warning and not graded.

Links are not followed out of the submissions folder: a link there (a TA's copy
mistake, or a student's trick) could otherwise put the instructor's source
notebook, or another course's files, into a student's feedback page.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.errors import UserError
from autograder.pipeline.submissions import lms_files
from autograder.pipeline.submissions.lms_files import lms_download
from autograder.pipeline.submissions.nbgrader_layout import from_nbgrader_layout, zip_layout
from autograder.pipeline.submissions.submission import Submission, open_zip


def collect(
    where: Path | str, assignment: Assignment, pattern: str | None = None
) -> list[Submission]:
    """Every submission at ``where`` (a folder in either layout, or a .zip), one per student."""
    where = Path(where)
    if where.is_dir():
        where = Path(os.path.realpath(where))  # the folder itself may be a link; its insides not
    if not where.exists():
        raise UserError(f"no such folder or file: {where}")
    if where.is_file():
        if not zipfile.is_zipfile(where):
            raise UserError(f"{where} is a file but not a .zip archive")
        return from_zip(where, assignment, pattern)
    if not os.access(where, os.R_OK | os.X_OK):
        raise UserError(f"cannot read the folder {where}")
    listed = [
        p.relative_to(where).as_posix() for p in where.rglob("*")
        if p.is_file() and "__MACOSX" not in p.parts
        and not any(s.startswith(".") for s in p.relative_to(where).parts)
    ]  # fmt: skip
    if not lms_download(listed, pattern):
        laid_out = from_nbgrader_layout(where, assignment)
        if laid_out:
            return laid_out
    _not_one_assignment_folder(where, assignment)
    return lms_files.from_folder(where, assignment, pattern)


def from_zip(path: Path, assignment: Assignment, pattern: str | None = None) -> list[Submission]:
    """Submissions from a ``.zip`` (nbgrader's layout at any depth, or LMS files), unextracted."""
    try:
        with open_zip(path) as archive:
            return _from_archive(archive, assignment, pattern)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise UserError(f"cannot read the archive {path}: {error}") from None


def _from_archive(
    archive: zipfile.ZipFile, assignment: Assignment, pattern: str | None
) -> list[Submission]:
    names = [
        i.filename for i in archive.infolist() if not i.is_dir() and "__MACOSX" not in i.filename
    ]
    if not lms_download(names, pattern):
        laid_out = zip_layout(archive, assignment)
        if laid_out:
            return laid_out
    return lms_files.from_archive(archive, assignment, pattern)


def _not_one_assignment_folder(where: Path, assignment: Assignment) -> None:
    """UserError if ``where`` is one student's (or the release's) work, not a class.

    ``grade release`` or ``grade SUBMISSIONS/ada`` would otherwise grade one
    student named after the notebook.
    """
    own = where if where.name == assignment.id else where / assignment.id
    if any((own / name).is_file() for name in assignment.notebooks):
        raise UserError(
            f"{where} holds one assignment folder ({own.name}/), not a class: give the folder "
            f"that holds a folder per student, SUBMISSIONS/<student>/{assignment.id}/"
            f"{assignment.notebooks[0]}, or a folder or .zip of LMS downloads"
        )
