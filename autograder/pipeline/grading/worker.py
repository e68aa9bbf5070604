"""Grading one submission, in a worker process with its own sandbox.

For each notebook of the assignment, in order: read the file, inspect it
against the release, sanitise it with nbgrader's configured preprocessors,
execute it (:mod:`~autograder.pipeline.grading.execute`, each notebook in a fresh
student process), post-process and score it (:mod:`~autograder.pipeline.grading.score`).
The worker never writes anything: it returns a
:class:`~autograder.pipeline.results.graded.Graded` and the main process records it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import multiprocessing
import os
import resource
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.pipeline.course import internals, notebook, placement
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.notebook_text import NotebookText
from autograder.pipeline.errors import Status, UserError
from autograder.pipeline.grading import execute, sanitize, score
from autograder.pipeline.reports import feedback_page
from autograder.pipeline.results import rows
from autograder.pipeline.results.graded import Graded
from autograder.pipeline.settings import GradingLimits, configured
from autograder.pipeline.submissions.submission import Submission
from autograder.sandbox import Sandbox, StudentGone, cpus, die_with_parent
from autograder.sandbox import launcher as sandbox_files

_log = logging.getLogger(__name__)
#: times a notebook lost to something outside the student's code is graded again at once
OUTSIDE_RETRIES = 2
#: submissions a sandbox grades before it learns the lab's figures (:meth:`Worker.learn_figures`):
#: learning costs about one notebook's run, so a worker with one or two to grade skips it
LEARN_FIGURES_AFTER = 2


@dataclass
class WorkerSettings:
    """What every worker needs to know; picklable, sent once per worker.

    db_url: the workers' copy of the gradebook; limits: the run's limits on
    each submission's code; owner_pid: the run's main process, whose uid
    students get (:func:`~autograder.sandbox.clean_up.run_uid`); pages:
    render each student's feedback page.
    """

    course_root: str
    assignment_id: str
    db_url: str
    limits: GradingLimits
    owner_pid: int | None = None
    pages: bool = True


def failed(submission: Submission, status: Status, detail: str) -> Graded:
    """A submission with no notebook graded (every cell scores 0)."""
    return Graded(submission.student_id, submission.sha256, status, detail, {}, {}, {})


@dataclass
class _OneNotebook:
    status: Status
    detail: str
    notebook: Any = None
    unprotected: list[str] = field(default_factory=list)


class Stopped(RuntimeError):
    """The worker was closed while it graded (the run was interrupted): no new sandbox."""


class Worker:
    """A worker's long-lived state: configuration, reference notebooks, its sandbox.

    :meth:`close` may come from another thread while one grades (a Dask worker
    told to stop): from then on no sandbox is started, so a notebook whose
    student it killed is not graded again in a fresh one.
    """

    def __init__(
        self,
        settings: WorkerSettings,
        assignment: Assignment | None = None,
        this_process: bool = True,
    ) -> None:
        """this_process: make this process the worker's at once (:meth:`take_process`);
        False for one built to be forked (:func:`prepare`)."""
        self.settings = settings
        self.assignment = assignment or find_assignment(
            Path(settings.course_root), settings.assignment_id
        )
        a = self.assignment
        if this_process:
            self.take_process()
        self.config = a.config
        self.steps = internals.autograde_steps(self.config)
        self.release = {name: notebook.read(a.release(name)) for name in a.notebooks}
        self.sources = sources = {name: notebook.read(a.source(name)) for name in a.notebooks}
        self.allowed = {name: execute.student_names(nb) for name, nb in sources.items()}
        self.columns = notebook.Columns(sources)
        self.files = a.helper_files()
        try:
            sandbox_files.check_files(self.files)
        except ValueError as why:
            raise UserError(f"{a.source_dir}: {why}") from None
        # notebooks whose tests run beside the student's code, as stock runs them, and why
        self.beside = {name: placement.reasons(nb, self.files) for name, nb in sources.items()}
        course = configured(a)
        helpers = [
            data.decode(errors="replace")
            for name, data in self.files.items()
            if name.endswith(".py")
        ]
        self.warm_up = (
            "\n".join(notebook.imports(nb, helpers) for nb in self.release.values())
            if course.preload is None
            else "\n".join(f"import {name}" for name in course.preload)
        )
        self.warm_up_code = course.warm_up
        # Everything the zygote is given, and so every student's process holds, comes from
        # the release: what the students were given. Nothing of the source that the release
        # lacks (a solution, a hidden test, a name only they bind) may reach a student's
        # process in any form, not even as a figure drawn from it or a cell's compiled text.
        # The release's code a student's process runs as the course wrote it: for
        # learn_figures, and transformed once in the zygote (the tests run in the grader).
        self.release_cells = [
            [c.source for c in nb.cells if c.cell_type == "code" and not notebook.is_test(c)]
            for nb in self.release.values()
        ]
        self.known_cells = sorted({text for cells in self.release_cells for text in cells})
        self.draws = "matplotlib" in self.warm_up or any(
            b"matplotlib" in data for data in self.files.values()
        )
        self.graded = 0  # submissions this worker's current sandbox graded
        self.sandbox: Sandbox | None = None
        self.closed = False
        self._starting = threading.Lock()  # a sandbox is started, or closed, at a time
        self.renderer = feedback_page.Renderer(self.assignment)
        self.texts = NotebookText()  # executed notebooks written out, each cell's JSON made once

    def fill_caches(self, pages: bool) -> None:
        """Do once what every submission shares, so no worker pays for it with its first.

        The cell metadata of the release and the source checked (what a student's
        cells carry unless they broke it), the test cells compiled as they run here,
        the release's cells written as text, and, with ``pages``, the feedback
        template compiled and the release rendered as a page. Called before workers
        fork, it is done once for them all.
        """
        for nb in [*self.release.values(), *self.sources.values()]:
            internals.RememberingValidator().validate_nb(nb)
        for nb in self.sources.values():
            for cell in filter(notebook.is_test, nb.cells):
                # One that does not compile fails in each student's notebook, as it runs.
                with contextlib.suppress(SyntaxError, ValueError):
                    execute.compiled_test(cell)
        for nb in self.release.values():  # its prose and read-only cells are every notebook's
            self.texts.writes(nb)
        if pages:  # the release: its prose and tests are every page's, its stubs many a page's
            self.renderer.warm_up(self.release, self.columns)

    def take_process(self) -> None:
        """Set this process up to grade: the course's helper modules importable (the trusted
        test cells import them, from the source), traitlets' warnings quiet, and
        ``NBGRADER_EXECUTION`` as stock's kernel has it, for the tests run here."""
        logging.getLogger("traitlets").setLevel(logging.ERROR)
        os.environ["NBGRADER_EXECUTION"] = "autograde"
        sys.path.insert(0, str(self.assignment.source_dir))

    def _sandbox(self) -> Sandbox:
        with self._starting:
            if self.closed:
                raise Stopped("this worker was stopped: the run was interrupted")
            if self.sandbox is None or not self.sandbox.alive():
                self.sandbox = Sandbox(
                    use_bwrap=self.settings.limits.sandbox,
                    warm_up=self.warm_up,
                    warm_up_code=self.warm_up_code,
                    owner=self.settings.owner_pid,
                )
                self.sandbox.learn_cells(self.known_cells)
                self.graded = 0
            return self.sandbox

    def learn_figures(self) -> int:
        """Have the sandbox learn the figures the release's own cells draw, once.

        Every student's process then copies a PNG whose figure is exactly one
        of those instead of drawing it again: the same bytes, at a fraction of
        the cost (:mod:`autograder.sandbox.figures`). Returns how many it knows.
        The release, never the source: a figure drawn from a solution would sit
        in every student's process, its key a check of any guess at the answer.
        """
        sandbox = self._sandbox()
        if sandbox.figures is not None:
            return sandbox.figures
        limits = self.settings.limits
        for cells in self.release_cells:
            sandbox.learn_figures(self.files, limits.for_sandbox(), cells, limits.timeout)
        return sandbox.figures or 0

    def prepare(self, student_id: str, name: str, data: bytes) -> tuple[Any, Status, str]:
        """``(sanitised notebook, status, detail)``; the notebook is None if unreadable."""
        try:
            nb, version = sanitize.read(data)
        except sanitize.Unreadable as why:
            return None, Status.UNREADABLE, str(why)
        release = self.release[name]
        found = sanitize.inspect(nb, release)
        status, detail = Status(found.status), found.detail
        if version < 4:
            detail = "; ".join(filter(None, [detail, f"upgraded from nbformat {version}"]))
        resources = self.assignment.resources(student_id, name, self.settings.db_url)
        if found.moved:  # instructor cells run in the source's order: keep only the answers
            nb = sanitize.rebuild(release, nb)
        steps = self.steps.sanitize
        try:
            clean = sanitize.sanitize(nb, steps, self.config, resources)
        except Exception as error:
            # If nbgrader takes the release with only these answers, the fault was in
            # the student's metadata (tampered); if not, it propagates: a grader_error.
            # The answers come from the file again: the steps changed ``nb`` as they failed.
            answers = sanitize.read(data)[0]
            rebuilt = sanitize.sanitize(
                sanitize.rebuild(release, answers), steps, self.config, resources
            )
            status = Status.TAMPERED
            unusable = f"nbgrader metadata unusable ({error}); graded the answers only"
            detail = "; ".join(filter(None, [detail, unusable]))
            clean = rebuilt
        moved = sanitize.moved(clean, release)
        if moved:  # the source's order is a promise: never run instructor cells out of it
            raise RuntimeError(f"instructor cells out of order after sanitising: {moved}")
        return clean, status, detail

    def grade(self, submission: Submission) -> Graded:
        """Grade one :class:`~autograder.pipeline.submissions.submission.Submission`, its
        feedback page too unless the run asks for none (:attr:`WorkerSettings.pages`)."""
        if self.draws and self.graded >= LEARN_FIGURES_AFTER and not self.closed:
            self.learn_figures()
        result = self._grade(submission)
        self.graded += 1
        if self.settings.pages:
            result.feedback = self.renderer.render(
                result.student_id, result.notebooks, self.columns, result.points, result
            )
        # The main process records one student at a time, for every worker: it is
        # given the notebooks written out, and only what the gradebook reads of them.
        executed = {name: nb for name, nb in result.notebooks.items() if nb is not None}
        result.texts = {n: self.texts.writes(nb) for n, nb in executed.items()}
        result.auto_grades = {name: rows.auto_grades(nb) for name, nb in executed.items()}
        result.notebooks = {
            name: None if nb is None else notebook.for_gradebook(nb)
            for name, nb in result.notebooks.items()
        }
        result.peak_kib = peak_memory_kib()
        give_back_memory()
        return result

    def _grade(self, submission: Submission) -> Graded:
        sid = submission.student_id
        graded = {name: self._notebook(submission, name) for name in self.assignment.notebooks}
        several = len(graded) > 1
        lost = [one.detail for one in graded.values() if one.status == Status.GRADER_ERROR]
        if lost:  # never a score: the grader's failure is graded again on the next run
            return failed(submission, Status.GRADER_ERROR, "; ".join(lost))
        points: dict[str, float | None] = {}
        messages: dict[str, str] = {}
        for name, one in graded.items():
            if one.notebook is not None:
                points.update(self.columns.keyed(name, score.points(one.notebook)))
                messages.update(self.columns.keyed(name, score.messages(one.notebook)))
        details = list(submission.notes) + [
            f"{name}: {one.detail}" if several else one.detail
            for name, one in graded.items()
            if one.detail
        ]
        unprotected = sorted({item for one in graded.values() for item in one.unprotected})
        stubs = self.renderer.stubs
        skipped = [
            answer if not several else f"{name}: {answer}"
            for name, one in graded.items()
            if one.notebook is not None
            for answer in feedback_page.unattempted(one.notebook, stubs.get(name, {}))
        ]
        return Graded(
            sid,
            submission.sha256,
            Status.worst(*(one.status for one in graded.values())),
            "; ".join(details),
            points,
            messages,
            {name: one.notebook for name, one in graded.items()},
            unprotected,
            not_attempted=skipped,
        )

    def _notebook(self, submission: Submission, name: str) -> _OneNotebook:
        """Grade one notebook of a submission."""
        sid = submission.student_id
        if name in submission.unreadable:
            return _OneNotebook(Status.UNREADABLE, submission.unreadable[name])
        if name not in submission.files:
            # as stock grades it: the notebook earns nothing, the others are graded as usual
            return _OneNotebook(Status.OK, "not handed in: it earns no points")
        data = submission.files[name]  # read once: a retry grades these very bytes
        clean, status, detail = self.prepare(sid, name, data)
        if name in submission.renamed:
            kept = f"graded {submission.renamed[name]} as {name}: keep the notebook's name"
            detail = "; ".join(filter(None, [kept, detail]))
        if clean is None:
            return _OneNotebook(status, detail)
        for attempt in range(1 + OUTSIDE_RETRIES):
            if attempt:  # the last run wrote into its notebook: sanitise the file afresh
                clean = self.prepare(sid, name, data)[0]
            ran, why, executed, unprotected = self._execute(clean, name)
            if ran != Status.GRADER_ERROR or self.closed:
                break
            _log.warning("%s: %s; grading it again", sid, why)
        return _OneNotebook(
            Status.worst(status, ran),
            "; ".join(filter(None, [why, detail])),
            executed,
            unprotected,
        )

    def _execute(self, clean: Any, name: str) -> tuple[Status, str, Any, list[str]]:
        """Run one sanitised notebook in a fresh student process.

        ``(status, why, executed notebook or None, what ran unprotected)``;
        status ``grader_error`` when the process was lost to something outside
        the student's code (the sandbox died, a kill from outside).
        """
        sandbox = self._sandbox()
        try:
            student = sandbox.spawn(self.files, self.settings.limits.for_sandbox())
        except StudentGone as gone:
            sandbox.close()
            self.sandbox = None
            return Status.GRADER_ERROR, f"the sandbox failed ({gone})", None, []
        try:
            ran, why = execute.execute(
                clean,
                student,
                self.settings.limits.timeout,
                self.settings.limits.wall,
                self.allowed[name],
                beside=bool(self.beside.get(name)),
            )
        finally:
            student.close()
        if ran == Status.OK and _ran_out_of_memory(clean):
            ran, why = Status.MEMORY_LIMIT, "the notebook ran out of memory"
        executed = score.postprocess(clean, self.steps.after_execute, self.config)
        unprotected = list(sandbox.unprotected + student.unprotected)
        return ran, why, executed, unprotected  # the notebook sanitised for this run alone

    def close(self) -> None:
        """Stop the sandbox, for good: a notebook being graded is not graded again."""
        with self._starting:
            self.closed = True
            if self.sandbox:
                self.sandbox.close()


