"""What every graded class must show, whatever its course: checks shared by the hostile
classes (tests/engine/test_hostile.py on a toy course, tests/lab/pipeline/test_grader.py).

Each takes a graded class as its fixture holds it: ``{"done", "rows", "before",
"after", "heard", "course", "out", ...}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook

MEMORY_BOUND = 400  #: MiB the main process and each worker stay under (the README's)


def memory_bounded(graded: dict[str, Any]) -> None:
    """The main process's and the largest worker's peaks, as ``grade`` prints them, are
    each under :data:`MEMORY_BOUND` MiB."""
    said = graded["done"].stdout.splitlines()
    line = next(line for line in said if "peak memory" in line)
    main, worker = (int(word) for word in line.replace(",", " ").split() if word.isdigit())
    assert main < MEMORY_BOUND and worker < MEMORY_BOUND, line


def nothing_changed_outside(graded: dict[str, Any]) -> None:
    """The course's instructor files and every submission are byte-identical after the run,
    nothing was written where the cheats aim, and nothing left where any user may write."""
    assert graded["after"] == graded["before"]
    assert not Path("/tmp/pwned").exists()
    assert "where any user may write" not in graded["done"].stderr


def a_page_for_everyone(graded: dict[str, Any]) -> None:
    """Every student has a feedback page, with a grading note exactly when not ok."""
    for student_id, row in graded["rows"].items():
        page = (graded["out"] / "feedback" / f"{student_id}.html").read_text()
        assert ("Grading note" in page) == (row["status"] != "ok"), student_id


def scores_in_the_gradebook(graded: dict[str, Any], assignment_id: str) -> None:
    """Every row is a submission in the course's gradebook, the honest student's score as
    the CSV's, the written answer left to a TA."""
    rows = graded["rows"]
    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}") as gb:
        submissions = {s.student_id: s for s in gb.assignment_submissions(assignment_id)}
        assert set(submissions) == set(rows)
        honest = submissions["honest"]
        assert honest.score == float(rows["honest"]["score"])
        assert honest.needs_manual_grade
