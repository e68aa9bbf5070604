"""Are the committed generated files exactly what the source generates?"""

import copy

import nbformat
import pytest

from autograder.pipeline.course import notebook
from autograder.tools import generate

from .. import lab


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


@pytest.mark.slow
def test_same_files(regenerated):
    """Does generation produce exactly the committed set of files, no more, no fewer?"""
    assert _generated_files(regenerated) == _generated_files(lab.ROOT), (
        "release/, solutions/ or samples/class/ is stale: run `make generate` and commit"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "relative",
    [lab.RELEASE, lab.SOLUTION, lab.SAMPLE_CLASS / lab.submission_path("ada")],
    ids=["release", "solution", "sample"],
)
def test_notebook_in_sync(regenerated, relative):
    """Does the committed notebook equal the regenerated one, ignoring cell ids?"""
    assert _without_ids(lab.ROOT / relative) == _without_ids(regenerated / relative), (
        f"{relative} differs from what source/ generates: run `make generate` and commit"
    )


@pytest.mark.slow
def test_every_generated_file_in_sync(regenerated):
    """Is every generated file (sample class, helper module) byte-identical but for cell ids?"""
    stale = []
    for relative in _generated_files(regenerated):
        if relative.suffix == ".ipynb":
            same = _without_ids(lab.ROOT / relative) == _without_ids(regenerated / relative)
        else:
            same = (lab.ROOT / relative).read_bytes() == (regenerated / relative).read_bytes()
        if not same:
            stale.append(str(relative))
    assert not stale, f"stale generated files (run `make generate`): {stale}"


@pytest.mark.slow
def test_solution_is_byte_reproducible(regenerated):
    """Is the executed solution byte-for-byte what generation writes, figure and all?"""
    committed = (lab.ROOT / lab.SOLUTION).read_bytes()
    assert committed == (regenerated / lab.SOLUTION).read_bytes()


def test_printed_text_is_one_output_however_it_was_flushed(solution_nb, source_nb):
    """Does a cell's printed text come out the same whether the kernel flushed it once or often?

    On a busy machine the kernel flushes a cell's prints in several stream
    outputs; the solution must be byte-identical all the same.
    """
    split = copy.deepcopy(solution_nb)
    pieces = 0
    for cell in split.cells:
        outputs = []
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and len(output.text) > 1:
                for part in (output.text[:1], output.text[1:]):
                    outputs.append(nbformat.v4.new_output("stream", name=output.name, text=part))
                pieces += 1
            else:
                outputs.append(output)
        if cell.cell_type == "code":
            cell.outputs = outputs
            cell.metadata["execution"] = {"iopub.execute_input": "2026-12-01T02:03:04.5Z"}
    assert pieces > 5
    merged = generate.normalise_solution(split, source_nb)
    expected = generate.normalise_solution(copy.deepcopy(solution_nb), source_nb)
    assert nbformat.writes(merged) == nbformat.writes(expected)
