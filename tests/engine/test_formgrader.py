"""Can a TA grade the written answer in formgrader and see it in grades.csv and the page?

Formgrader runs as it does for a TA, a Jupyter server on 127.0.0.1 in the
course folder; the test talks to its HTTP API as formgrader's page does.
"""

from pathlib import Path

import nbformat
import pytest

from autograder.pipeline import results

from . import toy
from .command_line import run_command_line
from .formgrader import Formgrader

ID = "toy-1"  #: the toy course's assignment (tests/engine/conftest.py)


def grade(subs, course_dir, out):
    """``python -m autograder grade`` on one worker, as a TA types it."""
    argv = ["grade", str(subs), "--course", str(course_dir), "--out", str(out), "--jobs", "1"]
    return run_command_line(argv, timeout=900)


pytestmark = pytest.mark.slow


def test_manual_grade_round_trip(lesson_course, tmp_path, lesson_solved):
    """Grade, list and grade by hand in formgrader, grade again: do CSV and page show it?"""
    course_dir = lesson_course
    with open(course_dir / "nbgrader_config.py", "a") as handle:  # the course's own exchange
        handle.write(f"\nc.Exchange.root = {str(course_dir / 'exchange')!r}\n")
    subs, out = tmp_path / "subs", tmp_path / "grades"
    solved = lesson_solved
    for student in ("ada", "ben"):
        path = subs / Path(student) / ID / "toy.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(solved))
    assert grade(subs, course_dir, out).returncode == 0
    server = Formgrader(course_dir)
    try:
        (assignment,) = server.call("GET", "/formgrader/api/assignments")
        assert assignment["num_submissions"] == 2  # submissions kept where formgrader looks
        notebook_id = "toy"
        listed = server.call("GET", f"/formgrader/api/submitted_notebooks/{ID}/{notebook_id}")
        ada = next(s for s in listed if s["student"] == "ada")
        assert ada["needs_manual_grade"]
        grades = server.call("GET", f"/formgrader/api/grades?submission_id={ada['id']}")
        written = next(g for g in grades if g["name"] == "why_double")
        server.call("PUT", f"/formgrader/api/grade/{written['id']}", {"manual_score": 1.5})
        comments = server.call("GET", f"/formgrader/api/comments?submission_id={ada['id']}")
        comment = next(c for c in comments if c["name"] == "why_double")
        text = "Right idea; say why two times two is four."
        server.call("PUT", f"/formgrader/api/comment/{comment['id']}", {"manual_comment": text})
        autograded = server.call("POST", f"/formgrader/api/submission/{ID}/ben/autograde", {})
        assert autograded["success"], autograded  # its Autograde button finds the submission
    finally:
        server.stop()
    again = grade(subs, course_dir, out)
    assert again.returncode == 0 and "0 to grade, 2 unchanged" in again.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert (
        rows["ada"]["why_double"] == "1.5"
        and float(rows["ada"]["score"]) == toy.LESSON_POINTS + 1.5
    )
    assert rows["ben"]["why_double"] == ""
    page = (out / "feedback" / "ada.html").read_text()
    assert "why two times two is four" in page and "awaiting a TA" not in page
    assert "awaiting a TA" in (out / "feedback" / "ben.html").read_text()
    assert (course_dir / "exchange").is_dir()  # formgrader's exchange, where the course says
