"""Do forked workers start from the state their main process built once, and only from it?

``worker.prepare`` builds the assignment's notebooks, steps and compiled page template in
the process that forks the pool, and renders what every page shares; each worker
(``worker.start``) starts from its copy. The main process's ``sys.path`` stays its own:
only a worker puts the course's helpers on it.
"""

import copy
import gc
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from types import SimpleNamespace

import pytest

from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.course.gradebook import ensure_gradebook
from autograder.pipeline.errors import Status
from autograder.pipeline.grading import worker
from autograder.pipeline.settings import GradingLimits
from autograder.sandbox import cpus

from . import toy

pytestmark = pytest.mark.slow  # forks worker processes


def _started_from_prepared() -> tuple[bool, bool, bool]:
    """In a pool worker: (it is the prepared Worker's copy, the course's helpers importable,
    what it inherited is out of the collector's walks)."""
    assert worker._worker is not None
    helpers = str(worker._worker.assignment.source_dir) in sys.path
    return worker._worker is worker._prepared, helpers, gc.get_freeze_count() > 10_000


def _test_cells_compiled_here() -> int:
    """In a pool worker: how many of its source's test cells it had to compile itself."""
    assert worker._worker is not None
    before = worker.execute._compiled.cache_info().misses
    for cell in filter(worker.notebook.is_test, worker._worker.sources["toy.ipynb"].cells):
        worker.execute.compiled_test(cell)
    return worker.execute._compiled.cache_info().misses - before


def _renders_only_the_students_own_cells() -> list[str]:
    """In a pool worker: the text of each code cell its first page had to highlight."""
    assert worker._worker is not None
    exporter = worker._worker.renderer.exporter
    highlighted: list[str] = []
    highlight = exporter._highlight
    exporter._highlight = lambda source, *args: (
        highlighted.append(source) or highlight(source, *args)
    )
    nb = copy.deepcopy(worker._worker.sources["toy.ipynb"])
    nb.cells[0].source = "def double(v):\n    return v + v"
    status = SimpleNamespace(status=Status.OK, detail="")
    worker._worker.renderer.render("ada", {"toy.ipynb": nb}, worker._worker.columns, {}, status)
    return highlighted


def test_workers_start_from_what_the_main_process_prepared(tmp_path, monkeypatch):
    assignment = toy.assignment(tmp_path / "course")
    settings = worker.WorkerSettings(
        str(assignment.root), assignment.id,
        ensure_gradebook(assignment, f"sqlite:///{tmp_path / 'gradebook.db'}"),
        GradingLimits(timeout=10, sandbox=False),
    )  # fmt: skip
    path = list(sys.path)
    monkeypatch.setattr(worker, "_prepared", None)
    dialects = []
    load_dialect = worker.internals.load_dialect
    monkeypatch.setattr(worker.internals, "load_dialect", lambda url: dialects.append(url))
    worker.prepare(settings)
    assert sys.path == path and worker._prepared is not None  # nothing of the course here
    assert dialects == [settings.db_url]  # imported before the fork, not in each worker
    monkeypatch.setattr(worker.internals, "load_dialect", load_dialect)
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(1, fork, worker.start, (settings,)) as pool:
        assert pool.submit(_started_from_prepared).result(timeout=120) == (True, True, True)
        assert pool.submit(_test_cells_compiled_here).result(timeout=120) == 0
        # the page's shared cells were rendered once, before the fork: a worker's first
        # page renders what is the student's own
        own = pool.submit(_renders_only_the_students_own_cells).result(timeout=120)
        assert own == ["def double(v):\n    return v + v"]
    other = worker.WorkerSettings(**{**vars(settings), "pages": False})
    with ProcessPoolExecutor(1, fork, worker.start, (other,)) as pool:
        assert pool.submit(_started_from_prepared).result(timeout=120) == (False, True, True)
    # the main process renders a page again with the renderer warmed here, for this
    # assignment only, and only where pages were asked for
    assert worker.warm_renderer(assignment) is worker._prepared.renderer
    elsewhere = toy.assignment(tmp_path / "another course")
    assert worker.warm_renderer(elsewhere) is None
    worker.prepare(other)
    assert worker.warm_renderer(assignment) is None


