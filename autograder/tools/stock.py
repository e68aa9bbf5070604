"""Stock ``nbgrader autograde``, run in scratch copies of the course.

This is the reference every score of ours is compared with: the answer-corpus
tests grade with it, and the benchmark times it. Submissions are split over
``jobs`` scratch courses that grade side by side, each with its own gradebook,
so the real course's gradebook is never touched.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.grading import score
from autograder.tools.nbgrader_cli import NbgraderError, run_nbgrader, scratch_course


@dataclass
class StockResult:
    """What stock nbgrader made of one submission.

    points: ``{column: points earned}`` for every autograded test cell.
    max_points: ``{column: points possible}``.
    messages: ``{column: "ErrorName: message"}`` for every failing test cell.
    """

    points: dict[str, float]
    max_points: dict[str, float]
    messages: dict[str, str]

    @property
    def score(self) -> float:
        """Total autograded points earned."""
        return sum(self.points.values())


@dataclass
class FollowUp:
    """The rest of a TA's job with stock once ``autograde`` is done, for the outputs
    ``grade`` makes in one run: ``nbgrader generate_feedback`` (a page per student)
    and ``nbgrader export`` (a CSV), in every scratch course, side by side.

    join: run in each of those processes before it starts (a second cgroup counts
    their CPU apart from autograde's); graded: called once, when every course has
    finished ``autograde`` and before any follow-up starts (autograde's wall time ends).
    """

    join: Callable[[], None] | None = None
    graded: Callable[[], None] | None = None


def _follow_up(assignment: Assignment, students: list[str], then: FollowUp) -> None:
    """Run ``then``'s commands in one graded scratch course; NbgraderError if one fails or
    leaves a student without a page, or no CSV."""
    root = assignment.root
    run_nbgrader(root, "generate_feedback", assignment.id, "--force", join=then.join)
    run_nbgrader(root, "export", join=then.join)
    pages = {p.relative_to(root / "feedback").parts[0] for p in root.glob("feedback/*/*/*.html")}
    missing = sorted(set(students) - pages)
    if missing or not (root / "grades.csv").is_file():
        raise NbgraderError(f"stock's follow-up left out pages for {missing} or the CSV")


def prepare_course(assignment: Assignment, into: Path) -> Assignment:
    """A scratch copy of the course in ``into``: config, source, a fresh gradebook."""
    scratch_course(assignment.root, into)
    run_nbgrader(into, "generate_assignment", assignment.id, "--force")
    return find_assignment(into, assignment.id)


def _grade_batch(
    assignment: Assignment,
    batch: dict[str, dict[str, Any]],
    on_student: Callable[[str], None] | None = None,
    join: Callable[[], None] | None = None,
) -> dict[str, StockResult]:
    columns = notebook.Columns(
        {n: notebook.read(assignment.source(n)) for n in assignment.notebooks}
    )
    submitted = assignment.root / assignment.coursedir.submitted_directory
    for student_id, notebooks in batch.items():
        for name, nb in notebooks.items():
            notebook.write(nb, submitted / assignment.submission_path(student_id, name))
    started = set()

    def progress(line: str) -> None:  # nbgrader logs each student as it starts on them
        for student_id in batch:
            if student_id not in started and f"/{student_id}/" in line:
                started.add(student_id)
                if on_student is not None:
                    on_student(student_id)

    run_nbgrader(
        assignment.root, "autograde", assignment.id, "--force", on_line=progress, join=join
    )
    results = {}
    with Gradebook(assignment.coursedir.db_url, course_id="") as gb:
        for student_id, notebooks in batch.items():
            result = StockResult({}, {}, {})
            for name in notebooks:
                graded = gb.find_submission_notebook(Path(name).stem, assignment.id, student_id)
                executed = notebook.read(assignment.autograded(student_id, name))
                tests = {notebook.grade_id(c) for c in executed.cells if notebook.is_test(c)}
                for grade in graded.grades:
                    if grade.name in tests:
                        column = columns.of[(name, grade.name)]
                        result.points[column] = grade.score
                        result.max_points[column] = grade.max_score
                result.messages.update(columns.keyed(name, score.messages(executed)))
            results[student_id] = result
    return results


def autograde(
    submissions: dict[str, Any],
    jobs: int = 2,
    assignment: Assignment | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    join: Callable[[], None] | None = None,
    then: FollowUp | None = None,
) -> dict[str, StockResult]:
    """Grade ``{key: notebook}`` (or ``{key: {notebook name: notebook}}``) with stock nbgrader.

    Keys may be any strings: each submission is graded under a neutral student
    id. jobs: how many scratch courses grade side by side (each runs its
    students one after another, as ``nbgrader autograde`` does). assignment:
    the course's only one by default. progress: called as stock starts on
    each submission, with its key, how many have started and how many there
    are. join: run in each ``nbgrader autograde`` process before it starts (a
    benchmark's cgroup). then: the rest of a TA's job, run once all is graded
    (:class:`FollowUp`). Returns ``{key: StockResult}``.
    """
    assignment = assignment or find_assignment()
    keys = {f"s{number:04d}": key for number, key in enumerate(sorted(submissions))}
    by_student = {}
    for student, key in keys.items():
        given = submissions[key]
        single = isinstance(given, dict) and "cells" in given
        by_student[student] = {assignment.notebooks[0]: given} if single else dict(given)
    with tempfile.TemporaryDirectory(prefix="stock-") as scratch:
        scratch_path = Path(scratch)
        template = scratch_path / "template"
        prepare_course(assignment, template)
        ids = sorted(by_student)
        batches = [ids[i::jobs] for i in range(jobs) if ids[i::jobs]]
        courses = []
        for number, _ in enumerate(batches):
            folder = scratch_path / f"course-{number}"
            shutil.copytree(template, folder)
            courses.append(find_assignment(folder, assignment.id))
        begun: list[str] = []
        lock = threading.Lock()

        def started(student: str) -> None:
            with lock:
                begun.append(student)
                if progress is not None:
                    progress(keys[student], len(begun), len(keys))

        with ThreadPoolExecutor(len(batches)) as pool:
            parts = list(
                pool.map(
                    lambda pair: _grade_batch(
                        pair[0], {s: by_student[s] for s in pair[1]}, started, join
                    ),
                    zip(courses, batches),
                )
            )
            if then is not None:
                if then.graded is not None:
                    then.graded()
                list(
                    pool.map(lambda pair: _follow_up(pair[0], pair[1], then), zip(courses, batches))
                )
        return {keys[student]: result for part in parts for student, result in part.items()}