def _ran_out_of_memory(nb: Any) -> bool:
    return any(
        output.get("ename") == "MemoryError"
        for cell in nb.cells
        for output in cell.get("outputs", [])
    )


_worker: Worker | None = None
_not_started = ""  #: why this worker's sandbox could not start ("" once it has)


_prepared: Worker | None = None  #: built before the workers fork (:func:`prepare`)


def prepare(settings: WorkerSettings) -> None:
    """Build the Worker that workers forked from this process start from (:func:`start`).

    The assignment, its notebooks and nbgrader steps, the feedback page's compiled
    template, the gradebook's database dialect: built (or imported) once, in the
    process that forks the pool, rather than once in every worker. No sandbox is
    started and this process's ``sys.path`` is left as it is; each worker takes its
    copy's process itself. Called before each pool is forked, it reads the
    assignment afresh: a long-lived process (``serve``) forks new workers when the
    assignment changed.
    """
    global _prepared
    internals.load_dialect(settings.db_url)
    _prepared = Worker(settings, this_process=False)
    _prepared.fill_caches(settings.pages)
    for name, why in _prepared.beside.items():
        if why:
            _log.warning(
                "%s: its tests run beside the student's code, as stock nbgrader runs them, "
                "so a student's code can reach their verdict (%s)",
                name,
                "; ".join(why[:3]),
            )


