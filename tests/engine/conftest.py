"""The toy course the engine's class-grading tests share: :data:`tests.engine.toy.LESSON`."""

import shutil
from pathlib import Path

import pytest

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.course.gradebook import ensure_gradebook

from . import toy
from .command_line import run_command_line


@pytest.fixture(scope="session")
def lesson_template(tmp_path_factory) -> Path:
    """A course of one assignment, ``toy-1`` (:data:`~tests.engine.toy.LESSON` as
    ``toy.ipynb``), its release generated and its gradebook made: copied, never changed."""
    course = toy.write_course(tmp_path_factory.mktemp("lesson") / "course", "toy-1",
                              {"toy.ipynb": toy.LESSON})  # fmt: skip
    generated = run_command_line(["generate", "--course", str(course)], timeout=300)
    assert generated.returncode == 0, generated.stderr
    ensure_gradebook(find_assignment(course))
    return course


@pytest.fixture
def lesson_course(lesson_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of :func:`lesson_template` in ``tmp_path/course``."""
    return shutil.copytree(lesson_template, tmp_path / "course", symlinks=True)


@pytest.fixture(scope="session")
def lesson_release(lesson_template: Path):
    """The released ``toy.ipynb``: what a student starts from."""
    return notebook.read(find_assignment(lesson_template).release("toy.ipynb"))


@pytest.fixture(scope="session")
def lesson_solved(lesson_release):
    """The release with every answer right (:data:`~tests.engine.toy.SOLVED`)."""
    return notebook.fill(lesson_release, toy.SOLVED)
