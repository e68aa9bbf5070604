"""Can a student self-check with only the release folder, and does it tell the truth?

``python self_check.py`` (shipped in the release) and ``python -m autograder
check`` (in the repository) are the same code: the first is run here in a fresh
virtual environment holding only what a student has (a Jupyter kernel and
runner, numpy) and a folder holding only the release's files.
"""

import re
import shutil
import subprocess
import sys
import venv

import nbformat
import pytest

from autograder.pipeline.course import notebook
from autograder.tools import corpus, self_check

from ...engine.command_line import run_command_line
from .. import lab

ANSWERS = list(notebook.answers(notebook.read(lab.ROOT / lab.RELEASE)))

STUDENT_PACKAGES = ["numpy", "ipykernel", "nbclient"]


def _check(path, *extra):
    return run_command_line(["check", str(path), *extra], timeout=300)


@pytest.fixture(scope="module")
def student_python(tmp_path_factory):
    """A fresh virtual environment with only the student packages; its python."""
    folder = tmp_path_factory.mktemp("student-venv")
    venv.create(folder)  # no pip of its own: ours installs into it (ensurepip costs seconds)
    python = folder / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--disable-pip-version-check",
         "--no-compile", "--constraint", str(lab.ROOT / "constraints.txt"),
         *STUDENT_PACKAGES],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    gone = subprocess.run([str(python), "-c", "import autograder, nbgrader"], capture_output=True)
    assert gone.returncode != 0, "the student environment must not have the grader"
    return python


def _student_folder(tmp_path, notebook_from):
    """A folder like a student's: the release's files, the notebook from ``notebook_from``."""
    folder = tmp_path / "my-lab"
    shutil.copytree((lab.ROOT / lab.RELEASE).parent, folder)
    shutil.copyfile(notebook_from, folder / lab.NOTEBOOK)
    return folder


@pytest.mark.slow
@pytest.mark.venv
@pytest.mark.parametrize("student, status", [("ada", 0), ("dara", 1)], ids=["solved", "wrong-axis"])
def test_self_check_with_only_the_release(student_python, tmp_path, student, status):
    """In a student's folder and environment, does self_check.py say the truth and exit right?"""
    folder = _student_folder(tmp_path, lab.ROOT / lab.SAMPLE_CLASS / lab.submission_path(student))
    done = subprocess.run(
        [str(student_python), "self_check.py"], cwd=folder, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == status, done.stdout + done.stderr
    assert "hidden tests run when your notebook is graded" in done.stdout.lower()
    assert done.stderr == "", done.stderr
    if status == 0:
        assert "ready to submit" in done.stdout
    else:
        line = next(line for line in done.stdout.splitlines() if line.startswith("concat_heads"))
        assert "failing" in line and "axis" in line and "(24, 2)" in line
        # the demo cells that use the broken glue fail too: named after it, not as the cause
        assert "Fix that first" not in done.stdout
        assert "Cells that use those answers fail too" in done.stdout


@pytest.mark.slow
@pytest.mark.venv
def test_a_crash_is_explained_in_a_students_own_environment(student_python, tmp_path):
    """Without the engine installed, does a crash read as on the page: the student's line,
    its operands and the rule they broke (from crash_reasons.py beside the notebook), once?"""

    entry = corpus.load_corpus(lab.ROOT / lab.CORPUS)["mistakes/blend_values_first"]
    release, solution = (
        notebook.read(lab.ROOT / lab.RELEASE),
        notebook.read(lab.ROOT / lab.SOLUTION),
    )
    crashing = tmp_path / "crashing.ipynb"
    notebook.write(corpus.build({"crash": entry}, release, solution)["crash"], crashing)
    folder = _student_folder(tmp_path, crashing)
    done = subprocess.run(
        [str(student_python), "self_check.py"], cwd=folder, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    said = "values @ weights: values is a (2, 3) array of floats; weights is a (2,) array"
    assert done.stdout.count(said) == 1, done.stdout
    assert "Why: a matrix product lines up the left's last axis with the right's only axis" in (
        done.stdout
    )


@pytest.mark.slow
def test_untouched_release_is_not_attempted():
    """Is every answer of the untouched release reported as not attempted, exit 1?"""
    done = _check(lab.ROOT / lab.RELEASE)
    assert done.returncode == 1
    assert done.stdout.count("not attempted") == len(ANSWERS)


@pytest.mark.slow  # starts the command line
def test_unreadable_file(tmp_path):
    """Is a broken file refused in one line, exit 2, without running anything?"""
    path = tmp_path / lab.NOTEBOOK
    path.write_text('{"cells": [')
    done = _check(path)
    assert done.returncode == 2 and "not valid JSON" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert _check(tmp_path / "gone.ipynb").returncode == 2


def _executed(release_nb, outputs):
    """The release as if run: ``outputs`` maps a cell's grade_id to its error message."""
    nb = nbformat.from_dict(release_nb)
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in outputs:
            cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError",
                                                   evalue=outputs[gid], traceback=[])]  # fmt: skip
    return nb


