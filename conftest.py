"""What every pytest run here starts with, and how ``make test`` shares it out.

The engine is started as its entry points start it (:func:`autograder.startup.start`):
the tests call it in-process. nbval's plugin imports nbformat when it loads, so
it is loaded here, after the start, instead of by its entry point
(``-p no:nbval`` in pyproject.toml); otherwise every run pays jsonschema's
slow IRI checker, about 1.5 s.

``make test`` runs the suite on two pytest-xdist workers, handed out here
(:func:`work_unit`): each test to the worker that is free, but a file's tests
stay together when its fixtures outlive a test (the solution notebook's cells
too), and the files sharing a costly session fixture share a worker. No test
looks at more of the machine than what it started itself (a grading run's
sandboxes are found by the run's pid: ``tests/engine/processes.py``),
so two workers never see each other's processes.
"""

import ast
import functools
from pathlib import Path
from typing import Any

import pytest

from autograder import startup

startup.start()

pytest_plugins = ["nbval.plugin"]

#: Fixtures whose tests must share one worker of ``make test`` (pytest-xdist): a
#: session fixture too costly to build on each, or Linux users two files create.
ONE_WORKER = {
    "graded_class": "hostile-class",  # this lab's class graded once, about 60 s
    "hostile_class": "engine-hostile",  # the toy course's hostile class, about 20 s
    "graded_corpus": "hostile-class",  # read from it
    "stock_graded": "stock-live",  # stock nbgrader live, about 20 s
    "regenerated": "regenerated",  # release/, solutions/ and samples/ generated afresh
    "shared_machine": "exchange-users",  # test_exchange and test_hub add the same users
    # ngshare's environment (15 s), and the users' environment its hub shares with test_hub
    "ngshare_env": "exchange-users",
}
#: Work units of minutes, handed out first, longest first: no worker is left with one at the end.
FIRST = (
    "hostile-class",
    "engine-hostile",
    "exchange-users",
    "tests/lab/tools/test_gradescope.py",
    "tests/engine/test_ta_commands.py",
    "tests/engine/test_ta_decisions.py",
    "tests/lab/test_accessibility.py",
    "stock-live",
)
SECTIONS = pytest.StashKey[dict[str, str]]()  #: the workers' summaries: {title: text}


def work_unit(nodeid: str) -> str:
    """What ``make test`` hands one worker at a time, for the test ``nodeid``.

    - a group of files that ask for a fixture of :data:`ONE_WORKER` (a parameter
      of one of their functions: a test or a fixture);
    - a file whose fixtures outlive a test (module-scoped), so they are built
      once; a notebook too (nbval runs its cells in order);
    - else the test alone: a file of long tests is shared among the workers.
    """
    path = nodeid.split("::")[0]
    unit = _file_unit(path)
    return nodeid if unit is None else unit


@functools.cache
def _file_unit(path: str) -> str | None:
    """The group or file that :func:`work_unit` keeps together; None: each test alone.
    The file is parsed, not collected: the scheduler runs before any test is
    collected in its process."""
    if not path.endswith(".py"):
        return path  # a notebook: nbval runs its cells in order
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return path  # pytest reports it
    functions = [
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    asked = {
        parameter.arg
        for node in functions
        for parameter in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
    }
    for fixture, group in ONE_WORKER.items():
        if fixture in asked:
            return group
    scoped = any(
        keyword.arg == "scope"
        for node in functions
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call)
        for keyword in decorator.keywords
    )
    has_classes = any(isinstance(node, ast.ClassDef) for node in tree.body)
    return path if scoped or has_classes else None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Hand tests out by :func:`work_unit`, in the order collected (pytest 9 ignores
    xdist's ``xdist_group`` marks)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False
    return ByWorkUnit(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker of ``make test``: the units of :data:`FIRST` first, the rest as found."""
    if hasattr(config, "workerinput"):
        rank = {unit: number for number, unit in enumerate(FIRST)}
        items.sort(key=lambda item: rank.get(work_unit(item.nodeid), len(FIRST)))


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SECTIONS] = {}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A worker is done: keep the summaries it wrote (``workeroutput["sections"]``)."""
    node.config.stash[SECTIONS].update(getattr(node, "workeroutput", {}).get("sections", {}))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the workers' summaries (one process prints its own: tests/lab/conftest.py)."""
    for title, text in config.stash.get(SECTIONS, {}).items():
        terminalreporter.section(title)
        terminalreporter.write_line(text)
