"""Does the grader write the gradebook's rows exactly as nbgrader's own API writes them?

The grader records a student with a few bulk statements
(:mod:`autograder.pipeline.results.rows`); nbgrader records one with
``update_or_create_submission``, ``SaveAutoGrades`` and ``AssignLatePenalties``.
Both record the same class, into two copies of one course, and every row of
both gradebooks is compared (ids aside), then what ``nbgrader export`` reads.
"""

import copy
import shutil
import sqlite3
import warnings
from datetime import datetime

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades
from sqlalchemy.exc import SAWarning

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import Status
from autograder.pipeline.results import Graded, Recorder, rows

pytestmark = pytest.mark.slow  # two courses, recorded twice through nbgrader's own API

DUE = "2026-11-10 00:00:00"
NAME = "toy.ipynb"  #: the toy course's notebook (tests/engine/conftest.py)


def _failing(nb, test_id):
    """``nb`` with the test cell ``test_id`` showing an error, as a failed test does."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if notebook.grade_id(c) == test_id)
    error = nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[])
    cell.outputs = [error]
    return nb


@pytest.fixture(scope="module")
def class_(lesson_solved, lesson_release):
    """``[(student, handed in, notebook or None)]``: solved, late, stubs only, unreadable."""
    wrong = _failing(lesson_solved, "test_count_words")
    return [
        ("ada", datetime(2026, 11, 2, 12), lesson_solved),
        ("ben", datetime(2026, 11, 20, 12), wrong),  # late
        ("cy", None, lesson_release),  # every answer left as released: "No response."
        ("dee", datetime(2026, 11, 3), None),  # nothing readable: every grade 0
    ]


def _course(template, into):
    course_dir = shutil.copytree(template, into)
    with open(course_dir / "nbgrader_config.py", "a") as handle:
        handle.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    assignment = find_assignment(course_dir)
    url = f"sqlite:///{course_dir / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.update_or_create_assignment(assignment.id, duedate=DUE)
    return assignment, url


def _by_nbgrader(assignment, url, class_):
    """Record ``class_`` with nbgrader's API alone, as ``nbgrader autograde`` does."""
    with warnings.catch_warnings(), Gradebook(url) as gb:
        warnings.simplefilter(
            "ignore", SAWarning
        )  # nbgrader's own, harmless (pipeline/course/internals/)
        for student, stamp, _ in class_:
            gb.update_or_create_student(student)
            gb.update_or_create_submission(assignment.id, student, timestamp=stamp)
    for student, _, nb in class_:
        resources = assignment.resources(student, NAME, url)
        if nb is None:
            with Gradebook(url) as gb:
                done = gb.find_submission_notebook(notebook_stem(), assignment.id, student)
                for grade in done.grades:
                    grade.auto_score, grade.needs_manual_grade = 0, False
                gb.db.commit()
            continue
        for step in (SaveAutoGrades(), AssignLatePenalties(config=assignment.config)):
            step.preprocess(copy.deepcopy(nb), resources)


def notebook_stem():
    """The notebook's name as the gradebook keeps it."""
    return NAME.removesuffix(".ipynb")


def _by_the_grader(assignment, url, class_, tmp_path):
    recorder = Recorder(assignment, url, tmp_path / "out", tmp_path / "autograded")
    held = {}
    for student, stamp, nb in class_:
        graded = Graded(student, "x", Status.OK, "", {}, {}, {NAME: nb})
        if nb is not None:
            graded.auto_grades = {NAME: rows.auto_grades(nb)}
        held[student] = recorder.save(graded, stamp)
    recorder.commit()
    recorder.close()
    return held


ROWS = {
    "students": "select id, first_name, last_name, email, lms_user_id from student",
    "submissions": "select a.name, s.student_id, s.timestamp, s.extension "
    "from submitted_assignment s join assignment a on a.id = s.assignment_id",
    "notebooks": "select s.student_id, n.name, sn.flagged, sn.late_submission_penalty "
    "from submitted_notebook sn join notebook n on n.id = sn.notebook_id "
    "join submitted_assignment s on s.id = sn.assignment_id",
    "grades": "select s.student_id, n.name, c.name, c.type, g.auto_score, g.manual_score, "
    "g.extra_credit, g.needs_manual_grade from grade g join base_cell c on c.id = g.cell_id "
    "join submitted_notebook sn on sn.id = g.notebook_id join notebook n on n.id = sn.notebook_id "
    "join submitted_assignment s on s.id = sn.assignment_id",
    "comments": "select s.student_id, n.name, c.name, c.type, m.auto_comment, m.manual_comment "
    "from comment m join base_cell c on c.id = m.cell_id "
    "join submitted_notebook sn on sn.id = m.notebook_id join notebook n on n.id = sn.notebook_id "
    "join submitted_assignment s on s.id = sn.assignment_id",
}


