"""What a process that runs the grader sets up first: its console, and quicker validation.

Called by every entry point (the command line, Gradescope's ``run_autograder``,
a Dask worker's first task), never on import: a program that imports the
engine keeps its own logging and its own modules as they are.
"""

from __future__ import annotations

import sys

from autograder import log


def start() -> None:
    """Install the console handler (:func:`autograder.log.install`) and skip a slow checker.

    nbformat validates notebooks with jsonschema, which on import builds a
    parser for IRI strings from the optional ``rfc3987-syntax`` package
    (installed with Jupyter). That takes over a second in every process that
    validates a notebook, and the notebook schema has no IRI fields. Marking
    the module absent, before jsonschema is first imported, makes jsonschema
    skip that checker; nothing else changes.
    """
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    log.install()
