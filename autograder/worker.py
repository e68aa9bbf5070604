"""Grading one submission, in a worker process with its own sandbox.

The stages, in order: read the file, inspect it against the release, sanitise
it with stock nbgrader's preprocessors, execute it (:mod:`autograder.execute`),
post-process and score it (:mod:`autograder.score`). The worker never writes
anything: it returns a :class:`Result` and the main process records it.
"""

import logging
import multiprocessing
import os
import resource
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from traitlets.config.loader import PyFileConfigLoader

from . import course, execute, feedback, notebook, sanitize, score
from .sandbox import Limits, Sandbox, StudentGone
from .student import PR_SET_PDEATHSIG, c_library

# Which status wins when several things went wrong: the first in this list.
SEVERITY = (
    "unreadable",
    "kernel_died",
    "timeout",
    "memory_limit",
    "tampered",
    "cells_missing",
    "ok",
)


@dataclass
class Settings:
    """What every worker needs to know; picklable, sent once per worker.

    cell_timeout, wall_timeout: seconds; limits: the sandbox's :class:`Limits`.
    """

    course_root: str
    db_url: str
    cell_timeout: float = 30
    wall_timeout: float = 300
    limits: Limits = field(default_factory=Limits)
    use_bwrap: bool = True


@dataclass
class Result:
    """One submission, graded: what the main process records."""

    student_id: str
    sha256: str
    status: str
    detail: str
    points: dict
    messages: dict
    notebook: dict | None  # the executed notebook, as JSON
    unprotected: list = field(default_factory=list)
    feedback: str | None = None  # the feedback page, HTML
    peak_kib: int = 0  # the worker's peak resident memory so far, KiB


def load_config(root):
    """The course's nbgrader configuration, read as nbgrader reads it."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


def worst(*statuses):
    """The most serious of several statuses."""
    return min(statuses, key=SEVERITY.index)


class Worker:
    """A worker's long-lived state: configuration, reference notebooks, its sandbox."""

    def __init__(self, settings):
        self.settings = settings
        root = Path(settings.course_root)
        logging.getLogger("traitlets").setLevel(logging.ERROR)
        # The trusted test cells import the course's helper module, from the source.
        sys.path.insert(0, str(root / "source" / course.ASSIGNMENT))
        self.config = load_config(root)
        self.release_nb = notebook.read(root / course.RELEASE)
        self.allowed = execute.student_names(notebook.read(root / course.SOURCE))
        folder = root / "source" / course.ASSIGNMENT
        self.files = {
            p.name: p.read_text() for p in folder.iterdir() if p.is_file() and p.suffix == ".py"
        }
        self.sandbox = None
        self.renderer = feedback.Renderer(self.config)

    def _sandbox(self):
        if self.sandbox is None or not self.sandbox.alive():
            self.sandbox = Sandbox(use_bwrap=self.settings.use_bwrap)
        return self.sandbox

    def prepare(self, student_id, data):
        """``(sanitised notebook, status, detail)``; the notebook is None if unreadable."""
        try:
            nb, version = sanitize.read(data)
        except sanitize.Unreadable as why:
            return None, "unreadable", str(why)
        found = sanitize.inspect(nb, self.release_nb)
        status, detail = found.status, found.detail
        if version < 4:
            detail = "; ".join(filter(None, [detail, f"upgraded from nbformat {version}"]))
        resources = course.nbgrader_resources(student_id, self.settings.db_url)
        if found.moved:  # instructor cells run in the source's order: keep only the answers
            nb = sanitize.rebuild(self.release_nb, nb)
        try:
            clean = sanitize.sanitize(nb, self.config, resources)
        except Exception as error:  # nbgrader refuses the metadata: keep only the answers
            status = "tampered"
            unusable = f"nbgrader metadata unusable ({error}); graded the answers only"
            detail = "; ".join(filter(None, [detail, unusable]))
            clean = sanitize.sanitize(sanitize.rebuild(self.release_nb, nb), self.config, resources)
        moved = sanitize.moved(clean, self.release_nb)
        if moved:  # the source's order is a promise: never run instructor cells out of it
            raise RuntimeError(f"instructor cells out of order after sanitising: {moved}")
        return clean, status, detail

    def grade(self, submission):
        """Grade one :class:`~autograder.collect.Submission`, feedback page included."""
        result = self._grade(submission)
        result.feedback = self.renderer.render(
            result.student_id, result.notebook, result.points, result.status, result.detail
        )
        result.peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return result

    def _grade(self, submission):
        sid = submission.student_id
        if submission.problems:
            return Result(
                sid, submission.sha256, "unreadable", "; ".join(submission.problems), {}, {}, None
            )
        clean, status, detail = self.prepare(sid, submission.data)
        if clean is None:
            return Result(sid, submission.sha256, status, detail, {}, {}, None)
        try:
            student = self._sandbox().spawn(self.files, self.settings.limits)
        except StudentGone as gone:
            self.sandbox.close()
            self.sandbox = None
            return Result(sid, submission.sha256, "kernel_died", str(gone), {}, {}, None)
        try:
            ran, why = execute.execute(
                clean,
                student,
                self.settings.cell_timeout,
                self.settings.wall_timeout,
                self.allowed,
            )
        finally:
            student.close()
        if ran == "ok" and _ran_out_of_memory(clean):
            ran, why = "memory_limit", "the notebook ran out of memory"
        graded = score.postprocess(clean, self.config)
        status = worst(status, ran)
        detail = "; ".join(filter(None, [why, detail]))
        return Result(
            sid,
            submission.sha256,
            status,
            detail,
            score.points(graded),
            score.messages(graded),
            nbformat.from_dict(graded),
            list(self.sandbox.unprotected + student.unprotected),
        )

    def close(self):
        """Stop the sandbox."""
        if self.sandbox:
            self.sandbox.close()


def _ran_out_of_memory(nb):
    return any(
        output.get("ename") == "MemoryError"
        for cell in nb.cells
        for output in cell.get("outputs", [])
    )


_worker = None


def _die_with_parent():
    """Have the kernel kill this worker when the main process dies, however it dies.

    Otherwise a grader stopped by SIGKILL (or the OOM killer) would leave its
    workers, and their sandboxes, waiting forever for work.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the main process's handler
    try:
        c_library().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the worker still exits when the pool's pipe closes
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # it died before the prctl
        os._exit(1)


def start(settings):
    """Process-pool initializer: one Worker per process, its sandbox started and warm."""
    global _worker
    _die_with_parent()
    _worker = Worker(settings)
    _worker._sandbox()
    _worker.renderer.render("warm-up", None, {})  # compiles the feedback template


def ready():
    """A task that only makes the pool start a worker (and so run :func:`start`)."""
    return True


def grade(submission):
    """Process-pool task: grade one submission with this process's Worker."""
    return _worker.grade(submission)
