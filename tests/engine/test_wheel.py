"""Does the engine install on its own and grade a course it knows nothing of?

The wheel is built from this repository and installed with pip into a fresh
virtual environment, with its declared dependencies and nothing else: the
engine then lives in site-packages beside everything it imports, as for any
user. A toy course is written in a temporary folder, and the installed engine
grades it, run in that folder as a TA runs it: the course is data it is
pointed at; with pandas installed beside it, it grades a data course whose
answers return DataFrames. With a package its sandbox needs taken away, a run
stops at once, in one line.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import pytest

from autograder import __version__

from . import test_data_course as data
from . import toy
from .nbgrader_course import build as nbgrader_course

REPOSITORY = Path(__file__).resolve().parents[2]  # where the engine's source is

pytestmark = [pytest.mark.slow, pytest.mark.venv]

ID = "toy-1"
SOLUTION = "def double(v):\n    return 2 * v"  #: toy.DOUBLE's answer, solved


@pytest.fixture
def readable():
    """A folder any user may read (pytest's own are its owner's alone), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="engine-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_engine_installs_alone_and_grades_a_toy_course(tmp_path, readable):
    """Wheel without course files; fresh environment; grades the course it is run in?"""
    dist, src = tmp_path / "dist", tmp_path / "src"  # built apart: nothing else of the course
    shutil.copytree(
        REPOSITORY / "autograder", src / "autograder", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPOSITORY / "pyproject.toml", src / "pyproject.toml")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(src)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert all(n.startswith(("autograder/", "nbgrader_sandboxed_autograder-")) for n in names)
    # nothing of this repository's course: its folders, notebooks and helper files
    helpers = {p.name for p in (REPOSITORY / "source").rglob("*.py")}
    course_words = (".ipynb", "source/", "release/", "solutions/", "corpus/", *helpers)
    assert not [n for n in names if any(word in n for word in course_words)]

    env = readable / "env"  # as a real install is: any user may read it
    # Without a pip of its own (ensurepip costs seconds): this pip installs into it.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    # The wheel and what it declares, nothing else: pip resolves them as for any user
    # (the exact versions make setup pins, so pip's cache serves them). --no-compile: pip
    # need not byte-compile the whole stack (a fifth of the install); Python compiles what
    # the run imports.
    installed = subprocess.run(
        [*_pip(python), "install", "--quiet", "--no-compile", "--constraint",
         str(REPOSITORY / "constraints.txt"), str(wheel)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip

    course = toy.write_course(tmp_path / "course", ID)
    path = {"PATH": f"{env / 'bin'}:/usr/bin:/bin"}  # nbgrader runs alembic and jupyter by name
    where = subprocess.run(
        [str(python), "-m", "autograder", "--version"], capture_output=True, text=True,
        cwd=course, timeout=60,
    )  # fmt: skip
    assert where.stdout.strip() == f"python -m autograder {__version__}", where.stderr
    located = subprocess.run(
        [str(python), "-c", "import autograder; print(autograder.__file__)"],
        capture_output=True, text=True, cwd=course, check=True,
    ).stdout.strip()  # fmt: skip
    assert located.startswith(site), located  # never this repository's copy

    generated = subprocess.run(
        [str(python), "-m", "nbgrader", "generate_assignment", ID], cwd=course,
        capture_output=True, text=True, timeout=300, env=path,
    )  # fmt: skip
    assert generated.returncode == 0, generated.stderr[-3000:]
    release = nbformat.read(course / "release" / ID / "toy.ipynb", 4)
    for cell in release.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "double":
            cell.source = SOLUTION
    handed_in = tmp_path / "submissions" / "ada" / ID / "toy.ipynb"
    handed_in.parent.mkdir(parents=True)
    nbformat.write(release, handed_in)

    graded = subprocess.run(
        [str(python), "-m", "autograder", "grade", str(tmp_path / "submissions"), "--jobs", "1"],
        cwd=course, capture_output=True, text=True, timeout=300,
        env=path,
    )  # fmt: skip
    assert graded.returncode == 0, graded.stderr[-3000:]
    row = (course / "grades" / "grades.csv").read_text().splitlines()[1].split(",")
    assert row[:4] == ["ada", "3", "3", "ok"], row
    _gradescope_bundle(python, course, tmp_path, path)
    _data_course(python, tmp_path, path)
    _nbgrader_course(python, tmp_path, path)

    # A sandbox that cannot start (the course's warm-up ends its process): one line, exit 2.
    config = course / "nbgrader_config.py"
    kept = config.read_text()
    config.write_text(kept + 'c.Autograder.warm_up = "import os\\nos._exit(3)"\n')
    assert "the sandbox could not start" in _refused(python, course, tmp_path, path)
    config.write_text(kept)

    # An installation missing a package the engine needs: one line naming it, exit 2, no grades.
    removed = subprocess.run(
        [*_pip(python), "uninstall", "--quiet", "--yes", "ipython"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    assert "pip install ipython" in _refused(python, course, tmp_path, path)


def _pip(python: Path) -> list[str]:
    """This environment's pip, working on the environment of ``python``."""
    return [sys.executable, "-m", "pip", "--python", str(python)]


def _refused(python: Path, course: Path, tmp_path: Path, path: dict[str, str]) -> str:
    """Grade the class with the installed engine, expecting a refusal: exit status 2, one
    error line and no traceback, no grades written. The error line."""
    broken = subprocess.run(
        [str(python), "-m", "autograder", "grade", str(tmp_path / "submissions"), "--jobs", "1",
         "--out", "broken"],
        cwd=course, capture_output=True, text=True, timeout=300, env=path,
    )  # fmt: skip
    said = [line for line in broken.stderr.splitlines() if "error:" in line]
    assert broken.returncode == 2 and len(said) == 1, broken.stderr[-3000:]
    assert "Traceback" not in broken.stderr
    assert not (course / "broken" / "grades.csv").exists()
    return said[0]


def _bundle(
    python: Path, course: Path, root: Path, path: dict[str, str], *options: str
) -> list[str]:
    """``python -m autograder gradescope`` in ``course``, unpacked into ``root/source`` as
    Gradescope unpacks it; the names the zip holds."""
    built = subprocess.run(
        [str(python), "-m", "autograder", "gradescope", "--out", str(root / "zip"), *options],
        cwd=course, capture_output=True, text=True, timeout=300, env=path,
    )  # fmt: skip
    assert built.returncode == 0 and "Traceback" not in built.stderr, built.stderr[-3000:]
    with zipfile.ZipFile(root / "zip" / "autograder.zip") as archive:
        archive.extractall(root / "source")
        return archive.namelist()


def _run_bundle(python: Path, root: Path, path: dict[str, str], files: list[Path]) -> Any:
    """Run the unpacked bundle in ``root`` on ``files``, as Gradescope does; results.json."""
    runner = root / "run_autograder"
    shutil.copy(root / "source" / "run_autograder", runner)
    runner.chmod(0o755)
    (root / "submission").mkdir()
    for file in files:
        shutil.copy(file, root / "submission")
    env = {**path, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": str(python)}
    ran = subprocess.run(
        [str(runner)], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


def _gradescope_bundle(python: Path, course: Path, tmp_path: Path, path: dict[str, str]) -> None:
    """The installed engine bundles the toy course for Gradescope (the engine pinned from what
    is installed, nothing of this lab), and the bundle grades a submission."""
    root = tmp_path / "gradescope"
    names = _bundle(python, course, root, path)
    source = REPOSITORY / "source"  # this repository's course: its files, its assignment ids
    lab = {p.name for p in source.rglob("*") if p.is_file()} | {p.name for p in source.iterdir()}
    assert not [n for n in names if set(Path(n).parts) & lab], names
    assert f"course/source/{ID}/toy.ipynb" in names and "course/autograder/cli.py" in names
    project = (root / "source" / "course" / "pyproject.toml").read_text()
    assert 'name = "nbgrader-sandboxed-autograder"' in project and "nbgrader<0.9.7" in project
    pins = (root / "source" / "course" / "constraints.txt").read_text()
    assert "\nnbgrader==0.9.6\n" in pins and "\nnumpy==" in pins
    result = _run_bundle(python, root, path, [tmp_path / "submissions" / "ada" / ID / "toy.ipynb"])
    assert result["score"] == 3, result


def _nbgrader_course(python: Path, tmp_path: Path, path: dict[str, str]) -> None:
    """nbgrader's own example course and test notebooks (``nbgrader_course/``), graded by the
    installed engine as a TA runs it: every cell's points equal stock nbgrader's on the same
    course (``stock.json``), with no traceback and no warning about notebooks that are where
    nbgrader keeps them; and the docs course's Gradescope bundle (its header notebook too)
    gives hacker stock's score."""
    course = nbgrader_course.build(tmp_path / "nbgrader", python, path)
    for assignment in ("ps1", "nbtests"):
        graded = subprocess.run(
            [str(python), "-m", "autograder", "grade", "submitted", "--assignment", assignment],
            cwd=course, capture_output=True, text=True, timeout=600, env=path,
        )  # fmt: skip
        assert graded.returncode == 0, graded.stderr[-3000:]
        assert "Traceback" not in graded.stderr and "warning:" not in graded.stderr, graded.stderr
    stock = json.loads(nbgrader_course.STOCK.read_text())
    ours = nbgrader_course.scores(course)
    assert {k: v for k, v in ours.items() if v != stock.get(k)} == {}
    assert sorted(ours) == sorted(stock)
    root = tmp_path / "gradescope-ps1"
    _bundle(python, course, root, path, "--assignment", "ps1")
    hacker = sorted((course / "submitted" / "hacker" / "ps1").glob("*.ipynb"))
    result = _run_bundle(python, root, path, hacker)
    assert result["score"] == sum(v for k, v in stock.items() if k.startswith("ps1/hacker/"))


def _data_course(python: Path, tmp_path: Path, path: dict[str, str]) -> None:
    """With pandas installed beside it, the installed engine grades the data course too."""
    added = subprocess.run(
        [*_pip(python), "install", "--quiet", "--no-compile", "--constraint",
         str(REPOSITORY / "constraints.txt"), "pandas"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr[-3000:]
    course = toy.write_course(tmp_path / "data", data.ID, {"data.ipynb": data.CELLS})
    for student, source in data.STUDENTS.items():
        cells = [toy.cell(source, "top", "answer"), *data.CELLS[1:]]
        toy.write_notebook(cells, tmp_path / "data-subs" / student / data.ID / "data.ipynb")
    for argv in (["generate"], ["grade", str(tmp_path / "data-subs"), "--jobs", "1"]):
        done = subprocess.run(
            [str(python), "-m", "autograder", *argv],
            cwd=course, capture_output=True, text=True, timeout=300, env=path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    rows = {
        r.split(",")[0]: r.split(",")
        for r in (course / "grades" / "grades.csv").read_text().splitlines()[1:]
    }
    assert rows["right"][1:4] == ["2", "2", "ok"] and rows["wrong"][1] == "0", rows
