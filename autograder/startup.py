"""What a process that runs the grader sets up first: its console, and quicker validation.

Called by every entry point (the command line, Gradescope's ``run_autograder``,
a Dask worker's first task), never on import: a program that imports the
engine keeps its own logging and its own modules as they are.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from autograder import log

#: what ``nbgrader.utils`` imports from setuptools, to unpack archives (``zip_collect``)
ARCHIVE_FUNCTIONS = ("unpack_archive", "unpack_tarfile", "unpack_zipfile")

#: Modules imported with what a command needs, for what no grading run uses: each waits
#: in ``sys.modules`` as a stand-in until something asks it for a name (:class:`OnFirstUse`).
#: Together about 70 ms of CPU in every process that starts the grader.
ON_FIRST_USE = (
    "soupsieve",  # bs4's CSS selectors: nbconvert selects only in its own HTML exporter
    "requests",  # nbgrader's JupyterHub authenticator, for the exchange
    "yaml",  # nbgrader's InstantiateTests, a step the grader never runs
    "prometheus_client",  # jupyter_server's metrics, with nbgrader's server extensions
    "arrow",  # jsonschema's duration format (by isoduration): not in a notebook's schema
    "webcolors",  # jsonschema's color formats: nor these
    "uri_template",  # jsonschema's uri-template format: nor this
    "tinycss2",  # the CSS sanitizer of nbconvert's bleach, for style attributes no page keeps
    "platformdirs",  # jupyter_core's folders for platforms' conventions, unused by default
)


#: What numerical libraries read for their thread pools. The grader's processes each take one
#: thread: its parallelism is its workers (``--jobs``), and a pool started on import costs
#: CPU in every process (OpenBLAS's two threads spin for ~45 ms as numpy loads). One thread
#: also sums in one order whatever the core count, as the sandbox's students do.
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def start() -> None:
    """Install the console handler (:func:`autograder.log.install`) and skip a slow checker.

    nbformat validates notebooks with jsonschema, which on import builds a
    parser for IRI strings from the optional ``rfc3987-syntax`` package
    (installed with Jupyter). That takes over a second in every process that
    validates a notebook, and the notebook schema has no IRI fields. Marking
    the module absent, before jsonschema is first imported, makes jsonschema
    skip that checker; nothing else changes. setuptools is likewise imported
    only if nbgrader unpacks an archive (``_archive_util_on_first_use``), and
    the modules of :data:`ON_FIRST_USE` only once something uses them. A
    numerical library loaded after this starts one thread (:data:`ONE_THREAD`),
    unless the environment already says how many.
    """
    for name in ONE_THREAD:
        os.environ.setdefault(name, "1")
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    _archive_util_on_first_use()
    for name in ON_FIRST_USE:
        on_first_use(name)
    log.install()


class OnFirstUse(types.ModuleType):
    """A module's stand-in in ``sys.modules``: the first name asked of it imports the real
    module, which answers that and every later one (through the stand-in too, for a
    module that imported it before).

    ``import name`` finds it and runs nothing; ``from name import x``, ``name.x``,
    ``import name.sub`` (which asks for ``__path__``) and ``hasattr`` import the real
    module first. ``importlib.util.find_spec`` sees the real module's spec.
    """

    def __getattr__(self, attribute: str) -> Any:
        return getattr(_imported(self.__name__), attribute)


def on_first_use(name: str) -> None:
    """Put a stand-in (:class:`OnFirstUse`) for the top-level module ``name`` in
    ``sys.modules``; nothing if it is imported already, or not installed (importing it
    must still fail)."""
    if name in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return
    if spec is None:
        return
    stand_in = OnFirstUse(name, "imported when first used")
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in


def _imported(name: str) -> types.ModuleType:
    """The real module ``name``, imported now if only its stand-in was."""
    found = sys.modules.get(name)
    if isinstance(found, OnFirstUse):
        sys.modules.pop(name, None)
    return importlib.import_module(name)


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """While the block imports what a command needs, no collections; then all of it frozen.

    What imports make lives as long as the process, yet Python's collector walks
    all of it in every full collection: several while a command's modules load
    (a tenth of a second each), and more as it runs. Frozen (``gc.freeze``) it is
    never walked again, and a worker forked later shares its pages untouched.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _archive_util_on_first_use() -> None:
    """Let ``nbgrader.utils`` import setuptools' archive functions without importing setuptools.

    ``nbgrader.utils`` imports three functions from ``setuptools.archive_util``
    on import, which loads all of setuptools and ``pkg_resources`` (about 0.3 s
    of CPU in every process that imports nbgrader), and calls them only to
    unpack a zip a TA collects. Until one is called, a stand-in module holds
    three functions that import the real module then and call its own.
    """
    if "setuptools.archive_util" in sys.modules:
        return
    stand_in = types.ModuleType("setuptools.archive_util", "imported when first used")
    for name in ARCHIVE_FUNCTIONS:
        setattr(stand_in, name, _on_first_call(name))
    stand_in.__getattr__ = _anything_else  # type: ignore[method-assign]
    sys.modules["setuptools.archive_util"] = stand_in


def _real_archive_util() -> types.ModuleType:
    """setuptools' own ``archive_util``, imported now in place of the stand-in."""
    found = sys.modules.get("setuptools.archive_util")
    if found is not None and found.__doc__ == "imported when first used":
        del sys.modules["setuptools.archive_util"]
    return importlib.import_module("setuptools.archive_util")


def _anything_else(name: str) -> Any:
    """The stand-in's other attributes: the real module's (a module's own, such as
    ``__path__``, which the import system looks for, it does not have)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_real_archive_util(), name)


def _on_first_call(name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(_real_archive_util(), name)(*args, **kwargs)

    call.__name__ = name
    return call
