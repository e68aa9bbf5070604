"""Recording a graded submission: the only code that writes grading results.

It runs in the main process, after the student's process is gone. For each
student it writes the executed notebook where nbgrader keeps autograded work
(``autograded/<student>/08-multi-head/``), saves the scores into the course's
gradebook with nbgrader's own ``SaveAutoGrades`` (so formgrader shows them and
the manual answer can be graded there), and writes the feedback page the worker
rendered (:mod:`autograder.feedback`).
"""

import os
import tempfile
import warnings
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor, SaveAutoGrades
from sqlalchemy.exc import SAWarning

from . import course, feedback


def write_atomic(path, data):
    """Write ``data`` (str or bytes) to ``path`` so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "wb") as out:
        out.write(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


class SaveAutoGradesAtOnce(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades``, in one transaction per student.

    Stock ``SaveAutoGrades`` commits after every cell: slow, and a crash halfway
    leaves a student half-recorded. Here its per-cell commits only flush, and
    the student's scores are committed together, or not at all.
    """

    def preprocess(self, nb, resources):
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.db_url = resources["nbgrader"]["db_url"]
        self.gradebook = Gradebook(self.db_url)
        with self.gradebook:
            session = self.gradebook.db
            session.commit = session.flush
            try:
                nb, resources = NbGraderPreprocessor.preprocess(self, nb, resources)
            except BaseException:
                session.rollback()
                raise
            finally:
                del session.commit
            session.commit()
        return nb, resources


class Recorder:
    """Writes results into one course folder and one output folder."""

    def __init__(self, course_root, db_url, out, config):
        self.root, self.db_url, self.out, self.config = Path(course_root), db_url, Path(out), config
        self.renderer = None  # only needed for results no worker rendered

    def save(self, result, modified=None):
        """Record one :class:`~autograder.worker.Result`; returns the feedback page's path."""
        sid = result.student_id
        with Gradebook(self.db_url) as gb, warnings.catch_warnings():
            # nbgrader's own API trips this SQLAlchemy 2 warning; it is harmless.
            warnings.simplefilter("ignore", SAWarning)
            gb.update_or_create_student(sid)
            gb.update_or_create_submission(course.ASSIGNMENT, sid, timestamp=modified)
        nb = result.notebook
        if nb is not None:
            nb = nbformat.from_dict(nb)
            target = self.root / "autograded" / course.submission_path(sid)
            write_atomic(target, nbformat.writes(nb))
            SaveAutoGradesAtOnce(config=self.config)(
                nb, course.nbgrader_resources(sid, self.db_url)
            )
        else:
            self._zero(sid)
        return self.write_feedback(result, nb)

    def _zero(self, student_id):
        """Every grade of an ungradable submission: 0, and nothing left to grade by hand."""
        with Gradebook(self.db_url) as gb:
            submitted = gb.find_submission_notebook(
                Path(course.NOTEBOOK).stem, course.ASSIGNMENT, student_id
            )
            for grade in submitted.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
            gb.db.commit()

    def write_feedback(self, result, nb):
        """Write ``feedback/<student>.html`` (rendered by the worker, or here if it could not)."""
        html = result.feedback
        if html is None:
            if self.renderer is None:
                self.renderer = feedback.Renderer(self.config)
            html = self.renderer.render(
                result.student_id, nb, result.points, result.status, result.detail
            )
        path = self.out / "feedback" / f"{result.student_id}.html"
        write_atomic(path, html)
        return path


def gradebook_has_assignment(db_url):
    """Has ``nbgrader generate_assignment`` recorded the assignment in this gradebook?"""
    if db_url.startswith("sqlite:///") and not Path(db_url[len("sqlite:///") :]).exists():
        return False
    with Gradebook(db_url) as gb:
        try:
            assignment = gb.find_assignment(course.ASSIGNMENT)
        except MissingEntry:
            return False
        return bool(assignment.notebooks) and any(nb.grade_cells for nb in assignment.notebooks)
