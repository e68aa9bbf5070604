"""A Dask worker preload for the tests: workers that die on cue, as a crashed machine would.

``dask worker ... --preload tests/engine/dask_faults.py`` makes the worker process
exit at once when it starts grading a student whose id names a fault:
``die_once`` (only the first time, anywhere: a marker file in
``$AUTOGRADER_FAULTS`` remembers it) or ``die_always``. Nothing else changes.
"""

import os
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin


class DieOnCue(WorkerPlugin):
    """Exit the worker process when a faulty student's task starts executing."""

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing":
            return
        name = str(key)
        if "grade-die_always-" in name:
            os._exit(1)
        if "grade-die_once-" in name:
            marker = Path(os.environ["AUTOGRADER_FAULTS"]) / "died_once"
            try:
                marker.touch(exist_ok=False)
            except FileExistsError:
                return
            os._exit(1)


def dask_setup(worker):
    """Called by ``dask worker --preload``."""
    worker.plugins["die-on-cue"] = DieOnCue()
