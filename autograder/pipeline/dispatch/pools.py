"""Where submissions are graded: local worker processes, or the workers of a Dask cluster.

An executor is a value the run is given (:func:`make`): it takes the
submissions to grade and yields ``(submission, result)`` pairs as they finish,
one at a time, and the main process records each before asking for the next.
Nothing is kept once yielded: a finished submission's executed notebooks and
feedback page live only until they are recorded, so the main process's memory
does not grow with the class.

- :class:`LocalPool`: ``jobs`` processes forked from this one (:class:`Workers`,
  the pool ``serve`` keeps too), each with its own sandbox
  (:func:`.worker.start`); a pool whose worker died is started afresh for the
  submissions not yet graded.
- :class:`DaskPool`: a running ``distributed`` scheduler's workers (``--scheduler
  tcp://HOST:8786``); each Dask worker process grades in its own sandbox
  exactly as a local worker does (:mod:`.remote`). A submission whose worker
  died is rescheduled by Dask (once, with the scheduler's ``allowed-failures``
  at 1, as docs/cluster.md starts it), then gets a ``grader_error`` row.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue
import time
from collections.abc import Callable, Generator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol, TypeVar

from autograder.pipeline.errors import Status, UserError
from autograder.pipeline.grading import worker
from autograder.pipeline.results import Graded
from autograder.pipeline.submissions.submission import Submission
from autograder.sandbox import cpus

_log = logging.getLogger(__name__)

POLL = 0.5  #: seconds between checks for Ctrl-C while waiting for results
IN_FLIGHT = 4  #: tasks per Dask worker sent ahead

T = TypeVar("T")


class Executor(Protocol):
    """Grades submissions somewhere; see the module's docstring."""

    def results(
        self,
        todo: list[Submission],
        started: Callable[[], object],
        idle: Callable[[], object] = lambda: None,
    ) -> Generator[tuple[Submission, Graded], None, None]:
        """Yield each submission of ``todo`` with its result, in the order they finish.

        started: called once the workers are starting (the main process sets
        up the gradebook meanwhile); idle: called whenever no result has come
        for :data:`POLL` seconds (the main process commits what it recorded).
        Every submission is yielded exactly once, with a ``grader_error``
        result if it could not be graded.
        """
        ...


def grader_error(submission: Submission, error: BaseException | str) -> Graded:
    """A result saying the grader itself failed on ``submission`` (never the student's fault)."""
    why = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return worker.failed(submission, Status.GRADER_ERROR, why)


class Workers:
    """``jobs`` worker processes forked from this one, each with its own sandbox
    (:func:`.worker.start`), kept until :meth:`stop`: the one local pool, that a grading run
    (:class:`LocalPool`) and the graded-on-submit service (:mod:`autograder.serve`) both use.

    Forked, not spawned: a worker starts with this process's imports (over a
    second of nbgrader and nbconvert) already done. The caller runs no thread of
    its own when it forks, and every student process comes from a zygote started
    afresh, so nothing of the caller's reaches student code.
    """

    def __init__(self, settings: worker.WorkerSettings, jobs: int) -> None:
        self.settings, self.jobs = settings, jobs
        self.pool: ProcessPoolExecutor | None = None

    def start(self, started: Callable[[], object] = lambda: None) -> None:
        """Fork the workers and wait until one is ready; a
        :class:`~autograder.pipeline.errors.UserError` when none could start its sandbox.
        started: called while they start (the caller sets up the gradebook meanwhile)."""
        context = multiprocessing.get_context("fork")
        worker.prepare(self.settings)  # the state each worker starts from, built once
        numbered = (self.settings, cpus.WorkerNumbers(context))
        # Kept before the workers are waited for: a stop that comes while they start
        # (Ctrl-C, SIGTERM) stops them too, rather than leaving them for the exit to wait on.
        self.pool = ProcessPoolExecutor(self.jobs, context, worker.start, numbered)
        readies = [self.pool.submit(worker.ready) for _ in range(self.jobs)]
        started()
        if next(as_completed(readies)).result():  # one could not start: could any?
            why_not = [f.result() for f in readies]
            if all(why_not):
                self.close()  # idle workers: let them exit, and the pool's thread with them
                _refuse_without_a_sandbox(why_not)

    def submit(self, sub: Submission, done: Callable[[Future[Graded]], object]) -> Future[Graded]:
        """Grade ``sub`` on the next free worker; ``done(future)`` is called (on another
        thread) when it is graded. ``BrokenProcessPool`` when a
        worker died."""
        if self.pool is None:
            raise BrokenProcessPool("the workers are stopped")
        future = self.pool.submit(worker.grade, sub)
        future.add_done_callback(done)
        return future

    def stop(self) -> None:
        """Stop the workers now, grading nothing more: every worker this process forked is
        killed, whichever pool it was started for (a worker holds nothing unsaved: only the
        main process records)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
        kill_forked()
        self.pool = None

    def close(self) -> None:
        """Let the workers finish what they grade and exit; what is not started is not."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None


