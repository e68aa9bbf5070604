"""This course's lab, as the tests know it: the one assignment and its notebook.

The engine in ``autograder/`` knows no lab; the tests of this lab do.
"""

import subprocess
import sys
from pathlib import Path

from autograder.pipeline.course import CONFIG_FILES, ROOT, find_assignment

ASSIGNMENT = find_assignment(ROOT)
NOTEBOOK = ASSIGNMENT.notebooks[0]
SOURCE = ASSIGNMENT.source(NOTEBOOK).relative_to(ROOT)
RELEASE = ASSIGNMENT.release(NOTEBOOK).relative_to(ROOT)
SOLUTION = ASSIGNMENT.solution(NOTEBOOK).relative_to(ROOT)
SAMPLE_CLASS = Path("samples") / "class"
CORPUS = Path("tests") / "corpus" / ASSIGNMENT.id

__all__ = ["CONFIG_FILES", "ROOT"]


def submission_path(student_id: str) -> Path:
    """Where nbgrader keeps a student's notebook, below a submissions folder."""
    return ASSIGNMENT.submission_path(student_id, NOTEBOOK)


def grade_command(submissions: Path, course_dir: Path, out: Path, *extra: str):
    """Run ``python -m autograder grade`` as a TA types it; the completed process."""
    return subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(submissions), "--course", str(course_dir),
         "--out", str(out), "--jobs", "2", *extra],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