def warm_renderer(assignment: Assignment) -> feedback_page.Renderer | None:
    """The page renderer :func:`prepare` compiled and warmed in this process, if it was for
    ``assignment`` and with pages; else None.

    The main process renders a page again where the gradebook says otherwise than the
    worker's page (a TA's grade or comment, a late penalty): with this
    renderer, not a cold one whose first page compiles the template and renders the
    release's cells anew (a quarter of a second).
    """
    prepared = _prepared
    if prepared is None or not prepared.settings.pages:
        return None
    same = prepared.assignment.root == assignment.root and prepared.assignment.id == assignment.id
    return prepared.renderer if same else None


def start(settings: WorkerSettings, numbers: cpus.WorkerNumbers | None = None) -> None:
    """Process-pool initializer: one Worker per process, its sandbox started and warm.

    Forked from a process that ran :func:`prepare` with these settings, it starts from
    that Worker (its copy); otherwise it builds its own. numbers: the pool's, to keep
    this worker and its students to a CPU of their own (:mod:`~autograder.sandbox.cpus`);
    None leaves the process where the kernel puts it.
    """
    global _worker, _not_started
    if numbers is not None:  # before the sandbox starts: its zygote and students inherit it
        cpus.keep_to_one_cpu(numbers.take())
    # What a worker inherits (the imports, the prepared Worker) lives as long as it does:
    # the collector leaves it alone, so no full collection walks it again, nor copies
    # the pages the fork shares with the main process to write in them.
    gc.freeze()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the main process's handler
    parent = multiprocessing.parent_process()
    die_with_parent(parent.pid if parent else None)
    if _prepared is not None and _prepared.settings == settings:
        _worker = _prepared
        _worker.take_process()
    else:
        _worker = Worker(settings)
    try:
        _worker._sandbox().try_student(_worker.files, settings.limits.for_sandbox())
    except Exception as error:  # said by ready(): a run none of whose sandboxes start stops
        lines = str(error).strip().splitlines() or [type(error).__name__]
        _not_started = lines[-1][:500]
    if _worker is not _prepared:
        _worker.fill_caches(settings.pages)


def ready() -> str:
    """A task that makes the pool start a worker (and so run :func:`start`): why its sandbox
    could not start, "" when it did."""
    return _not_started


def grade(submission: Submission) -> Graded:
    """Process-pool task: grade one submission with this process's Worker."""
    assert _worker is not None, "start() runs first in every worker"
    return _worker.grade(submission)


def give_back_memory() -> None:
    """Hand the memory this process freed back to the system (glibc's ``malloc_trim``).

    A failure case's big buffers (a 16 MiB file, a flood of output) are freed
    once its student is graded, but glibc keeps the pages, scattered through
    the heap, for the process's lifetime: over a thousand students the worker's
    footprint, and so its peak, would creep up by each such case. Nothing on a
    C library without ``malloc_trim``.
    """
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def peak_memory_kib() -> int:
    """This process's peak resident memory, KiB, since it started its program.

    Linux's ``VmHWM``, not ``getrusage``'s ``ru_maxrss``: that one keeps the
    peak of whatever process ran before ``exec``, so a grader started from a
    big Python process (the benchmark, holding a class of 1,000) would report
    the launcher's memory as its own.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
