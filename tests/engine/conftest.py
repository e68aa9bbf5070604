"""The toy course the engine's class-grading tests share: :data:`tests.engine.toy.LESSON`."""

import shutil
from pathlib import Path

import pytest

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.course.gradebook import ensure_gradebook

from . import toy
from .command_line import run_command_line

# nbgrader's own notebooks are fixtures to grade, never notebooks for nbval to run: one of
# them loops forever on purpose, others fail on purpose
collect_ignore = ["nbgrader_course"]


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


@pytest.fixture(scope="session")
def arrays_template(tmp_path_factory) -> Path:
    """A numpy course with a figure (:data:`~tests.engine.toy.ARRAYS`, assignment
    ``arrays-1``), generated, gradebook made; configured as a careful course is: pages
    without hidden tests' code, a deleted test cell added back when graded."""
    from . import hostile

    course = toy.write_course(
        tmp_path_factory.mktemp("arrays") / "course",
        hostile.ID,
        {hostile.NOTEBOOK: toy.ARRAYS},
        config=toy.HIDE_HIDDEN_TESTS + "c.OverwriteCells.add_missing_cells = True\n",
    )
    generated = run_command_line(["generate", "--course", str(course)], timeout=300)
    assert generated.returncode == 0, generated.stderr
    ensure_gradebook(find_assignment(course))
    return course


@pytest.fixture(scope="session")
def arrays_release(arrays_template: Path):
    """The numpy course's release: what a student starts from."""
    from . import hostile

    return notebook.read(find_assignment(arrays_template).release(hostile.NOTEBOOK))


@pytest.fixture(scope="session")
def arrays_solution(arrays_template: Path):
    """The numpy course's source, its solutions marked as nbgrader marks them."""
    from . import hostile

    return notebook.read(find_assignment(arrays_template).source(hostile.NOTEBOOK))


@pytest.fixture(scope="session")
def hostile_class(tmp_path_factory, arrays_template, arrays_release, arrays_solution):
    """The hostile class (:mod:`tests.engine.hostile`) graded once, as a TA grades it:
    ``{"done", "rows", "before", "after", "heard", "course", "out", "submissions", "ids"}``,
    before and after: the course's instructor files and every submission, hashed."""
    from autograder.pipeline import results

    from . import hostile
    from .listener import Listener

    base = tmp_path_factory.mktemp("hostile")
    course = shutil.copytree(arrays_template, base / "course")
    submissions, out = base / "submissions", base / "grades"
    listener = Listener()
    context = {"course": course, "out": out, "submissions": submissions, "port": listener.port}
    ids = hostile.build_class(submissions, arrays_release, arrays_solution, context)
    Path("/tmp/pwned").unlink(missing_ok=True)

    def watched() -> dict[str, dict[str, str]]:
        instructor = ("source", "release", "nbgrader_config.py")
        files = toy.tree_hash(course)
        return {
            "course": {k: v for k, v in files.items() if k.split("/")[0] in instructor},
            "submissions": toy.tree_hash(submissions),
        }

    before = watched()
    argv = ["grade", str(submissions), "--course", str(course), "--out", str(out),
            "--jobs", "2", "--timeout", hostile.CELL_TIMEOUT]  # fmt: skip
    done = run_command_line(argv, timeout=900)
    listener.stop()
    rows = {row["student_id"]: row for row in results.read_csv(out / "grades.csv")}
    return {
        "done": done, "rows": rows, "before": before, "after": watched(), "heard": listener.heard,
        "course": course, "out": out, "submissions": submissions, "ids": ids,
    }  # fmt: skip
