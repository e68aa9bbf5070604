"""Recording a graded submission in the course: its notebooks and the gradebook.

It runs in the main process, after the student's process is gone. For each
student it writes every executed notebook where nbgrader keeps autograded work
(``autograded/<student>/<assignment>/``), saves the scores into the course's
gradebook as nbgrader's steps from ``SaveAutoGrades`` on write them, as the
course configures them (late penalties included), so formgrader shows them and
the manual answers can be graded there. With stock's steps the rows are written
a table at a time (:mod:`~autograder.pipeline.results.rows`); a course that
configures steps of its own has them run, through nbgrader's API. Nothing
here commits but :meth:`Recorder.commit`: the run commits students in batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from autograder.pipeline.course import extensions, internals, notebook
from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.files import read_bounded, write_atomic
from autograder.pipeline.results import rows, ta_grades
from autograder.pipeline.results.graded import Graded

RELEASED = 0o644  #: a feedback page's mode, as nbgrader's generate_feedback leaves it


def person(name: str) -> tuple[str | None, str]:
    """``(first name, last name)`` of a name as an LMS gives it.

    Canvas's sortable "Last, First"; otherwise the last word is the last name
    ("Jane Doe"), and a name of one word (Canvas's "doejane") is all last name.
    """
    if "," in name:
        last, _, first = name.partition(",")
        return first.strip() or None, last.strip()
    first, _, last = name.strip().rpartition(" ")
    return first or None, last


class Recorder:
    """Writes results for one assignment into its course folder and one output folder.

    One gradebook connection serves the whole class, so SQLAlchemy compiles
    nbgrader's queries once rather than once per student. Call :meth:`close`
    when done.
    """

    def __init__(
        self, assignment: Assignment, db_url: str, out: Path, autograded: Path | None = None
    ) -> None:
        """autograded: where graded notebooks go (default: the course's autograded folder)."""
        self.assignment, self.db_url, self.out = assignment, db_url, Path(out)
        self.autograded = autograded
        self.config = assignment.config
        steps = internals.autograde_steps(self.config)
        self.after_save, self.in_bulk = steps.after_save, steps.stock_saving
        self.gradebook = Gradebook(db_url)
        #: the course's file read with the gradebook's own: an extension set there stands too
        self.extensions = extensions.agree(assignment, self.gradebook.db).granted
        self._rows: rows.Rows | None = None
        #: (student, notebook stem, cell) of each TA grade whose answer changed: a TA's again
        self.again: list[tuple[str, str, str]] = []
        #: the students with a submission of the assignment in the gradebook, read at the first
        #: save (see _ta_standing); None before
        self._submitted: set[str] | None = None

    def commit(self) -> None:
        """Make everything saved since the last commit durable, at once."""
        self.gradebook.db.commit()

    def rollback(self) -> None:
        """Forget everything saved since the last commit."""
        self.gradebook.db.rollback()

    def close(self) -> None:
        """Close the gradebook connection (what was not committed is lost)."""
        self.gradebook.close()

    def save(
        self,
        result: Graded,
        timestamp: datetime | None = None,
        submitted: Mapping[str, bytes] | None = None,
        lms_id: str = "",
        name: str = "",
    ) -> rows.Written | None:
        """Record one graded submission's notebooks and grades; not committed yet.

        timestamp: when it was handed in (None: not known), for late penalties.
        submitted: the files as handed in, kept where nbgrader keeps submissions
        (``submitted/<student>/<assignment>/``) so formgrader lists them and can
        autograde them again; not kept by a dry run.
        lms_id: the student's id in the LMS the files came from, kept as the
        gradebook student's ``lms_user_id`` for the exports; name: the name the
        LMS gave, kept in the gradebook's name fields for formgrader.
        Returns what the gradebook now holds for a student it did not hold
        before; None when it must be read back (a TA may have graded them, or
        a late penalty was assigned).
        """
        a, sid = self.assignment, result.student_id
        graded = self._auto_grades(result)
        standing = self._ta_standing(result, graded)  # before the graded notebooks are replaced
        if submitted is not None and self.autograded is None:
            folder = a.folder("submitted_directory", sid)
            for filename, data in submitted.items():
                write_atomic(folder / filename, data)
            if timestamp is not None:
                write_atomic(folder / "timestamp.txt", timestamp.isoformat(sep=" "))
        for notebook_name, nb in result.notebooks.items():
            target = self.autograded_path(sid, notebook_name)
            if nb is not None:
                # The worker read it as version 4 and checked it; nbformat.writes would
                # validate it again only to log (a tenth of recording's time).
                text = result.texts.get(notebook_name)
                write_atomic(target, text or nbformat.v4.writes(nbformat.from_dict(nb)))
            else:  # formgrader lists a submission only with a graded notebook on disk
                unread = notebook.stand_in(notebook_name, result.detail or str(result.status))
                write_atomic(target, nbformat.v4.writes(unread))
        if self.autograded is None:  # every hand-in gets its page back, a notebook unread too
            self._keep_exchange_files(sid, timestamp)
        known: dict[str, str | None] = {"lms_user_id": lms_id} if lms_id else {}
        if name:
            first, last = person(name)
            known.update(first_name=first, last_name=last)
        if self.in_bulk:
            return self._save_rows(result, timestamp, known, graded, standing.stands)
        with internals.one_transaction(self.gradebook) as gb:
            gb.update_or_create_student(sid, **known)
            gb.update_or_create_submission(a.id, sid, timestamp=timestamp)
            self._extend(gb, sid)
            for notebook_name in a.notebooks:
                nb = result.notebooks.get(notebook_name)
                if nb is None:
                    self._zero(gb, sid, notebook_name)
                    continue
                resources = a.resources(sid, notebook_name, self.db_url)
                nb = nbformat.from_dict(nb)
                for step in self.after_save:
                    nb, resources = internals.gradebook_step(step, gb, self.config)(nb, resources)
            for stem, name in standing.stands:  # the course's steps flag them as stock does
                gb.find_grade(name, stem, a.id, sid).needs_manual_grade = False
        return None

    def _auto_grades(self, result: Graded) -> dict[str, rows.AutoGrades | None]:
        """``{notebook stem: what SaveAutoGrades records of it}``, None for a notebook not
        graded: the worker's decision, or decided here when it made none."""
        graded: dict[str, rows.AutoGrades | None] = {}
        for name in self.assignment.notebooks:
            nb = result.notebooks.get(name)
            found = result.auto_grades.get(name)
            if nb is not None and found is None:
                found = rows.auto_grades(nbformat.from_dict(nb))
            graded[Path(name).stem] = found if nb is not None else None
        return graded

    def _ta_standing(
        self, result: Graded, graded: dict[str, rows.AutoGrades | None]
    ) -> ta_grades.Standing:
        """Which of the student's grades a TA gave stand through this grading
        (:mod:`~autograder.pipeline.results.ta_grades`); those that do not are kept in
        :attr:`again`, for the run to name. graded: :meth:`_auto_grades`."""
        a, sid = self.assignment, result.student_id
        if self._submitted is None:
            self._submitted = ta_grades.submitted(self.gradebook.db, a.id)
        # A TA grades a submission (in formgrader, at any time), and only grading makes one,
        # which other commands do on their own turn, never while this recorder has the
        # course's: a student without one when it first looked (a first run's whole class)
        # has no grade of a TA's to look up, until this recorder saves them.
        if sid not in self._submitted:
            self._submitted.add(sid)
            return ta_grades.Standing()
        given = ta_grades.graded_by_ta(self.gradebook.db, a.id, sid)
        if not given:
            return ta_grades.Standing()
        # what the TA saw: the course's graded notebook, which a dry run's gradebook copy
        # was graded against too
        before = {Path(n).stem: ta_grades.read_graded(a.autograded(sid, n)) for n in a.notebooks}
        after = {Path(n).stem: result.notebooks.get(n) for n in a.notebooks}
        scores = {stem: found.scores if found else None for stem, found in graded.items()}
        standing = ta_grades.standing(given, before, after, scores)
        self.again += [(sid, stem, cell) for stem, cell in standing.again]
        return standing

    def _save_rows(
        self,
        result: Graded,
        timestamp: datetime | None,
        known: dict[str, str | None],
        graded: dict[str, rows.AutoGrades | None],
        standing: frozenset[ta_grades.Cell],
    ) -> rows.Written | None:
        """Stock's steps, as rows (:mod:`~autograder.pipeline.results.rows`).

        None when the gradebook must be read back.
        """
        a, sid = self.assignment, result.student_id
        if self._rows is None:
            self._rows = rows.Rows(self.gradebook.db, a.id)
        writer = self._rows
        granted = self.extensions.get(sid)
        extension = granted.beyond(writer.duedate) if granted is not None else None
        written = writer.save(sid, known, timestamp, extension, graded, standing)
        if written is not None and not writer.maybe_late(timestamp):
            return written
        self.gradebook.db.flush()
        self.gradebook.db.expire_all()  # what the ORM reads next: the rows just written
        late_rule = internals.late_penalty_step(self.after_save, self.gradebook, self.config)
        if late_rule is not None:
            self._assign_late_penalties(late_rule, sid)
        return None

    def release_ready(self, student_id: str, page: Path) -> None:
        """Put the student's feedback page where ``nbgrader release_feedback`` takes it.

        nbgrader's exchange gives each student the pages in
        ``feedback/<student>/<assignment>/<notebook>.html``, beside the
        submission's ``timestamp.txt`` and ``submission_secret.txt`` (which name
        the page in the exchange): the course's own page goes there, under each
        notebook's name, for students who handed in through the exchange (only
        they have a secret). A dry run keeps nothing in the course.
        """
        if self.autograded is not None or not page.is_file():
            return
        a = self.assignment
        graded = a.folder("autograded_directory", student_id)
        secret = read_bounded(graded / "submission_secret.txt")
        stamp = read_bounded(graded / "timestamp.txt")
        if secret is None or stamp is None:
            return
        folder = a.folder("feedback_directory", student_id)
        html = page.read_bytes()
        for stem in a.stems:  # readable as nbgrader's own pages are: the exchange copies the mode
            write_atomic(folder / f"{stem}.html", html, RELEASED)
        write_atomic(folder / "timestamp.txt", stamp)
        write_atomic(folder / "submission_secret.txt", secret)

    def _keep_exchange_files(self, student_id: str, timestamp: datetime | None) -> None:
        """Put beside the graded notebooks what nbgrader's way back to students reads.

        As ``nbgrader autograde`` does, the submission's ``timestamp.txt`` and
        ``submission_secret.txt`` (left by ``nbgrader collect``) are copied from
        ``submitted/``: ``generate_feedback`` copies them on and ``release_feedback``
        names each student's feedback in the exchange by them. A submission that
        came without a time stamp gets the time it was graded.
        """
        a = self.assignment
        handed_in = a.folder("submitted_directory", student_id)
        graded = a.folder("autograded_directory", student_id)
        for name in ("timestamp.txt", "submission_secret.txt"):
            data = read_bounded(handed_in / name)  # the student's own files: never read whole
            if data is not None:
                write_atomic(graded / name, data)
        if not (graded / "timestamp.txt").is_file():
            stamp = timestamp or datetime.now(UTC)
            write_atomic(graded / "timestamp.txt", stamp.isoformat(sep=" "))

    def reassess_lateness(self, student_id: str, timestamp: datetime | None = None) -> None:
        """Assign the late penalty again, for a due date, extension or rule changed since.

        nbgrader assigns it only when it saves grades; a student whose work did
        not change is not saved again, so this runs the same step on its own.
        timestamp: when they handed in, if known now (a time given since); None
        keeps the time the gradebook holds.
        """
        a = self.assignment
        with internals.one_transaction(self.gradebook) as gb:
            try:
                self._extend(gb, student_id)
            except MissingEntry:
                return
            if timestamp is not None:
                gb.find_submission(a.id, student_id).timestamp = timestamp
        step = internals.late_penalty_step(self.after_save, self.gradebook, self.config)
        if step is None:
            return
        with internals.one_transaction(self.gradebook):
            self._assign_late_penalties(step, student_id)

    def _assign_late_penalties(self, step: Any, student_id: str) -> None:
        """Run the course's late-penalty step on each of the student's notebooks."""
        a = self.assignment
        for name in a.notebooks:
            try:
                self.gradebook.find_submission_notebook(Path(name).stem, a.id, student_id)
            except MissingEntry:
                continue
            step.preprocess(None, a.resources(student_id, name, self.db_url))

    def _extend(self, gb: Gradebook, student_id: str) -> None:
        """Give the student's submission the course's extension for them, or none.

        The file is the one place an extension is granted (:mod:`~.extensions`);
        the gradebook's copy is what nbgrader's late penalties go by.
        """
        submission = gb.find_submission(self.assignment.id, student_id)
        granted = self.extensions.get(student_id)
        due = submission.assignment.duedate
        submission.extension = granted.beyond(due) if granted is not None else None

    def autograded_path(self, student_id: str, name: str) -> Path:
        """Where a student's graded notebook is written."""
        if self.autograded is not None:
            return self.autograded / self.assignment.submission_path(student_id, name)
        return self.assignment.autograded(student_id, name)

    def _zero(self, gb: Gradebook, student_id: str, name: str) -> None:
        """Every grade of a notebook that could not be graded: 0, nothing left to grade by hand."""
        submitted = gb.find_submission_notebook(Path(name).stem, self.assignment.id, student_id)
        for grade in submitted.grades:
            grade.auto_score = 0
            grade.needs_manual_grade = False