def _rows(url):
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        return {table: sorted(db.execute(query), key=repr) for table, query in ROWS.items()}


def _exported(url, assignment):
    """What ``nbgrader export`` reads of each submission: (score, max score, penalty)."""
    with Gradebook(url) as gb:
        return {
            s.student.id: (s.score, s.max_score, s.late_submission_penalty, s.needs_manual_grade)
            for s in gb.assignment_submissions(assignment.id)
        }


def _grade_by_hand(url, assignment):
    """What a TA does in formgrader: a grade over a test, a comment on an answer."""
    with Gradebook(url) as gb:
        over = gb.find_grade("test_count_words", notebook_stem(), assignment.id, "ben")
        over.manual_score = 1.0
        remark = gb.find_comment("count_words", notebook_stem(), assignment.id, "ada")
        remark.manual_comment = "One call to split: neat."
        gb.db.commit()


def test_the_grader_writes_what_nbgrader_writes(lesson_template, class_, tmp_path, lesson_solved):
    """New students, then the same students graded again after a TA's grading: same rows?"""
    theirs, url_theirs = _course(lesson_template, tmp_path / "nbgrader")
    ours, url_ours = _course(lesson_template, tmp_path / "grader")
    _by_nbgrader(theirs, url_theirs, class_)
    held = _by_the_grader(ours, url_ours, class_, tmp_path)
    assert _rows(url_ours) == _rows(url_theirs)
    assert _exported(url_ours, ours) == _exported(url_theirs, theirs)
    grades = _rows(url_ours)["grades"]
    assert any(row[4] not in (None, 0) for row in grades), "some points were written"
    assert held["ben"] is None, "a late student's penalty is read back, not assumed"
    # what the grader says a new student holds is what the gradebook holds
    for student in ("ada", "cy", "dee"):
        ours_now = {(r[1], r[2]): r[4] for r in grades if r[0] == student}
        assert held[student].grades == ours_now, student

    _grade_by_hand(url_theirs, theirs)
    _grade_by_hand(url_ours, ours)
    worse = _failing(lesson_solved, "test_double")
    again = [(s, t, worse if s == "ada" else nb) for s, t, nb in class_]
    _by_nbgrader(theirs, url_theirs, again)
    held = _by_the_grader(ours, url_ours, again, tmp_path)
    assert _rows(url_ours) == _rows(url_theirs)
    assert _exported(url_ours, ours) == _exported(url_theirs, theirs)
    assert set(held.values()) == {None}, "students graded before are read back"


def test_a_cell_the_gradebook_lacks_writes_nothing(lesson_template, tmp_path, lesson_solved):
    """A graded cell the assignment does not have: refused before any row is written?"""
    assignment, url = _course(lesson_template, tmp_path / "course")
    before = _rows(url)
    recorder = Recorder(assignment, url, tmp_path / "out", tmp_path / "autograded")
    graded = Graded("eve", "x", Status.OK, "", {}, {}, {NAME: lesson_solved})
    graded.auto_grades = {NAME: rows.AutoGrades(scores={"test_nowhere": 1.0})}
    with pytest.raises(KeyError, match="test_nowhere"):
        recorder.save(graded)
    recorder.commit()
    recorder.close()
    assert _rows(url) == before


def test_a_tas_grades_are_looked_up_only_where_a_submission_was(
    lesson_template, class_, tmp_path, monkeypatch
):
    """A class new to the gradebook: no TA grade looked up (none can exist); graded again
    after a TA's grading, each student's looked up and the TA's grade kept; one student
    saved twice by one recorder (graded on submit, twice in a turn): looked up the second
    time. (test_ta_decisions.py follows a TA's grades through regrades end to end.)"""
    from autograder.pipeline.results import ta_grades

    asked = []
    real = ta_grades.graded_by_ta

    def counting(session, assignment, student_id):
        asked.append(student_id)
        return real(session, assignment, student_id)

    monkeypatch.setattr(ta_grades, "graded_by_ta", counting)
    ours, url = _course(lesson_template, tmp_path / "grader")
    _by_the_grader(ours, url, class_, tmp_path)
    assert asked == []
    _grade_by_hand(url, ours)
    _by_the_grader(ours, url, class_, tmp_path)
    assert asked == [student for student, _, _ in class_]
    with Gradebook(url) as gb:
        assert gb.find_grade("test_count_words", notebook_stem(), ours.id, "ben").manual_score == 1
    asked.clear()
    twice = [("eve", None, class_[0][2]), ("eve", None, class_[0][2])]
    _by_the_grader(ours, url, twice, tmp_path)
    assert asked == ["eve"]
