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
from autograder.pipeline.submissions.collect import Submission

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


def unknown(
    found: list[Submission], due: datetime | None, recorded: frozenset[str] = frozenset()
) -> str | None:
    """One line naming the students whose hand-in time is not known, with a due date set;
    None when every time is known or there is no due date.

    recorded: students whose time the gradebook already holds for the work handed
    in (unchanged since), from an earlier run's ``--times`` or ``timestamp.txt``.
    """
    if due is None:
        return None
    missing = [s for s in found if s.timestamp is None and s.student_id not in recorded]
    if not missing:
        return None

    def named(subs: list[Submission]) -> str:
        ids = [sub.student_id for sub in subs]
        more = len(ids) - MAX_NAMED
        return ", ".join(ids[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")

    late = [sub for sub in missing if sub.marked_late]
    flagged = f"; the LMS marked late: {named(late)}" if late else ""
    return (
        f"warning: the due date is {due:%Y-%m-%d %H:%M} UTC but {len(missing)} student(s) have "
        f"no hand-in time, so no late penalty: {named(missing)}{flagged} "
        "(give the times with --times FILE: Moodle's grading worksheet, or a CSV of "
        "student_id,handed_in; a time given once is kept while the work is unchanged)"
    )
