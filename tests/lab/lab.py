"""This course's lab, as the tests know it: the one assignment and its notebook.

The engine in ``autograder/`` knows no lab; the tests of this lab do.
"""

import shutil
from pathlib import Path

from autograder.pipeline.course.assignment import CONFIG_FILES, find_assignment

from ..engine.command_line import Ran, interruptible, run_command_line

ROOT = Path(__file__).resolve().parents[2]  # this repository: the course the tests check

ASSIGNMENT = find_assignment(ROOT)
NOTEBOOK = ASSIGNMENT.notebooks[0]
SOURCE = ASSIGNMENT.source(NOTEBOOK).relative_to(ROOT)
RELEASE = ASSIGNMENT.release(NOTEBOOK).relative_to(ROOT)
SOLUTION = ASSIGNMENT.solution(NOTEBOOK).relative_to(ROOT)
SAMPLE_CLASS = Path("samples") / "class"
CORPUS = Path("corpus") / ASSIGNMENT.id  # the answer corpus and stock's golden file


def _autograded_points() -> float:
    import nbformat

    cells = nbformat.read(ROOT / SOURCE, 4).cells
    meta = [c.metadata.get("nbgrader", {}) for c in cells]
    return sum(m.get("points", 0) for m in meta if m.get("grade") and not m.get("solution"))


AUTOGRADED = _autograded_points()  # the points the tests give: all but the written answer

__all__ = ["CONFIG_FILES", "ROOT", "interruptible"]


def submission_path(student_id: str) -> Path:
    """Where nbgrader keeps a student's notebook, below a submissions folder."""
    return ASSIGNMENT.submission_path(student_id, NOTEBOOK)


def grade_command(
    submissions: Path, course_dir: Path, out: Path, *extra: str, jobs: int = 1
) -> Ran:
    """Run ``python -m autograder grade`` as a TA types it: the completed process, its pid too.

    In a fork of a process that has imported the command line
    (:func:`~tests.engine.command_line.run_command_line`): the same run,
    without the 2 s of imports each run would otherwise start with.
    jobs: one worker unless asked (a class): a worker costs about 2 s of CPU to
    start (its sandbox imports numpy and IPython), more than it saves on the
    few students most tests grade, and the suite's two workers share two cores.
    """
    argv = [
        "grade", str(submissions), "--course", str(course_dir), "--out", str(out),
        "--jobs", str(jobs), *extra,
    ]  # fmt: skip
    return run_command_line(argv, timeout=900)


def copy_course(template: Path, into: Path) -> Path:
    """A new course in ``into``: a copy of ``template`` (the ``course_template`` fixture).

    The template's gradebook already records the assignment, so the first run
    in the copy skips the seconds nbgrader takes to build one.
    """
    shutil.copytree(template, into, symlinks=True)
    return into
