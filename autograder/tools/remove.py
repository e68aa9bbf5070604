"""``python -m autograder remove STUDENT``: take a student out of an assignment, for good.

A student graded once stays in nbgrader's gradebook (and its exports) until
removed; nbgrader's ``nbgrader db student remove`` clears the gradebook but not
the course's folders, from which the next run on ``submitted/`` would grade
them again. This removes the student's submission of the assignment from the
gradebook (and the student, if it was their only one), the grader's record of
them (the ledger the exports read, the rerun state, the row and the page in
``--out``), and moves their ``submitted/``, ``autograded/`` and ``feedback/``
folders of the assignment into ``removed/<student>/<assignment>/``: kept, out of
every folder nbgrader or the grader reads. The removal is recorded for the
course (:mod:`~autograder.pipeline.course.removals`): a later ``nbgrader collect
--update`` or LMS download brings their work back, and every grading run skips
them, until ``--undo``. ``--dry-run`` says what it would do.
"""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.api import MissingEntry

from autograder.pipeline import results
from autograder.pipeline.course import removals, students, turns
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import course_url, existing
from autograder.pipeline.course.students import STEPS
from autograder.pipeline.errors import UserError
from autograder.pipeline.results import handed_back
from autograder.pipeline.settings import class_folder

_log = logging.getLogger(__name__)

REMOVED = "removed"  #: in the course folder: what was taken out, kept


def remove(
    student: str,
    *,
    out: Path | str | None = None,
    undo: bool = False,
    dry_run: bool = False,
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Take ``student`` out of the assignment (see the module), or bring them back with
    ``undo``; the exit status.

    out: the grading run's output folder whose row and page go too.
    """
    chosen = find_assignment(course, assignment)
    folder = results.ClassFolder(class_folder(chosen, out))
    with turns.turn(chosen.root, f"remove {student}"):
        removed = removals.recorded(chosen)
        ids = students.known(
            chosen, set(results.ledger(chosen).student_ids()), set(folder.state.student_ids())
        )
        students.check(student, ids | set(removed), chosen.id)
        if undo:
            return _undo(chosen, removed, student, dry_run)
        if student in removed:
            raise UserError(
                f"{student} was removed from {chosen.id} on {removed[student].removed:%Y-%m-%d} "
                f"already (`remove {student} --undo` brings them back)"
            )
        stamp = datetime.now(UTC).replace(microsecond=0)
        kept = chosen.root / REMOVED / student / chosen.id / f"{stamp:%Y%m%d-%H%M%S}"
        done = [
            *_from_gradebook(chosen, student, dry_run),
            *_move_folders(chosen, student, kept, dry_run),
            *_forget(chosen, folder, student, dry_run),
        ]
        if _say("would remove" if dry_run else "removed", done, dry_run):
            return 0
        where = kept.relative_to(chosen.root).as_posix() if kept.is_dir() else ""
        removed[student] = removals.Removal(student, stamp.replace(tzinfo=None), where)
        removals.write(chosen, removed)
        _log.info(
            f"recorded in {removals.path(chosen.root).name}: no grading run grades {student} "
            f"again (`remove {student} --undo` brings them back)"
        )
    return 0


def _say(verb: str, done: list[str], dry_run: bool) -> bool:
    """Print what was (or would be) done, a line each; True for a dry run, which stops here."""
    for line in done:
        _log.info(f"{verb}: {line}")
    if dry_run:
        _log.info("dry run: nothing changed")
    return dry_run


def _undo(
    chosen: Assignment, removed: dict[str, removals.Removal], student: str, dry_run: bool
) -> int:
    """Bring a removed student back: the record goes, their kept folders return where free."""
    if student not in removed:
        raise UserError(f"{student} is not removed from {chosen.id}: nothing to undo")
    back = []
    kept = chosen.root / removed[student].kept if removed[student].kept else None
    if kept is not None and kept.is_dir():
        for step in STEPS:
            where = chosen.folder(step, student)
            held = kept / where.parent.parent.name
            if held.is_dir() and not where.exists():
                back.append(f"{held.relative_to(chosen.root)} -> {where.relative_to(chosen.root)}")
                if not dry_run:
                    where.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(held), where)
    if _say("would bring back" if dry_run else "brought back", back, dry_run):
        return 0
    del removed[student]
    removals.write(chosen, removed)
    _log.info(f"{student} is back in {chosen.id}: the next grading run grades them")
    return 0


def _from_gradebook(chosen: Assignment, student: str, dry_run: bool) -> list[str]:
    """The student's submission, and the student if it was their only one."""
    with existing(course_url(chosen)) as gb:
        if gb is None:
            return []
        try:
            gb.find_submission(chosen.id, student)
        except MissingEntry:
            return []
        other = [s for s in gb.find_student(student).submissions if s.assignment.name != chosen.id]
        done = [f"gradebook: {student}'s submission of {chosen.id}"]
        if not other:
            done.append(f"gradebook: the student {student} (no other submission)")
        if not dry_run:
            gb.remove_submission(chosen.id, student)
            if not other:
                gb.remove_student(student)
    return done


def _move_folders(chosen: Assignment, student: str, kept: Path, dry_run: bool) -> list[str]:
    """The student's folders of the assignment, moved into ``kept``: kept, never read."""
    done = []
    for step in STEPS:
        where = chosen.folder(step, student)  # <step's folder>/<student>/<assignment>
        if where.is_dir():
            done.append(
                f"{where.relative_to(chosen.root)} (moved to {kept.relative_to(chosen.root)})"
            )
            if not dry_run:
                kept.mkdir(parents=True, exist_ok=True)
                shutil.move(str(where), kept / where.parent.parent.name)
    return done


def _forget(chosen: Assignment, out: results.ClassFolder, student: str, dry_run: bool) -> list[str]:
    """The grader's record of the student: the exports' ledger, rerun state, page and row."""
    paths = [
        results.ledger(chosen).folder / f"{student}.json",
        out.state.folder / f"{student}.json",
        out.page(student),
    ]
    return handed_back.forget(paths, out.csv, student, dry_run)
