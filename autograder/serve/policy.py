"""The course's rules for graded-on-submit: how many attempts, which one counts, what shows.

Kept in the course's config as :class:`Serve`'s settings (``c.Serve.attempts = 3``),
beside the grading settings every command shares
(:class:`~autograder.pipeline.settings.Autograder`):

- ``attempts`` (0: no limit) graded hand-ins before the student's due date,
  counted over ``attempts_per`` (``all``, or each ``day`` in the exchange's
  timezone). A hand-in beyond them is kept, not graded early: it is graded
  once the due date has passed. A hand-in after the due date is graded at
  once (the late penalty applies): nothing is early any more.
- ``counts``: the hand-in the gradebook holds. ``last``: the last graded one
  before the due date, else the last one (late), as
  ``nbgrader collect --before-duedate`` takes it. ``best``: the best-scoring
  graded one before the due date (the later of equals), else the last one.
- ``before_due``: ``visible`` shows the score and the visible tests' messages
  until the due date, the hidden tests' messages after it; ``all`` shows
  everything at once.

A student's due date is the assignment's, moved by their extension. Times are
naive UTC, as nbgrader's gradebook and time stamps hold them.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo

from traitlets import Enum, Integer, List, TraitError, Unicode
from traitlets.config import Configurable

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.errors import UserError
from autograder.serve.journal import GRADED, Entry

_log = logging.getLogger(__name__)


class Serve(Configurable):
    """What ``serve`` (graded on submit) allows and shows, in the course's nbgrader config::

        c.Serve.attempts = 3            # graded attempts before the due date (0: no limit)
        c.Serve.attempts_per = "day"    # ... each day, or "all" of them in all
        c.Serve.counts = "best"         # which attempt the gradebook holds ("last")
        c.Serve.before_due = "visible"  # hidden tests' messages wait for the due date

    A course that still sets them as ``c.Autograder.*`` (their name before) is
    read as it is, with a warning naming the new one.
    """

    attempts = Integer(
        0,
        min=0,
        help="Hand-ins `serve` grades for a student before the due date (0: no limit); "
        "one beyond them is kept, and graded once the due date has passed.",
    ).tag(config=True)
    attempts_per = Enum(
        ["all", "day"],
        "all",
        help="Whether c.Serve.attempts counts every hand-in (all) or each day's (day, "
        "in the exchange's timezone).",
    ).tag(config=True)
    counts = Enum(
        ["last", "best"],
        "last",
        help="The hand-in the gradebook holds: the last before the due date (else the last "
        "one, late), as `nbgrader collect --before-duedate` takes it; or the best graded one.",
    ).tag(config=True)
    before_due = Enum(
        ["visible", "all"],
        "visible",
        help="What a page `serve` returns before the due date shows: the score and the "
        "visible tests' messages (visible), the hidden tests' too after the due date; or "
        "everything at once (all).",
    ).tag(config=True)
    ngshare_url = Unicode(
        "",
        help="The exchange is ngshare's service at this address (a hub whose students "
        "share no filesystem: docs/graded-on-submit.md), not nbgrader's exchange folder. "
        "The service speaks to it with its own hub token ($JUPYTERHUB_API_TOKEN), as one "
        "of ngshare's admins.",
    ).tag(config=True)
    ngshare_instructors = List(
        Unicode(),
        help="With c.Serve.ngshare_url: the hub users the service makes the course's "
        "instructors in ngshare (they release, collect, see every hand-in); every other "
        "student of the course is enrolled as they become known.",
    ).tag(config=True)


def serve_settings(assignment: Assignment) -> Serve:
    """The course's :class:`Serve` settings; a value of the wrong kind is one line."""
    config = copy.deepcopy(assignment.config)
    for name in Serve.class_trait_names(config=True):
        if name in config.Autograder and name not in config.Serve:
            _log.warning(f"c.Autograder.{name} is c.Serve.{name} now: rename it in the config")
            config.Serve[name] = config.Autograder[name]
    try:
        return Serve(config=config)
    except TraitError as error:
        raise UserError(f"the course's c.Serve settings: {error}") from None


def utc_now() -> datetime:
    """Now, in naive UTC (nbgrader's way of keeping times)."""
    return datetime.now(UTC).replace(tzinfo=None)


def local_day(moment: datetime, zone: tzinfo) -> object:
    """The day a naive-UTC ``moment`` falls on in ``zone``."""
    return moment.replace(tzinfo=UTC).astimezone(zone).date()


@dataclass(frozen=True)
class Attempt:
    """A graded hand-in, as the rule for which counts sees it."""

    key: str
    handed_in: datetime
    score: float


@dataclass(frozen=True)
class Policy:
    """The course's settings for graded-on-submit (see the module's docstring)."""

    attempts: int = 0
    per: str = "all"
    counts: str = "last"
    before_due: str = "visible"
    zone: tzinfo = ZoneInfo("UTC")

    @classmethod
    def for_course(cls, assignment: Assignment) -> Policy:
        """The course's policy, from its config (a wrong value: one line, exit status 2)."""
        course = serve_settings(assignment)
        zone_name = assignment.config.Exchange.get("timezone") or "UTC"
        try:
            zone: tzinfo = ZoneInfo(str(zone_name))
        except (KeyError, ValueError):
            zone = ZoneInfo("UTC")
        return cls(course.attempts, course.attempts_per, course.counts, course.before_due, zone)

    def allowance(self) -> str:
        """The attempts allowed, in words (``3 graded attempts a day``)."""
        if not self.attempts:
            return "no limit on graded attempts"
        per = " a day" if self.per == "day" else ""
        return f"{self.attempts} graded attempt{'s' if self.attempts != 1 else ''}{per}"

    def used(self, history: list[Entry], handed_in: datetime, due: datetime | None) -> int:
        """The graded attempts that count against the limit for a hand-in at ``handed_in``:
        those before the due date, on its day when the limit is per day."""
        early = [e for e in history if e.state == GRADED and (due is None or e.handed_in <= due)]
        if self.per == "day":
            day = local_day(handed_in, self.zone)
            early = [e for e in early if local_day(e.handed_in, self.zone) == day]
        return len(early)

    def grade_now(
        self, history: list[Entry], handed_in: datetime, due: datetime | None, now: datetime
    ) -> bool:
        """Is a hand-in at ``handed_in`` graded now (else kept until the due date)?

        history: the student's hand-ins the journal holds (this one left out).
        """
        if not self.attempts or (due is not None and (handed_in > due or now > due)):
            return True
        return self.used(history, handed_in, due) < self.attempts

    def counted(self, graded: list[Attempt], due: datetime | None) -> Attempt | None:
        """Which of a student's graded hand-ins the gradebook holds (None if none)."""
        if not graded:
            return None
        on_time = [a for a in graded if due is None or a.handed_in <= due]
        if not on_time:
            return max(graded, key=lambda a: (a.handed_in, a.key))
        if self.counts == "best":
            return max(on_time, key=lambda a: (a.score, a.handed_in, a.key))
        return max(on_time, key=lambda a: (a.handed_in, a.key))

    def hides_until(self, due: datetime | None, now: datetime) -> bool:
        """Are the hidden tests' messages held back from a page released ``now``?"""
        return self.before_due == "visible" and due is not None and now <= due