def test_verdicts(release_nb, solution_nb):
    """Done, failing (with the message), not attempted, missing: each where it belongs."""
    stubs = {k: v for k, v in self_check_stubs(release_nb).items()}
    nb = _executed(
        solution_nb, {"test_concat_heads": "glued along axis 0", "test_blend_hidden": "x"}
    )
    nb.cells = [
        c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "head"
    ]
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "count_params":
            cell.source = stubs["count_params"]
    found = self_check.verdicts(nb, stubs)
    assert found["concat_heads"] == ("failing", "AssertionError: glued along axis 0")
    assert found["head"][0] == "missing"
    assert found["count_params"] == ("not attempted", "")
    assert found["multi_head"] == ("done", "")


def self_check_stubs(release_nb):
    """``{answer id: stub}`` as the release's self_check.py has them written in."""
    text = (lab.ROOT / lab.RELEASE).with_name("self_check.py").read_text()
    namespace = {}
    exec(compile(text, "self_check.py", "exec"), namespace)
    return namespace["ASSIGNMENT"]["notebooks"][lab.NOTEBOOK]


def test_shipped_stubs_are_the_release(release_nb):
    """Does the shipped self-check know exactly the release's answers and stubs?"""
    from autograder.pipeline.course import notebook

    assert self_check_stubs(release_nb) == notebook.answers(release_nb)


@pytest.mark.slow
def test_failed_check_ends_with_its_message(tmp_path, release_nb):
    """In Jupyter, does a failing visible test show the test's line and the message, no helper?"""
    from nbclient import NotebookClient

    folder = _student_folder(tmp_path, lab.ROOT / lab.SAMPLE_CLASS / lab.submission_path("dara"))
    nb = nbformat.read(folder / lab.NOTEBOOK, as_version=4)
    NotebookClient(nb, allow_errors=True, resources={"metadata": {"path": str(folder)}}).execute()
    by_id = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    error = by_id["test_concat_heads"].outputs[-1]
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert "lab_checks.py" not in shown and "Cell In[" in shown, shown
    assert shown.strip().splitlines()[-1].startswith("AssertionError: concat_heads of four")
    for cell in nb.cells:  # a hidden test's placeholder prints nothing
        if "# Hidden test:" in cell.source:
            assert cell.outputs == [], cell.source


def _with_error(nb, grade_id, ename, evalue):
    """``nb`` with the cell ``grade_id`` (or the first code cell of that id) ending in an error."""
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            cell.outputs = [nbformat.v4.new_output("error", ename=ename, evalue=evalue,
                                                   traceback=[])]  # fmt: skip
            return nb
    raise AssertionError(f"no cell {grade_id}")


@pytest.mark.parametrize(
    "module, fix",
    [
        ("numpy", "install numpy where Jupyter runs (pip install numpy)"),
        ("lab_checks", "keep lab_checks.py (from the release folder) beside the notebook"),
    ],
)
def test_a_failing_setup_cell_is_named_with_its_fix(solution_nb, release_nb, capsys, module, fix):
    """Without numpy, or away from lab_checks.py: the setup cell and the fix come first?"""
    stubs = self_check_stubs(release_nb)
    nb = _with_error(
        nbformat.from_dict(solution_nb), "setup", "ModuleNotFoundError",
        f"No module named '{module}'",
    )  # fmt: skip
    helpers = (lab.ROOT / lab.RELEASE).parent
    broken = self_check.broken_cells(nb, stubs, helpers)
    assert len(broken) == 1 and "(setup) fails: ModuleNotFoundError" in broken[0]
    assert broken[0].endswith(fix) or fix in broken[0], broken
    assert self_check.report(self_check.verdicts(nb, stubs), broken) == 1
    shown = capsys.readouterr().out
    assert shown.startswith(broken[0]) and "ready to submit" not in shown.replace("not ready", "")


