"""Are the committed generated files exactly what the source generates?"""

import pytest

from autograder.pipeline import notebook

from .. import lab as course

pytestmark = pytest.mark.slow


def _without_ids(path):
    nb = notebook.read(path)
    for cell in nb.cells:
        cell.pop("id", None)
    return nb


def _generated_files(root):
    return sorted(
        p.relative_to(root)
        for folder in ("release", "solutions", "samples/class")
        for p in (root / folder).rglob("*")
        if p.is_file()
    )


def test_same_files(regenerated):
    """Does generation produce exactly the committed set of files, no more, no fewer?"""
    assert _generated_files(regenerated) == _generated_files(course.ROOT), (
        "release/, solutions/ or samples/class/ is stale: run `make generate` and commit"
    )


@pytest.mark.parametrize(
    "relative",
    [course.RELEASE, course.SOLUTION, course.SAMPLE_CLASS / course.submission_path("ada")],
    ids=["release", "solution", "sample"],
)
def test_notebook_in_sync(regenerated, relative):
    """Does the committed notebook equal the regenerated one, ignoring cell ids?"""
    assert _without_ids(course.ROOT / relative) == _without_ids(regenerated / relative), (
        f"{relative} differs from what source/ generates: run `make generate` and commit"
    )


def test_every_generated_file_in_sync(regenerated):
    """Is every generated file (sample class, helper module) byte-identical but for cell ids?"""
    stale = []
    for relative in _generated_files(regenerated):
        if relative.suffix == ".ipynb":
            same = _without_ids(course.ROOT / relative) == _without_ids(regenerated / relative)
        else:
            same = (course.ROOT / relative).read_bytes() == (regenerated / relative).read_bytes()
        if not same:
            stale.append(str(relative))
    assert not stale, f"stale generated files (run `make generate`): {stale}"


def test_solution_is_byte_reproducible(regenerated):
    """Is the executed solution byte-for-byte what generation writes, figure and all?"""
    committed = (course.ROOT / course.SOLUTION).read_bytes()
    assert committed == (regenerated / course.SOLUTION).read_bytes()
