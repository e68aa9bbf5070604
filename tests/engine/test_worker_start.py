"""Do forked workers start from the state their main process built once, and only from it?

``worker.prepare`` builds the assignment's notebooks, steps and compiled page template in
the process that forks the pool; each worker (``worker.start``) starts from its copy. The
main process's ``sys.path`` stays its own: only a worker puts the course's helpers on it.
"""

import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest

from autograder.pipeline.course.gradebook import ensure_gradebook
from autograder.pipeline.grading import worker
from autograder.pipeline.settings import GradingLimits

from . import toy

pytestmark = pytest.mark.slow  # forks worker processes


def _started_from_prepared() -> tuple[bool, bool]:
    """In a pool worker: (it is the prepared Worker's copy, the course's helpers importable)."""
    assert worker._worker is not None
    helpers = str(worker._worker.assignment.source_dir) in sys.path
    return worker._worker is worker._prepared, helpers


def test_workers_start_from_what_the_main_process_prepared(tmp_path, monkeypatch):
    assignment = toy.assignment(tmp_path / "course")
    settings = worker.WorkerSettings(
        str(assignment.root), assignment.id,
        ensure_gradebook(assignment, f"sqlite:///{tmp_path / 'gradebook.db'}"),
        GradingLimits(timeout=10, sandbox=False),
    )  # fmt: skip
    path = list(sys.path)
    monkeypatch.setattr(worker, "_prepared", None)
    worker.prepare(settings)
    assert sys.path == path and worker._prepared is not None  # nothing of the course here
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(1, fork, worker.start, (settings,)) as pool:
        assert pool.submit(_started_from_prepared).result(timeout=120) == (True, True)
    other = worker.WorkerSettings(**{**vars(settings), "pages": False})
    with ProcessPoolExecutor(1, fork, worker.start, (other,)) as pool:
        assert pool.submit(_started_from_prepared).result(timeout=120) == (False, True)
