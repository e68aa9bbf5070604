"""Does the engine install on its own and grade a course it knows nothing of?

The wheel is built from this repository and installed into a fresh virtual
environment that has no course in it (its third-party packages are this
environment's, found through a path file, never this repository). A toy
course is written in a temporary folder, and the installed engine grades it,
run in that folder as a TA runs it: the course is data it is pointed at.
"""

import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder import __version__

from . import toy

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
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # The engine's dependencies from this environment; the engine only from the wheel.
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)

    course = toy.write_course(tmp_path / "course", ID)
    # nbgrader runs alembic and jupyter by name: the dependencies' commands, after the env's
    # and their data files (nbconvert's templates), which pip puts under their prefix
    path = {
        "PATH": f"{env / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin",
        "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"),
    }
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
