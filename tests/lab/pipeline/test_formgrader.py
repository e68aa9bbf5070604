"""Can a TA grade the written answer in formgrader and see it in grades.csv and the page?

Formgrader runs as it does for a TA, a Jupyter server on 127.0.0.1 in the
course folder; the test talks to its HTTP API as formgrader's page does.
"""

import nbformat
import pytest

from autograder.pipeline import results
from autograder.pipeline.course import notebook

from ...engine.formgrader import Formgrader
from .. import lab

pytestmark = pytest.mark.slow


def test_manual_grade_round_trip(new_course, tmp_path, release_nb, solution_nb):
    """Grade, list and grade by hand in formgrader, grade again: do CSV and page show it?"""
    course_dir = new_course
    subs, out = tmp_path / "subs", tmp_path / "grades"
    solved = notebook.fill(release_nb, notebook.answers(solution_nb))
    for student in ("ada", "ben"):
        path = subs / lab.submission_path(student)
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(solved))
    assert lab.grade_command(subs, course_dir, out).returncode == 0
    server = Formgrader(course_dir)
    try:
        (assignment,) = server.call("GET", "/formgrader/api/assignments")
        assert assignment["num_submissions"] == 2  # submissions kept where formgrader looks
        notebook_id = lab.NOTEBOOK.removesuffix(".ipynb")
        listed = server.call(
            "GET", f"/formgrader/api/submitted_notebooks/{lab.ASSIGNMENT.id}/{notebook_id}"
        )
        ada = next(s for s in listed if s["student"] == "ada")
        assert ada["needs_manual_grade"]
        grades = server.call("GET", f"/formgrader/api/grades?submission_id={ada['id']}")
        written = next(g for g in grades if g["name"] == "why_not_average")
        server.call("PUT", f"/formgrader/api/grade/{written['id']}", {"manual_score": 1.5})
        comments = server.call("GET", f"/formgrader/api/comments?submission_id={ada['id']}")
        comment = next(c for c in comments if c["name"] == "why_not_average")
        text = "Right idea; say what the average cannot undo."
        server.call("PUT", f"/formgrader/api/comment/{comment['id']}", {"manual_comment": text})
        autograded = server.call(
            "POST", f"/formgrader/api/submission/{lab.ASSIGNMENT.id}/ben/autograde", {}
        )
        assert autograded["success"], autograded  # its Autograde button finds the submission
    finally:
        server.stop()
    again = lab.grade_command(subs, course_dir, out)
    assert again.returncode == 0 and "0 to grade, 2 unchanged" in again.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert (
        rows["ada"]["why_not_average"] == "1.5"
        and float(rows["ada"]["score"]) == lab.AUTOGRADED + 1.5
    )
    assert rows["ben"]["why_not_average"] == ""
    page = (out / "feedback" / "ada.html").read_text()
    assert "what the average cannot undo" in page and "awaiting a TA" not in page
    assert "awaiting a TA" in (out / "feedback" / "ben.html").read_text()
    assert (course_dir / "exchange").is_dir()  # formgrader's exchange, in the course
