"""nbgrader's own example course and test notebooks, laid out as one course to grade.

Nothing here was written for this engine: ``ps1/`` is nbgrader's documentation
course (problem set 1, students ``bitdiddle`` and ``hacker`` in ``ps1/students``, with its
``jupyter.png`` and its header notebook) and ``files/`` holds nbgrader's test
notebooks (``nbgrader/tests/apps/files``), both copied from nbgrader 0.9.x
under its licence (``LICENSE``). :func:`build` makes a course of them:

- assignment ``ps1``, as nbgrader's docs grade it;
- assignment ``nbtests``: one notebook per test notebook that stock nbgrader
  can generate, each submitted as the variants nbgrader's own tests submit
  (changed, unchanged, cheat attempts, edited grade and read-only cells),
  as the source itself (``solved``) and as the release (``blank``).

``python tests/engine/nbgrader_course/build.py --stock`` grades the course with
stock ``nbgrader autograde`` and writes every cell's points to ``stock.json``,
which ``test_nbgrader_course.py`` compares with the engine's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
FILES = HERE / "files"
STOCK = HERE / "stock.json"
CELL_TIMEOUT = 3  #: seconds: timeout.ipynb sleeps 5, the infinite loops never end

#: nbtests' notebooks: ``{notebook: (source file, {student: submitted file})}``;
#: "source" means the source itself (its answers are the solutions), "release" the
#: release nbgrader generates from it
NBTESTS: dict[str, tuple[str, dict[str, str]]] = {
    "squares.ipynb": ("test.ipynb", {"solved": "source", "blank": "release"}),
    "hidden.ipynb": ("test-hidden-tests.ipynb", {"solved": "source", "blank": "release"}),
    "with_output.ipynb": ("test-with-output.ipynb", {"solved": "source", "blank": "release"}),
    "foo.ipynb": (
        "submitted-unchanged.ipynb",
        {
            "unchanged": "submitted-unchanged.ipynb",
            "changed": "submitted-changed.ipynb",
            "cheat": "submitted-cheat-attempt.ipynb",
            "cheat2": "submitted-cheat-attempt-alternative.ipynb",
            "gradecell": "submitted-grade-cell-changed.ipynb",
            "lockedcell": "submitted-locked-cell-changed.ipynb",
            "blank": "release",
        },
    ),
    "autotest_simple.ipynb": (
        "autotest-simple.ipynb",
        {
            "unchanged": "autotest-simple-unchanged.ipynb",
            "changed": "autotest-simple-changed.ipynb",
            "blank": "release",
        },
    ),
    "autotest_hidden.ipynb": (
        "autotest-hidden.ipynb",
        {
            "unchanged": "autotest-hidden-unchanged.ipynb",
            "changed": "autotest-hidden-changed-wrong.ipynb",
            "right": "autotest-hidden-changed-right.ipynb",
        },
    ),
    "autotest_multi.ipynb": (
        "autotest-multi.ipynb",
        {
            "unchanged": "autotest-multi-unchanged.ipynb",
            "changed": "autotest-multi-changed.ipynb",
        },
    ),
    "autotest_hashed.ipynb": (
        "autotest-hashed.ipynb",
        {
            "unchanged": "autotest-hashed-unchanged.ipynb",
            "changed": "autotest-hashed-changed.ipynb",
        },
    ),
    "open_relative_file.ipynb": ("open_relative_file.ipynb", {"solved": "source"}),
    "side_effects.ipynb": ("side-effects.ipynb", {"solved": "source"}),
    "timeout.ipynb": ("timeout.ipynb", {"solved": "source"}),
    "infinite_loop.ipynb": ("infinite-loop-with-output.ipynb", {"solved": "source"}),
    "environment.ipynb": ("validating-environment-variable.ipynb", {"solved": "source"}),
    "zero_points.ipynb": ("validation-zero-points.ipynb", {"solved": "source", "blank": "release"}),
}

CONFIG = f"""\
c = get_config()
c.CourseDirectory.course_id = "nbgrader_examples"
c.IncludeHeaderFooter.header = "source/header.ipynb"
c.Execute.timeout = {CELL_TIMEOUT}
"""


def nbgrader(
    course: Path, *args: str, python: Path | str = sys.executable, env: dict[str, str] | None = None
) -> None:
    """Run stock nbgrader's command line in ``course``, as a TA types it, with ``python``."""
    command = [str(python), "-m", "nbgrader", *args, "--log-level=ERROR"]
    # nbgrader runs `alembic` from the PATH when it makes a gradebook
    path = os.pathsep.join([str(Path(python).parent), os.environ.get("PATH", "")])
    env = env or {**os.environ, "PATH": path}
    done = subprocess.run(command, cwd=course, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{done.stderr[-3000:]}")


def build(
    into: Path, python: Path | str = sys.executable, env: dict[str, str] | None = None
) -> Path:
    """Lay the course out in ``into`` (a new folder), release both assignments with stock
    ``nbgrader generate_assignment`` (run by ``python``, in ``env``) and place every
    submission; returns ``into``."""
    into.mkdir(parents=True)
    (into / "nbgrader_config.py").write_text(CONFIG)
    shutil.copy(FILES / "autotests.yml", into / "autotests.yml")
    shutil.copytree(HERE / "ps1" / "source", into / "source")
    source = into / "source" / "nbtests"
    source.mkdir()
    for name, (file, _) in NBTESTS.items():
        shutil.copy(FILES / file, source / name)
    shutil.copy(FILES / "data.txt", source / "data.txt")
    for assignment in ("ps1", "nbtests"):
        nbgrader(into, "generate_assignment", assignment, "--force", python=python, env=env)
    shutil.copytree(HERE / "ps1" / "students", into / "submitted")
    for name, (_, students) in NBTESTS.items():
        for student, file in students.items():
            folder = into / "submitted" / student / "nbtests"
            folder.mkdir(parents=True, exist_ok=True)
            origin = {"source": source / name, "release": into / "release" / "nbtests" / name}
            shutil.copy(origin.get(file, FILES / file), folder / name)
    return into


def scores(course: Path) -> dict[str, float]:
    """``{"assignment/student/notebook/cell": points}`` for every graded cell the course's
    gradebook holds, read with nbgrader's own API."""
    from nbgrader.api import Gradebook

    found: dict[str, float] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                for nb in submission.notebooks:
                    for grade in nb.grades:
                        key = f"{assignment.name}/{submission.student.id}/{nb.name}/{grade.name}"
                        found[key] = float(grade.score)
    return dict(sorted(found.items()))


def stock_scores() -> dict[str, float]:
    """The course graded by stock ``nbgrader autograde``, every cell's points."""
    with tempfile.TemporaryDirectory() as scratch:
        course = build(Path(scratch) / "course")
        for assignment in ("ps1", "nbtests"):
            nbgrader(course, "autograde", assignment, "--force")
        return scores(course)


if __name__ == "__main__":
    if sys.argv[1:] != ["--stock"]:
        sys.exit("usage: python tests/engine/nbgrader_course/build.py --stock")
    STOCK.write_text(json.dumps(stock_scores(), indent=1) + "\n")
    print(f"wrote {STOCK}")