def _where_it_and_its_students_run() -> tuple[int, list[int], str]:
    """In a pool worker: its pid, the CPUs it may use, and those a student of it may use."""
    assert worker._worker is not None
    sandbox = worker._worker._sandbox()
    student = sandbox.spawn({}, worker._worker.settings.limits.for_sandbox())
    try:
        cell = "import os\nprint(sorted(os.sched_getaffinity(0)))"
        reply = student.request({"op": "run", "source": cell}, 30)
    finally:
        student.close()
    time.sleep(0.2)  # busy a while: the other worker takes the next task
    said = "".join(output.get("text", "") for output in reply["outputs"]).strip()
    return os.getpid(), sorted(os.sched_getaffinity(0)), said


def test_each_worker_and_its_students_keep_to_a_cpu_of_their_own(tmp_path, monkeypatch):
    assignment = toy.assignment(tmp_path / "course")
    settings = worker.WorkerSettings(
        str(assignment.root), assignment.id,
        ensure_gradebook(assignment, f"sqlite:///{tmp_path / 'gradebook.db'}"),
        GradingLimits(timeout=10),  # bubblewrap's: students see the Python wherever it is
    )  # fmt: skip
    monkeypatch.setattr(worker, "_prepared", None)
    allowed = sorted(os.sched_getaffinity(0))
    fork = multiprocessing.get_context("fork")
    seen: dict[int, tuple[list[int], str]] = {}
    with ProcessPoolExecutor(2, fork, worker.start, (settings, cpus.WorkerNumbers(fork))) as pool:
        for _ in range(10):  # until both workers have answered
            tasks = [pool.submit(_where_it_and_its_students_run) for _ in range(2)]
            seen.update({pid: (mine, said) for pid, mine, said in (t.result(120) for t in tasks)})
            if len(seen) == 2:
                break
    assert len(seen) == 2
    if len(allowed) < 2:
        assert list(seen.values()) == [(allowed, str(allowed))] * 2
        return
    cpus_taken = sorted(mine[0] for mine, _ in seen.values())
    assert cpus_taken == allowed[:2]  # one each, in turn
    assert all(mine == [mine[0]] and said == str(mine) for mine, said in seen.values())


def test_the_gradebooks_dialect_is_imported_before_the_workers_fork(tmp_path):
    """Does ``load_dialect`` import SQLAlchemy's sqlite dialect, and shrug off a bad URL?"""
    import subprocess

    probe = (
        "import sys\n"
        "from autograder.pipeline.course import internals\n"
        "before = 'sqlalchemy.dialects.sqlite' in sys.modules\n"
        "internals.load_dialect('no-such-scheme://x')\n"
        f"internals.load_dialect('sqlite:///{tmp_path}/gradebook.db')\n"
        "print(before, 'sqlalchemy.dialects.sqlite' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True"]
    assert not (tmp_path / "gradebook.db").exists()  # imported only: nothing opened


def test_a_test_cell_that_does_not_compile_fails_in_the_notebooks_not_before(tmp_path):
    """Does a source test cell with a syntax error leave the workers' start alone (each
    student's notebook shows the error, as before)?"""
    broken = [*toy.DOUBLE[:2], toy.cell("assert double(2) ==", "test_broken", "test", 1)]
    toy.write_course(tmp_path / "course", "toy-1", {"toy.ipynb": broken})
    toy.write_notebook(broken, tmp_path / "course" / "release" / "toy-1" / "toy.ipynb")
    assignment = find_assignment(tmp_path / "course")
    settings = worker.WorkerSettings(
        str(assignment.root), assignment.id, f"sqlite:///{tmp_path / 'gradebook.db'}",
        GradingLimits(timeout=10, sandbox=False),
    )  # fmt: skip
    prepared = worker.Worker(settings, this_process=False)
    prepared.fill_caches(pages=False)
    with pytest.raises(SyntaxError):
        worker.execute.compiled_test(broken[2])
