"""Fixtures shared by the course tests: the notebooks, regenerated and graded once."""

import tempfile
from pathlib import Path

import pytest

from autograder import course, generate, notebook


@pytest.fixture(scope="session")
def source_nb():
    """The instructor's source notebook."""
    return notebook.read(course.ROOT / course.SOURCE)


@pytest.fixture(scope="session")
def release_nb():
    """The committed student notebook."""
    return notebook.read(course.ROOT / course.RELEASE)


@pytest.fixture(scope="session")
def regenerated():
    """A folder holding release/, solutions/ and samples/ freshly generated from source/."""
    with tempfile.TemporaryDirectory(prefix="regenerated-") as out:
        generate.generate(course.ROOT, out)
        yield Path(out)
