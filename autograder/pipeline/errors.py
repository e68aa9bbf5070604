"""The one kind of failure a user caused, and the statuses a submission can end in."""

from __future__ import annotations

from enum import StrEnum


class UserError(Exception):
    """A mistake in what the user asked for: shown as one line, exit status 2."""


class Status(StrEnum):
    """Why a submission could not be fully graded; ``ok`` when it could.

    Listed from the most to the least severe: when several things went wrong,
    the row shows the most severe (:meth:`worst`).
    """

    GRADER_ERROR = "grader_error"  # the grader failed: never the student's fault
    UNREADABLE = "unreadable"
    KERNEL_DIED = "kernel_died"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    TAMPERED = "tampered"
    CELLS_MISSING = "cells_missing"
    OK = "ok"

    def __str__(self) -> str:
        return self.value

    @property
    def severity(self) -> int:
        """0 for the most severe; larger is milder."""
        return list(Status).index(self)

    @staticmethod
    def worst(*statuses: Status | str) -> Status:
        """The most severe of several statuses."""
        return min((Status(s) for s in statuses), key=lambda s: s.severity)
