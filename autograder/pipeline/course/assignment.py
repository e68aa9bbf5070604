"""The course and its assignments, as nbgrader's ``CourseDirectory`` lays them out.

An :class:`Assignment` is a value: the course folder, the assignment id, and
the course's nbgrader configuration. Every path (source, release, solutions,
submitted, autograded) comes from ``CourseDirectory`` with the folder names
``course_config.py`` sets, so nothing here knows any particular lab.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearHiddenTests
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from autograder.pipeline.errors import UserError

CONFIG_FILES = ("nbgrader_config.py", "course_config.py")  #: what nbgrader reads in a course


def config_files(root: Path | str) -> list[str]:
    """The names of :data:`CONFIG_FILES` the course at ``root`` has (nbgrader_config.py always)."""
    return [name for name in CONFIG_FILES if (Path(root) / name).is_file()]


def _ignored(name: str, patterns: list[str]) -> bool:
    """Does nbgrader's ``ignore`` list (file-name globs) leave ``name`` out?"""
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def discover(start: Path | str | None = None) -> Path:
    """The course a command run in ``start`` (the working folder) means.

    ``start`` or the nearest folder above it with an ``nbgrader_config.py``, as
    git finds a repository: the engine never assumes where it is installed.
    UserError when there is none.
    """
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "nbgrader_config.py").is_file():
            return folder
    raise UserError(
        f"no nbgrader course in {here} or above (no nbgrader_config.py): "
        "run the command in a course folder, or pass --course"
    )


def load_config(root: Path) -> Config:
    """The course's nbgrader configuration, read as nbgrader reads it."""
    if not (Path(root) / "nbgrader_config.py").is_file():
        raise UserError(f"{root} is not an nbgrader course: it has no nbgrader_config.py")
    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


def course_directory(root: Path, config: Config) -> CourseDirectory:
    """nbgrader's ``CourseDirectory`` for the course at ``root``."""
    return CourseDirectory(config=config, root=str(root))


#: what opens hidden tests unless a course says otherwise: nbgrader's own default
HIDDEN_TESTS = str(ClearHiddenTests.begin_test_delimeter.default_value)


