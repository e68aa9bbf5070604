"""How a class is graded: every limit on student code, each default declared once.

A run's :class:`GradingLimits` travels unchanged from the command line
(which reads its defaults from here) through the run's request to every
worker (:class:`~autograder.pipeline.grading.worker.WorkerSettings`), and is
part of what a student's grade was computed with (:meth:`GradingLimits.key`):
other limits grade the class again.
"""

from __future__ import annotations

from dataclasses import dataclass

from nbgrader.preprocessors import Execute

from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.errors import UserError
from autograder.sandbox import Limits

WALL = 300.0  #: seconds per notebook
MEMORY = 2048  #: MiB per student's process


def course_timeout(assignment: Assignment) -> float:
    """The course's seconds per cell: ``c.Execute.timeout``, else nbgrader's own default."""
    configured = assignment.config.Execute.get("timeout")
    return float(configured if configured is not None else Execute.timeout.default_value)


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
        wall: float = WALL,
        memory: int = MEMORY,
        sandbox: bool = True,
    ) -> GradingLimits:
        """The limits asked for, the course's timeout where none is given; a bad one is the
        user's mistake (:class:`~autograder.pipeline.errors.UserError`)."""
        limits = cls(
            course_timeout(assignment) if timeout is None else timeout, wall, memory, sandbox
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
