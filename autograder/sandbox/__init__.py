"""Everything that runs or talks to untrusted student code.

- :mod:`~autograder.sandbox.launcher` starts a zygote inside bubblewrap and
  forks one isolated student process per notebook from it (the only module
  that starts :mod:`~autograder.sandbox.student`);
- :mod:`~autograder.sandbox.student` is what runs inside: the zygote, and the
  student's IPython shell answering the grader's questions;
- :mod:`~autograder.sandbox.isolation` shuts each student's process off as it
  starts: namespaces, filesystems, privileges, capabilities, limits;
- :mod:`~autograder.sandbox.wire` carries data (and only data) between them;
- :mod:`~autograder.sandbox.crash_reasons` says why the student's code crashed,
  with the failing expression's operands and their shapes, under its traceback;
- :mod:`~autograder.sandbox.outputs` caps what a notebook may print, on both sides;
- :mod:`~autograder.sandbox.figures` lets a student's process copy a figure the
  instructor's code already drew, rather than draw it again;
- :mod:`~autograder.sandbox.transforms` has the zygote do IPython's text
  transforms, parsing and compiling of the course's own cells once, for every student;
- :mod:`~autograder.sandbox.syscalls` is the seccomp filter student code runs under;
- :mod:`~autograder.sandbox.cpus` keeps a worker, its zygote and its students on
  one CPU, so each request and its reply do not wake a second one;
- :mod:`~autograder.sandbox.clean_up` removes what a run left: its processes, its
  students' folders and files, nothing of anyone else's.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autograder.sandbox.launcher import (
        CellTimeout,
        Limits,
        Sandbox,
        Student,
        StudentGone,
        Tampered,
        die_with_parent,
    )

__all__ = [
    "CellTimeout",
    "Limits",
    "Sandbox",
    "Student",
    "StudentGone",
    "Tampered",
    "die_with_parent",
]


def __getattr__(name: str) -> Any:
    """The launcher's names, imported when first asked for (PEP 562).

    The zygote imports this package for :mod:`~autograder.sandbox.student`
    alone: the grader's side of the sandbox (the launcher, with subprocess and
    the rest) is then neither loaded in it (some 9 ms a zygote) nor in any
    student's process.
    """
    if name in __all__:
        from autograder.sandbox import launcher

        return getattr(launcher, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