def kill_forked() -> None:
    """Kill every worker process this process forked, whichever pool it was started for (one
    still starting, or one given up on)."""
    for child in multiprocessing.active_children():
        child.kill()


class LocalPool:
    """``jobs`` local workers (:class:`Workers`), started afresh for the submissions not yet
    graded when one died, a few times at most."""

    def __init__(self, settings: worker.WorkerSettings, jobs: int, attempts: int = 3) -> None:
        self.settings, self.jobs, self.attempts = settings, jobs, attempts

    def results(
        self,
        todo: list[Submission],
        started: Callable[[], object],
        idle: Callable[[], object] = lambda: None,
    ) -> Generator[tuple[Submission, Graded], None, None]:
        remaining = {sub.student_id: sub for sub in todo}
        for _attempt in range(self.attempts):
            if not remaining:
                break
            workers = Workers(self.settings, max(1, min(self.jobs, len(remaining))))
            done: queue.Queue[tuple[Submission, Future[Graded]]] = queue.Queue()
            try:
                workers.start(started)  # the workers start while the gradebook is set up
                for sub in remaining.values():
                    # A callback, not as_completed(): a finished future (and its
                    # result) is forgotten as soon as it is recorded.
                    workers.submit(sub, put_in(done, sub))
                while remaining:
                    try:
                        sub, future = done.get(timeout=POLL)
                    except queue.Empty:
                        idle()
                        continue
                    result = _outcome(future, sub)
                    del future
                    remaining.pop(sub.student_id)
                    yield sub, result
                workers.close()
            except BrokenProcessPool:
                workers.close()
                continue  # a worker died: start afresh for those not yet graded
            except (KeyboardInterrupt, GeneratorExit):  # Ctrl-C, or the caller stopped asking
                workers.stop()  # grade nothing more: a worker holds nothing unsaved
                raise
            except BaseException:
                workers.close()
                raise
        for sub in list(remaining.values()):  # the pool kept dying: still, everyone gets a row
            yield sub, grader_error(sub, "worker processes kept dying")


def _refuse_without_a_sandbox(why_not: list[str]) -> None:
    """A UserError when no worker's sandbox started (``why_not``: each worker's reason, ""
    for one that started): no student could be graded, and none is given a row for it."""
    if why_not and all(why_not):
        raise UserError(
            f"the sandbox could not start, so no one was graded: {why_not[0]} "
            "(check the grader's installation; --no-sandbox runs only code you trust)"
        )


def put_in(
    done: queue.Queue[tuple[T, Future[Graded]]], what: T
) -> Callable[[Future[Graded]], None]:
    """A done-callback that hands ``(what, future)`` to the main thread's queue ``done``."""

    def put(future: Future[Graded]) -> None:
        done.put((what, future))

    return put


def _outcome(future: Future[Graded], sub: Submission) -> Graded:
    """The worker's result, or a ``grader_error`` one; a dead pool propagates."""
    try:
        return future.result()
    except BrokenProcessPool:
        raise
    except Exception as error:
        return grader_error(sub, error)