@dataclass(frozen=True)
class Assignment:
    """One assignment of a course: its notebooks, helper files and folders.

    root: the course folder; id: the assignment id (its folder under source/).
    """

    root: Path
    id: str
    config: Config = field(compare=False, repr=False)

    @cached_property
    def coursedir(self) -> CourseDirectory:
        """nbgrader's view of the course folder, with this assignment selected."""
        coursedir = course_directory(self.root, self.config)
        coursedir.assignment_id = self.id
        return coursedir

    def folder(self, step: str, student_id: str = ".") -> Path:
        """The assignment's folder for an nbgrader step (``source_directory``, ...)."""
        name = getattr(self.coursedir, step)
        return Path(self.coursedir.format_path(name, student_id, self.id))

    @property
    def source_dir(self) -> Path:
        """``source/<id>``: the instructor's notebooks and helper files."""
        return self.folder("source_directory")

    @property
    def release_dir(self) -> Path:
        """``release/<id>``: what students get."""
        return self.folder("release_directory")

    @property
    def solution_dir(self) -> Path:
        """``solutions/<id>``: the executed solutions."""
        return self.folder("solution_directory")

    @cached_property
    def notebooks(self) -> tuple[str, ...]:
        """The assignment's notebook file names, sorted (``("hw1.ipynb",)``)."""
        found = tuple(sorted(p.name for p in self.source_dir.glob("*.ipynb")))
        if not found:
            raise UserError(f"assignment {self.id} has no notebook in {self.source_dir}")
        return found

    @property
    def hidden_tests(self) -> str:
        """The line that opens a test cell's hidden tests, as the course configures nbgrader
        (``ClearHiddenTests.begin_test_delimeter``, nbgrader's spelling)."""
        configured = self.config.ClearHiddenTests.get("begin_test_delimeter")
        return str(configured or HIDDEN_TESTS)

    @property
    def stems(self) -> tuple[str, ...]:
        """The notebook names without ``.ipynb``, as nbgrader's gradebook names them."""
        return tuple(Path(name).stem for name in self.notebooks)

    def source(self, notebook: str) -> Path:
        """The instructor's version of one notebook."""
        return self.source_dir / notebook

    def release(self, notebook: str) -> Path:
        """The student's version of one notebook."""
        return self.release_dir / notebook

    def solution(self, notebook: str) -> Path:
        """The executed solution of one notebook."""
        return self.solution_dir / notebook

    def helper_files(self) -> dict[str, bytes]:
        """``{path: bytes}``: the files beside the notebooks that students get too.

        Every file under the source folder but its notebooks and what the course
        ignores (``CourseDirectory.ignore``), in subfolders too, by its path
        relative to the folder (``data/scores.csv``): what ``nbgrader autograde``
        copies beside a student's notebook. Binary files are bytes like any other.
        """
        ignored = list(self.coursedir.ignore)
        found: dict[str, bytes] = {}
        for folder, subfolders, names in os.walk(self.source_dir):
            subfolders[:] = sorted(d for d in subfolders if not _ignored(d, ignored))
            for name in sorted(names):
                path = Path(folder) / name
                if name.endswith(".ipynb") or _ignored(name, ignored) or not path.is_file():
                    continue
                found[path.relative_to(self.source_dir).as_posix()] = path.read_bytes()
        return found

    def named_by_config(self) -> list[str]:
        """Files of the course its config names, relative to the course folder: the header
        and footer notebooks ``IncludeHeaderFooter`` adds to every release (nbgrader reads
        them whenever it records the assignment). Those outside the course are left out."""
        section = self.config.get("IncludeHeaderFooter", {})
        found = []
        for key in ("header", "footer"):
            value = section.get(key)
            if not isinstance(value, str) or not value:
                continue
            path = (self.root / value).resolve()
            if path.is_file() and path.is_relative_to(self.root.resolve()):
                found.append(path.relative_to(self.root.resolve()).as_posix())
        return found

    def submission_path(self, student_id: str, notebook: str) -> Path:
        """Where nbgrader keeps a student's notebook, relative to a submissions folder."""
        return Path(student_id) / self.id / notebook

    def autograded(self, student_id: str, notebook: str) -> Path:
        """Where the graded notebook goes (``autograded/<student>/<id>/<notebook>``)."""
        return self.folder("autograded_directory", student_id) / notebook

    def resources(self, student_id: str, notebook: str, db_url: str) -> dict[str, Any]:
        """The ``resources`` nbgrader's preprocessors expect for one student's notebook."""
        return {
            "nbgrader": {
                "notebook": Path(notebook).stem,
                "assignment": self.id,
                "student": student_id,
                "db_url": db_url,
            }
        }


def assignment_ids(root: Path, config: Config) -> list[str]:
    """The assignments of the course at ``root``: the folders under its source folder."""
    source = Path(root) / course_directory(root, config).source_directory
    if not source.is_dir():
        return []
    return sorted(p.name for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))


def find_assignment(root: Path | str | None = None, assignment_id: str | None = None) -> Assignment:
    """The assignment ``assignment_id`` of the course at ``root``, or its only one.

    root: the course folder; None: the one the working folder is in (:func:`discover`).
    Raises UserError naming the choices when the id is missing or unknown.
    """
    root = Path(root).resolve() if root else discover()
    config = load_config(root)
    known = assignment_ids(root, config)
    if assignment_id is None:
        if len(known) == 1:
            return Assignment(root, known[0], config)
        if not known:
            raise UserError(f"the course at {root} has no assignment under its source folder")
        raise UserError(f"several assignments; choose one with --assignment: {', '.join(known)}")
    if assignment_id not in known:
        choices = ", ".join(known) or "none"
        raise UserError(f"no assignment {assignment_id!r} in {root} (there are: {choices})")
    return Assignment(root, assignment_id, config)


def tool_environment() -> dict[str, str]:
    """``os.environ`` with this interpreter's ``bin/`` first on PATH.

    nbgrader runs ``alembic`` and ``jupyter`` by name, so a virtual environment
    that was not activated must still be found.
    """
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env
