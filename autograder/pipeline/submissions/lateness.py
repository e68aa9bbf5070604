"""When the class handed in: hand-in times from the TA's file, and who has none.

nbgrader's late penalties go by each submission's hand-in time. In nbgrader's
own layout ``timestamp.txt`` gives it; an LMS download gives none, so a due
date would silently charge no one. :func:`with_times` fills the times in from
``grade --times FILE`` (:mod:`~autograder.pipeline.lms.hand_in`), and
:func:`unknown` is the one line a run prints about students whose time is still
not known while a due date is set.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from autograder.pipeline.lms.hand_in import HandIns
from autograder.pipeline.results import Store
from autograder.pipeline.submissions.submission import Submission

MAX_NAMED = 12  #: students named in the one line; the rest are counted


def with_times(found: list[Submission], times: HandIns) -> list[Submission]:
    """``found`` with each hand-in time the file gives (over none; a timestamp.txt stands)."""
    filled = []
    for sub in found:
        when = times.of(sub.student_id, sub.lms_id)
        if when is not None and sub.timestamp is None:
            sub = dataclasses.replace(sub, timestamp=when)
        filled.append(sub)
    return filled


def with_recorded(
    found: list[Submission], recorded: dict[str, datetime]
) -> tuple[list[Submission], set[str]]:
    """``(found, who)``: each submission without a hand-in time of its own given the time
    the course's gradebook holds for the student (an earlier ``--times`` or
    ``timestamp.txt``); who: the students given one so.

    A time the TA gave is the course's record: a regrade (``--force``) or a new
    download without times keeps it, until a ``--times`` file or a
    ``timestamp.txt`` says otherwise.
    """
    filled, who = [], set()
    for sub in found:
        when = recorded.get(sub.student_id)
        if sub.timestamp is None and when is not None:
            sub = dataclasses.replace(sub, timestamp=when)
            who.add(sub.student_id)
        filled.append(sub)
    return filled, who


def _named(subs: list[Submission]) -> str:
    ids = [sub.student_id for sub in subs]
    more = len(ids) - MAX_NAMED
    return ", ".join(ids[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")


def kept_for_changed(todo: list[Submission], kept: set[str], graded: Store) -> str | None:
    """One line naming the students whose work changed since the hand-in time the course
    keeps for them was given (None if none): the time may no longer be theirs.

    graded: what was last graded of each student (its key starts with the content's hash).
    """
    changed = [
        sub
        for sub in todo
        if sub.student_id in kept
        and not (graded.key(sub.student_id) or "").startswith(f"{sub.sha256}:")
    ]
    if not changed:
        return None
    return (
        f"note: kept the hand-in time the course holds for {len(changed)} student(s) whose "
        f"work changed since it was given: {_named(changed)} (give --times FILE to change it)"
    )


def unknown(found: list[Submission], due: datetime | None) -> str | None:
    """One line naming the students whose hand-in time is not known, with a due date set;
    None when every time is known or there is no due date."""
    if due is None:
        return None
    missing = [s for s in found if s.timestamp is None]
    if not missing:
        return None
    named = _named

    late = [sub for sub in missing if sub.marked_late]
    flagged = f"; the LMS marked late: {named(late)}" if late else ""
    return (
        f"warning: the due date is {due:%Y-%m-%d %H:%M} UTC but {len(missing)} student(s) have "
        f"no hand-in time, so no late penalty: {named(missing)}{flagged} "
        "(give the times with --times FILE: Moodle's grading worksheet, or a CSV of "
        "student_id,handed_in; a time given once is kept until another is given)"
    )
