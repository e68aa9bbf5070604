"""Recording a graded submission: the only code that writes grading results.

It runs in the main process, after the student's process is gone. For each
student it writes the executed notebook where nbgrader keeps autograded work
(``autograded/<student>/08-multi-head/``), saves the scores into the course's
gradebook with nbgrader's own ``SaveAutoGrades`` (so formgrader shows them and
the manual answer can be graded there), and writes the feedback page the worker
rendered (:mod:`autograder.feedback`).
"""

import contextlib
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


class SaveAutoGradesTo(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades``, writing through a gradebook it is given.

    Stock ``SaveAutoGrades`` opens a gradebook of its own for every notebook;
    the :class:`Recorder` keeps one open for the whole class, inside the
    student's transaction.
    """

    def __init__(self, gradebook, **kwargs):
        super().__init__(**kwargs)
        self.given = gradebook

    def preprocess(self, nb, resources):
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.db_url = resources["nbgrader"]["db_url"]
        self.gradebook = self.given
        return NbGraderPreprocessor.preprocess(self, nb, resources)


class Recorder:
    """Writes results into one course folder and one output folder.

    One gradebook connection serves the whole class, so SQLAlchemy compiles
    nbgrader's queries once rather than once per student. Call :meth:`close`
    when done.
    """

    def __init__(self, course_root, db_url, out, config):
        self.root, self.db_url, self.out, self.config = Path(course_root), db_url, Path(out), config
        self.renderer = None  # only needed for results no worker rendered
        self.gradebook = Gradebook(db_url)

    def close(self):
        """Close the gradebook connection."""
        self.gradebook.close()

    @contextlib.contextmanager
    def transaction(self):
        """The gradebook, in which one student's changes commit together or not at all.

        nbgrader's API commits after every change it makes (every student,
        submission and grade): slow, and a crash halfway would leave a student
        half-recorded. Inside this block those commits only flush.
        """
        session = self.gradebook.db
        session.commit = session.flush
        try:
            with warnings.catch_warnings():
                # nbgrader's own API trips this SQLAlchemy 2 warning; it is harmless.
                warnings.simplefilter("ignore", SAWarning)
                yield self.gradebook
        except BaseException:
            session.rollback()
            raise
        finally:
            del session.commit
        session.commit()

    def save(self, result, modified=None):
        """Record one :class:`~autograder.worker.Result`; returns the feedback page's path."""
        sid = result.student_id
        nb = None if result.notebook is None else nbformat.from_dict(result.notebook)
        if nb is not None:
            target = self.root / "autograded" / course.submission_path(sid)
            write_atomic(target, nbformat.writes(nb))
        with self.transaction() as gb:
            gb.update_or_create_student(sid)
            gb.update_or_create_submission(course.ASSIGNMENT, sid, timestamp=modified)
            if nb is not None:
                resources = course.nbgrader_resources(sid, self.db_url)
                SaveAutoGradesTo(gb, config=self.config)(nb, resources)
            else:
                self._zero(gb, sid)
        return self.write_feedback(result, nb)

    @staticmethod
    def _zero(gb, student_id):
        """Every grade of an ungradable submission: 0, and nothing left to grade by hand."""
        submitted = gb.find_submission_notebook(
            Path(course.NOTEBOOK).stem, course.ASSIGNMENT, student_id
        )
        for grade in submitted.grades:
            grade.auto_score = 0
            grade.needs_manual_grade = False

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
