"""``python -m autograder check NOTEBOOK``: the students' self-check, run from the repository.

The same code students run as ``python self_check.py`` in their release
folder (:mod:`.self_check`); here the stubs come from the assignment's release
instead of being written into the script, and the notebook runs in a scratch
copy of the release folder, so its helper files are beside it wherever the
notebook lives.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import find_assignment
from autograder.tools import self_check


def check(
    path: Path | str,
    *,
    assignment: str | None = None,
    course: Path | str | None = None,
    timeout: float = self_check.TIMEOUT,
) -> int:
    """Check one notebook; exit status 0 only when everything is done and passing."""
    chosen = find_assignment(course, assignment)
    stubs = {
        name: notebook.answers(notebook.read(chosen.release(name))) for name in chosen.notebooks
    }
    path = Path(path)
    name = path.name if path.name in chosen.notebooks else chosen.notebooks[0]
    with tempfile.TemporaryDirectory(prefix="self-check-") as scratch:
        folder = Path(scratch) / chosen.id
        shutil.copytree(chosen.release_dir, folder)
        if path.is_file():
            shutil.copyfile(path, folder / name)
        argv = [str(folder / name if path.is_file() else path), "--timeout", str(timeout)]
        return self_check.main(argv, {"id": chosen.id, "notebooks": stubs})
