"""The grading side of a Dask worker: what :class:`~.pools.DaskPool` sends it to run.

A Dask worker process grades exactly as a local worker process does: one
:class:`~.worker.Worker` per worker process, with its own sandbox, kept
between tasks; a worker of several threads is refused (:func:`one_thread`).
What crosses the network is a submission's bytes out and a
:class:`~autograder.pipeline.results.graded.Graded` back (data only: scores, messages, the executed
notebooks, the feedback page). The course itself is the worker machine's own
copy of the repository: at the path the main process uses, or where
``AUTOGRADER_COURSE`` points. A copy whose source or configuration differs from
the main process's is refused, so every student is graded by the same tests.
The worker builds its own scratch gradebook from its copy; the course's
gradebook never leaves the main machine.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
from pathlib import Path

from autograder import startup
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.course.gradebook import ensure_gradebook, sources_hash, sqlite_url
from autograder.pipeline.grading import worker
from autograder.pipeline.results import Graded
from autograder.pipeline.submissions.submission import Submission

_local = threading.local()  # this thread's (sources hash, Worker, scratch folder)
_all: list[worker.Worker] = []  # every Worker of this process, for stop()
_scratch: dict[worker.Worker, str] = {}  # each Worker's scratch folder


def course_root(requested: str) -> Path:
    """The course on this machine: ``AUTOGRADER_COURSE``, else the main process's path."""
    where = os.environ.get("AUTOGRADER_COURSE") or requested
    if not Path(where, "nbgrader_config.py").is_file():  # a course, whatever its folders' names
        raise RuntimeError(
            f"no course at {where} on this Dask worker: clone the repository there, "
            "or set AUTOGRADER_COURSE to its path"
        )
    return Path(where)


def _worker(settings: worker.WorkerSettings, sources: str) -> worker.Worker:
    """This thread's Worker for ``settings``, made (and its gradebook built) on first use."""
    made = getattr(_local, "made", None)
    if made is not None and made[0] == (sources, settings):
        return made[1]
    if made is not None:  # another run's settings: its sandbox and gradebook go
        _close(made[1])
    startup.start()  # a Dask worker runs no entry point of ours
    root = course_root(settings.course_root)
    assignment = find_assignment(root, settings.assignment_id)
    mine = sources_hash(assignment)
    if mine != sources:
        raise RuntimeError(
            f"the course at {root} on this Dask worker differs from the grader's "
            "(another commit, or edited): check out the same commit on every machine"
        )
    from distributed import get_worker

    # In the Dask worker's own folder, which Dask removes when the worker stops.
    scratch = tempfile.mkdtemp(prefix="autograder-", dir=get_worker().local_directory)
    db_url = ensure_gradebook(assignment, sqlite_url(Path(scratch) / "gradebook.db"))
    local = dataclasses.replace(settings, course_root=str(root), db_url=db_url)
    graders = worker.Worker(local, assignment)
    _scratch[graders] = scratch
    _all.append(graders)
    _local.made = ((sources, settings), graders)
    return graders


def _close(graders: worker.Worker) -> None:
    """Stop a Worker's sandbox and remove its scratch gradebook."""
    graders.close()
    _all.remove(graders)
    shutil.rmtree(_scratch.pop(graders), ignore_errors=True)


def one_thread() -> None:
    """Refuse to grade in a Dask worker of several threads.

    A trusted test cell captures its output and warnings process-wide
    (``redirect_stdout``, ``catch_warnings``), so two students graded side by
    side in one process would see each other's: one thread per worker process
    (``dask worker --nthreads 1``), as docs/cluster.md starts them.
    """
    from distributed import get_worker

    threads = get_worker().state.nthreads  # WorkerState: the threads this worker runs
    if threads > 1:
        raise RuntimeError(
            f"this Dask worker runs {threads} threads: start it with --nthreads 1 "
            "(and more processes with --nworkers)"
        )


def grade(settings: worker.WorkerSettings, sources: str, submission: Submission) -> Graded:
    """Grade one submission on this Dask worker; its result, feedback page included."""
    one_thread()
    return _worker(settings, sources).grade(submission)


def stop() -> None:
    """Stop every student process this worker runs (the grader was interrupted).

    Each Worker stays stopped: a notebook whose student this kills is not
    graded again in a fresh sandbox.
    """
    for one in _all:
        one.close()


async def stop_soon() -> None:
    """:func:`stop`, as ``client.run(..., wait=False)`` takes it: Dask runs only a
    coroutine without waiting for it (a plain function is refused)."""
    stop()
