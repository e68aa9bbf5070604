"""Stock ``nbgrader autograde``, run in scratch copies of the course.

This is the reference every score of ours is compared with: the answer-corpus
tests grade with it, and the benchmark times it. Submissions are split over
``jobs`` scratch courses that grade side by side, each with its own gradebook,
so the real course's gradebook is never touched.
"""

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook

from . import course, notebook, score
from .generate import run_nbgrader, scratch_course


@dataclass
class StockResult:
    """What stock nbgrader made of one submission.

    points: ``{grade_id: points earned}`` for every autograded test cell.
    max_points: ``{grade_id: points possible}``.
    messages: ``{grade_id: "ErrorName: message"}`` for every failing test cell.
    """

    points: dict
    max_points: dict
    messages: dict

    @property
    def score(self):
        """Total autograded points earned."""
        return sum(self.points.values())


def prepare_course(root, into):
    """A scratch course in ``into``: config, source, release and a fresh gradebook."""
    scratch_course(root, into)
    run_nbgrader(into, "generate_assignment", course.ASSIGNMENT, "--force")


def _grade_batch(course_dir, batch):
    for student_id, nb in batch.items():
        notebook.write(nb, course_dir / "submitted" / course.submission_path(student_id))
    run_nbgrader(course_dir, "autograde", course.ASSIGNMENT, "--force")
    results = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", course_id="") as gb:
        for student_id in batch:
            graded = gb.find_submission_notebook(
                Path(course.NOTEBOOK).stem, course.ASSIGNMENT, student_id
            )
            executed = notebook.read(course_dir / "autograded" / course.submission_path(student_id))
            test_ids = {notebook.grade_id(c) for c in executed.cells if notebook.is_test(c)}
            results[student_id] = StockResult(
                points={g.name: g.score for g in graded.grades if g.name in test_ids},
                max_points={g.name: g.max_score for g in graded.grades if g.name in test_ids},
                messages=score.messages(executed),
            )
    return results


def autograde(submissions, jobs=2, root=course.ROOT):
    """Grade ``{key: notebook}`` with stock nbgrader; ``{key: StockResult}``.

    Keys may be any strings: each submission is graded under a neutral student
    id. jobs: how many scratch courses grade side by side (each runs its
    students one after another, as ``nbgrader autograde`` does).
    """
    keys = {f"s{number:04d}": key for number, key in enumerate(sorted(submissions))}
    submissions = {student: submissions[key] for student, key in keys.items()}
    with tempfile.TemporaryDirectory(prefix="stock-") as scratch:
        scratch = Path(scratch)
        template = scratch / "template"
        prepare_course(Path(root), template)
        ids = sorted(submissions)
        batches = [ids[i::jobs] for i in range(jobs) if ids[i::jobs]]
        dirs = []
        for number, _ in enumerate(batches):
            dirs.append(scratch / f"course-{number}")
            shutil.copytree(template, dirs[-1])
        with ThreadPoolExecutor(len(batches)) as pool:
            parts = pool.map(
                lambda pair: _grade_batch(pair[0], {s: submissions[s] for s in pair[1]}),
                zip(dirs, batches),
            )
            return {keys[student]: result for part in parts for student, result in part.items()}
