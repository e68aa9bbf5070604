"""What every pytest run here starts with, and how ``make test`` shares it out.

The engine is started as its entry points start it (:func:`autograder.startup.start`):
the tests call it in-process. nbval's plugin imports nbformat when it loads, so
it is loaded here, after the start, instead of by its entry point
(``-p no:nbval`` in pyproject.toml); otherwise every run pays jsonschema's
slow IRI checker, about 1.5 s.

``make test`` runs the suite on two pytest-xdist workers, handed out here
(:func:`work_unit`): a file's tests (the solution notebook's cells too) on one
worker. No test looks at more of the machine than what it started itself (a
grading run's sandboxes are found by the run's pid: ``tests/processes.py``),
so two workers never see each other's processes.
"""

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from autograder import startup

startup.start()

pytest_plugins = ["nbval.plugin"]

#: Fixtures whose tests must share one worker of ``make test`` (pytest-xdist): a
#: session fixture too costly to build on each, or Linux users two files create.
ONE_WORKER = {
    "graded_class": "hostile-class",  # graded once, about 80 s
    "graded_corpus": "hostile-class",  # read from it
    "stock_graded": "hostile-class",  # stock nbgrader live, about 20 s; test_grader reads it too
    "regenerated": "regenerated",  # release/, solutions/ and samples/ generated afresh
    "shared_machine": "exchange-users",  # test_exchange and test_hub add the same users
}
#: Work units of minutes, handed out first: neither worker is left with one at the end.
FIRST = ("hostile-class", "exchange-users", "regenerated")
SECTIONS = pytest.StashKey[dict[str, str]]()  #: the workers' summaries: {title: text}


@functools.cache
def work_unit(path: str) -> str:
    """What ``make test`` hands one worker at a time: a file of tests, so its module
    fixtures are built once, or a group of the files that name a fixture of
    :data:`ONE_WORKER`. (The file's text is read: the scheduler runs before any
    test is collected in its process.)"""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return path
    for fixture, group in ONE_WORKER.items():
        if re.search(rf"\b{fixture}\b", text):
            return group
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Hand tests out by :func:`work_unit`, in the order collected (pytest 9 ignores
    xdist's ``xdist_group`` marks)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid.split("::")[0])

    config.option.loadscopereorder = False
    return ByWorkUnit(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker of ``make test``: the units of :data:`FIRST` first, the rest as found."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: work_unit(item.nodeid.split("::")[0]) not in FIRST)


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