def test_any_failing_cell_means_not_ready(solution_nb, release_nb, capsys):
    """Every answer done, but a lab cell after them fails: not ready, and the cell named?"""
    stubs = self_check_stubs(release_nb)
    nb = nbformat.from_dict(solution_nb)
    lab_cells = [
        n for n, c in enumerate(nb.cells, 1)
        if c.cell_type == "code" and not c.get("metadata", {}).get("nbgrader")
    ]  # fmt: skip
    cell = nb.cells[lab_cells[-1] - 1]
    cell.outputs = [nbformat.v4.new_output("error", ename="AttributeError",
                                           evalue="'list' object has no attribute 'shape'",
                                           traceback=[])]  # fmt: skip
    broken = self_check.broken_cells(nb, stubs)
    headings = [
        line.lstrip("#").strip()
        for c in nb.cells[: lab_cells[-1]] if c.cell_type == "markdown"
        for line in c.source.splitlines() if line.startswith("#")
    ]  # fmt: skip
    calls = [
        f for f in ("multi_head", "batched_heads", "attention_weights") if f"{f}(" in cell.source
    ]
    (line,) = broken
    assert line.startswith(f'the cell under "{headings[-1]}" fails: AttributeError: ')
    assert "cell " + str(lab_cells[-1]) not in line  # Jupyter shows no cell numbers
    assert calls and f"it calls your {calls[0]}" in line, line
    assert self_check.report(self_check.verdicts(nb, stubs), broken) == 1
    assert "not ready to submit" in capsys.readouterr().out


@pytest.mark.slow
def test_a_renamed_notebook_is_checked_with_a_reminder(tmp_path):
    """multi_head-Copy1.ipynb, the only notebook in the folder: checked, and told to rename?"""
    folder = tmp_path / "release"
    shutil.copytree((lab.ROOT / lab.RELEASE).parent, folder)
    (folder / lab.NOTEBOOK).rename(folder / "multi_head-Copy1.ipynb")
    done = subprocess.run(
        [sys.executable, "self_check.py"], cwd=folder, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # the untouched release: not done
    assert f"note: checking multi_head-Copy1.ipynb; rename it {lab.NOTEBOOK}" in done.stdout
    assert done.stdout.count("not attempted") == len(ANSWERS)


def test_a_python_without_jupyter_is_told_what_to_install():
    """Run by a Python that has no Jupyter: one line naming what to install, no traceback?"""
    shipped = (lab.ROOT / lab.RELEASE).with_name("self_check.py")
    # -S: no site-packages, so none of Jupyter, as a bare system Python has
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(shipped)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr, done.stderr
    (line,) = done.stdout.strip().splitlines()
    assert "no Jupyter" in line and "pip install jupyter" in line


#: Every corpus mistake the diagnosis family (lab_diagnoses.py) names: a changed scale,
#: mask, fill or axis, state kept between calls, arguments swapped, another reduction,
#: heads split or put back another way. Graded by the real grader in test_corpus.py.
FAMILY = [
    *(f"mistakes/{name}" for name in (
        "no_scale", "scale_d_model", "scale_no_sqrt", "scale_lab_only", "scale_sqrt_T",
        "no_mask", "mask_past", "mask_diagonal", "mask_fill_zero", "softmax_columns",
        "softmax_no_keepdims", "mask_after_softmax", "swapped_qk", "weights_cached_by_T",
        "tv_no_half", "tv_columns", "tv_squared", "tv_mean", "tv_largest_gap",
        "batched_no_transpose", "batched_interleaved", "batched_d_model_scale",
        "batched_reshape_back", "batched_qk_swapped",
    )),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILY)
def test_each_named_variant_is_not_ready(tmp_path, release_nb, solution_nb, name):
    """Through self_check as a student runs it: is the variant's answer failing, never ready?"""
    entries = corpus.load_corpus(lab.ROOT / lab.CORPUS)
    entry = entries[name]
    handed_in = tmp_path / "handed-in.ipynb"
    notebook.write(corpus.build({name: entry}, release_nb, solution_nb)[name], handed_in)
    folder = _student_folder(tmp_path, handed_in)
    done = _check(folder / lab.NOTEBOOK)
    assert done.returncode == 1 and "not ready to submit" in done.stdout, done.stdout
    for answer in entry.loses:
        line = next(line for line in done.stdout.splitlines() if line.startswith(answer + " "))
        assert "failing" in line, (entry.what, line)
