"""How a class is graded: every limit on student code, each default declared once.

A run's :class:`GradingLimits` travels unchanged from the command line
(which reads its defaults from here) through the run's request to every
worker (:class:`~autograder.pipeline.grading.worker.WorkerSettings`), and is
part of what a student's grade was computed with (:meth:`GradingLimits.key`):
other limits grade the class again. A course keeps its own in its nbgrader
config (:class:`Autograder`, ``c.Autograder.wall = 600``); the command line
overrides them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nbgrader.preprocessors import Execute
from traitlets import Bool, Float, Integer, List, TraitError, Unicode
from traitlets.config import Configurable

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.errors import UserError
from autograder.pipeline.results.store import ClassFolder
from autograder.sandbox import Limits

WALL = 300.0  #: seconds per notebook
MEMORY = 2048  #: MiB per student's process


class Autograder(Configurable):
    """The course's grading settings, kept in its nbgrader config as every nbgrader setting is::

        c.Autograder.wall = 600      # seconds per notebook
        c.Autograder.memory = 1024   # MiB per student's process
        c.Autograder.jobs = 4        # worker processes (0: every core)
        c.Autograder.preload = ["pandas"]          # imported once, before any student
        c.Autograder.warm_up = "import pandas as pd; pd.DataFrame({'a': [1]}).sum()"

        c.Autograder.out = "grades"    # the class folder, in the course folder
        c.Autograder.pattern = r"^(?P<student>[a-z0-9]+)_"  # students in LMS file names

    The command line's options override each (``grade --wall 120``). What
    ``serve`` allows and shows is its own (:class:`~autograder.serve.policy.Serve`).
    """

    timeout = Float(
        None,
        allow_none=True,
        help="Seconds per cell (None: c.Execute.timeout, nbgrader's own setting).",
    ).tag(config=True)
    wall = Float(WALL, help="Seconds per notebook.").tag(config=True)
    memory = Integer(MEMORY, help="MiB a student's process may allocate.").tag(config=True)
    jobs = Integer(0, help="Worker processes grading at once (0: every core).").tag(config=True)
    sandbox = Bool(True, help="Run student code in bubblewrap (off only for code you trust).").tag(
        config=True
    )
    preload = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        help="Modules the sandbox imports once, before any student's code, so no student "
        "pays for them (None: every module the assignment's notebooks import).",
    ).tag(config=True)
    warm_up = Unicode(
        "",
        help="Code the sandbox runs once after the preload, as a cell whose outputs and "
        "names are dropped: first-use costs (a figure's fonts, a library's lazy imports) "
        "paid there are paid for every student.",
    ).tag(config=True)
    out = Unicode(
        None,
        allow_none=True,
        help="The class folder (grades.csv, the pages, the run's state) that grade and serve "
        "write and status, remove and the exports read. Set in the config: in the course "
        "folder; given as --out: from where the command runs; neither: grades/ there.",
    ).tag(config=True)
    pattern = Unicode(
        None,
        allow_none=True,
        help="A regex with a (?P<student>...) group that finds the student in an LMS "
        "download's file names (None: Canvas's and Moodle's own names).",
    ).tag(config=True)


def course_timeout(assignment: Assignment) -> float:
    """The course's seconds per cell: ``c.Execute.timeout``, else nbgrader's own default."""
    configured = assignment.config.Execute.get("timeout")
    return float(configured if configured is not None else Execute.timeout.default_value)


def configured(assignment: Assignment) -> Autograder:
    """The course's :class:`Autograder` settings, from its config; a value of the wrong kind
    is the user's mistake, in one line."""
    try:
        course = Autograder(config=assignment.config)
    except TraitError as error:
        raise UserError(f"the course's c.Autograder settings: {error}") from None
    for name in course.preload or []:
        if not all(part.isidentifier() for part in name.split(".")):
            raise UserError(f"c.Autograder.preload: {name!r} is not a module name")
    try:
        compile(course.warm_up, "c.Autograder.warm_up", "exec")
    except SyntaxError as error:
        raise UserError(f"c.Autograder.warm_up does not parse: {error}") from None
    return course


def class_folder(assignment: Assignment, out: Path | str | None) -> Path:
    """The class folder a command reads or writes: ``out`` as given (from where it is run),
    else the course's ``c.Autograder.out`` (in the course folder), else ``grades``."""
    if out is not None:
        return Path(out).resolve()
    configured_out = configured(assignment).out
    if configured_out is None:
        return ClassFolder.DEFAULT.resolve()
    return (assignment.root / configured_out).resolve()


def lms_pattern(assignment: Assignment, pattern: str | None) -> str | None:
    """The regex that names students in LMS file names: ``pattern``, else the course's;
    one that does not compile or has no ``student`` group is the user's mistake."""
    chosen = pattern if pattern is not None else configured(assignment).pattern
    if chosen is None:
        return None
    where = "--pattern" if pattern is not None else "c.Autograder.pattern"
    try:
        compiled = re.compile(chosen)
    except re.error as error:
        raise UserError(f"{where} {chosen!r} is not a regex: {error}") from None
    if "student" not in compiled.groupindex:
        raise UserError(f"{where} {chosen!r} has no (?P<student>...) group to name the student")
    return chosen


@dataclass(frozen=True)
class GradingLimits:
    """The limits on one submission's code.

    timeout: seconds per cell; wall: seconds per notebook; memory: MiB the
    student's process may allocate; sandbox: run it in bubblewrap (off only
    for code you trust).
    """

    timeout: float
    wall: float = WALL
    memory: int = MEMORY
    sandbox: bool = True

    @classmethod
    def for_course(
        cls,
        assignment: Assignment,
        timeout: float | None = None,
        wall: float | None = None,
        memory: int | None = None,
        sandbox: bool | None = None,
    ) -> GradingLimits:
        """The limits asked for; where one is not given (None), the course's
        (:func:`configured`, and ``c.Execute.timeout`` for the timeout). A bad one is the
        user's mistake (:class:`~autograder.pipeline.errors.UserError`)."""
        course = configured(assignment)
        if timeout is None:
            timeout = course.timeout if course.timeout is not None else course_timeout(assignment)
        limits = cls(
            timeout,
            course.wall if wall is None else wall,
            course.memory if memory is None else memory,
            course.sandbox if sandbox is None else sandbox,
        )
        for name in ("timeout", "wall", "memory"):
            value = getattr(limits, name)
            if value <= 0:
                raise UserError(f"--{name} must be positive, not {value:g}")
        return limits

    def key(self) -> str:
        """These limits as part of a rerun key."""
        return f"{self.timeout:g}:{self.wall:g}:{self.memory}:{self.sandbox}"

    def for_sandbox(self) -> Limits:
        """The sandbox's own limits (bytes) for one student's process."""
        return Limits(memory=self.memory * 2**20)
