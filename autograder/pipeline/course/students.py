"""Student ids: the one rule for what an id may be, and the ids a course knows.

An id is plain text (:func:`plain_id`): letters and digits of any script, then
also ``. _ - @ +``, at most 100 characters; never a path, markup, a formula
or a control character. A TA's command names a student the course knows
(:func:`known`: in the gradebook, the course's folders or records, the run's
output folder); any other id is a user's mistake, said in one line with the
nearest known id (:func:`check`). A command that creates a student (an
extension for someone not graded yet) says so with ``new``.
"""

from __future__ import annotations

import difflib
import re

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.gradebook import course_url, existing
from autograder.pipeline.errors import UserError

PLAIN_ID = re.compile(r"\w[\w.@+-]{0,99}")  #: \w: letters and digits of any script, and _

#: the course's folders of students' work, each ``<folder>/<student>/<assignment>``
STEPS = ("submitted_directory", "autograded_directory", "feedback_directory")


def plain_id(student_id: str) -> bool:
    """Is ``student_id`` plain text (see the module): no path, markup, formula or control?"""
    return PLAIN_ID.fullmatch(student_id) is not None


def shown(student_id: str) -> str:
    """``student_id`` as a one-line message may show it: every control character escaped."""
    return student_id.encode("unicode_escape").decode("ascii", "replace")[:120]


def in_gradebook(assignment: Assignment) -> set[str]:
    """Every student of the course's gradebook (none when it has no gradebook yet)."""
    with existing(course_url(assignment)) as gb:
        return {student.id for student in gb.students} if gb is not None else set()


def in_folders(assignment: Assignment) -> set[str]:
    """Every student with a folder of ``assignment`` in the course's submitted, autograded or
    feedback folder."""
    found = set()
    for step in STEPS:
        top = assignment.folder(step, "x").parent.parent  # <folder>/<student>/<assignment>
        if top.is_dir():
            found |= {p.name for p in top.iterdir() if (p / assignment.id).is_dir()}
    return found


def known(assignment: Assignment, *also: set[str]) -> set[str]:
    """Every student id the course knows for ``assignment``, with the ids in ``also``
    (a command's own records: the ledger, extensions, removals, the output folder)."""
    found = in_gradebook(assignment) | in_folders(assignment)
    for more in also:
        found |= more
    return {sid for sid in found if plain_id(sid)}


def check(student_id: str, ids: set[str], where: str, new: str = "") -> str:
    """``student_id`` if it is plain text and one of ``ids``; else a UserError in one line.

    where: what ``ids`` are the students of (``hw1``), for the message;
    new: how the command takes an id not known yet (``--new``), "" if it cannot.
    """
    if not plain_id(student_id):
        raise UserError(
            f"{shown(student_id)!r} is not a student id: letters, digits and . _ - @ +, "
            "starting with a letter or digit, at most 100 characters"
        )
    if student_id in ids:
        return student_id
    close = difflib.get_close_matches(student_id, sorted(ids), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    take = f" (a student not graded yet: add {new})" if new else ""
    raise UserError(f"no student {student_id} in {where}{hint}{take}")