class DaskPool:
    """The workers of a running Dask scheduler at ``address``."""

    def __init__(self, settings: worker.WorkerSettings, address: str, sources: str) -> None:
        """sources: the hash of the assignment's source and config (workers must match it)."""
        try:
            from distributed import Client
        except ImportError:
            raise UserError(
                "--scheduler needs Dask's distributed: "
                "pip install 'nbgrader-sandboxed-autograder[cluster]'"
            ) from None
        self.settings, self.address, self.sources = settings, address, sources
        try:
            # How long to try: Dask's own setting, distributed.comm.timeouts.connect
            # (30 s unless DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT says otherwise).
            self.client = Client(address, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as why:
            raise UserError(f"cannot reach the Dask scheduler at {address}: {why}") from None

    def close(self) -> None:
        """Disconnect from the scheduler (the cluster keeps running)."""
        self.client.close()

    def results(
        self,
        todo: list[Submission],
        started: Callable[[], object],
        idle: Callable[[], object] = lambda: None,
    ) -> Generator[tuple[Submission, Graded], None, None]:
        from distributed import as_completed

        from autograder.pipeline.dispatch import remote

        workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        if not workers:
            raise UserError(f"the Dask scheduler at {self.address} has no workers")
        threaded = sorted(
            str(info.get("name", address))
            for address, info in workers.items()
            if int(info.get("nthreads", 1)) > 1
        )
        if threaded:
            raise UserError(
                f"Dask workers {', '.join(threaded)} run several threads: start every worker "
                "with --nthreads 1 (one student at a time per process; add processes with "
                "--nworkers)"
            )
        started()
        waiting = list(reversed(todo))
        futures: dict[Any, Submission] = {}

        def send_next() -> Any:
            # The bytes go with the task: a worker elsewhere cannot read our disk.
            sub = waiting.pop()
            key = f"grade-{sub.student_id}-{sub.sha256[:12]}"
            future = self.client.submit(
                remote.grade, self.settings, self.sources, sub.in_memory(), key=key, pure=False
            )
            futures[future] = sub
            return future

        # A few tasks per worker at a time: enough to keep every worker busy, few
        # enough that a class of thousands is never all in flight (nor in memory).
        in_flight = [send_next() for _ in range(min(len(waiting), IN_FLIGHT * len(workers)))]
        done = as_completed(in_flight, loop=self.client.loop)
        try:
            while not done.is_empty():
                if not _ready_soon(done):
                    idle()
                    continue
                future = next(done)
                sub = futures.pop(future)
                try:
                    result = future.result()
                except Exception as error:  # KilledWorker: it died twice; or the task failed
                    result = grader_error(sub, _why(error))
                future.release()
                del future
                if waiting:
                    done.add(send_next())
                yield sub, result
        except (KeyboardInterrupt, GeneratorExit):
            self.client.cancel(list(futures))
            try:  # stop the student processes still running, so the workers are free at once
                self.client.run(remote.stop_soon, wait=False)
            except Exception:
                pass
            raise


def _ready_soon(done: Any) -> bool:
    """Has a Dask result come within :data:`POLL` seconds? (``as_completed`` only blocks.)"""
    deadline = time.monotonic() + POLL
    while not done.has_ready():
        if time.monotonic() >= deadline or done.is_empty():
            return False
        time.sleep(POLL / 20)
    return True


def _why(error: BaseException) -> str:
    name = type(error).__name__
    if name == "KilledWorker":
        return "the Dask worker grading it died, twice (see the workers' logs)"
    return f"{name} on a Dask worker: {error}"


def make(
    settings: worker.WorkerSettings, jobs: int, scheduler: str | None, sources: str
) -> Executor:
    """The executor a run asked for: Dask's workers at ``scheduler``, else ``jobs`` local ones."""
    if scheduler:
        return DaskPool(settings, scheduler, sources)
    return LocalPool(settings, jobs)


def close(executor: Executor) -> None:
    """Release what an executor holds (a Dask client's connection)."""
    closer = getattr(executor, "close", None)
    if closer is not None:
        try:
            closer()
        except Exception as why:  # the run's results are recorded; only the goodbye failed
            _log.warning(f"warning: closing the executor: {why}")
