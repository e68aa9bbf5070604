"""Stock nbgrader's own commands, run in a scratch copy of a course.

What :mod:`.generate` (the release and solutions) and :mod:`.stock` (the
reference scores) build on; the TA's course folder and gradebook are never
touched.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from autograder.pipeline.course.assignment import (
    config_files,
    course_directory,
    load_config,
    tool_environment,
)


class NbgraderError(RuntimeError):
    """A stock nbgrader command failed on the whole course (not one student's notebook)."""


def run_nbgrader(
    course_dir: Path,
    *args: str,
    on_line: Callable[[str], None] | None = None,
    join: Callable[[], None] | None = None,
) -> None:
    """Run ``nbgrader ARGS`` in ``course_dir`` with its config; NbgraderError on failure.

    on_line: called with each line nbgrader logs, as it logs it (for progress);
    join: run in the new process before nbgrader starts (a benchmark puts it in a
    cgroup that counts its CPU).
    """
    said = []
    with subprocess.Popen(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course_dir,
        env=tool_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=join,
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            said.append(line)
            if on_line is not None:
                on_line(line)
    if process.returncode != 0:
        raise NbgraderError(f"nbgrader {' '.join(args)} failed:\n{''.join(said)}")


def scratch_course(root: Path, into: Path, release: bool = False) -> Path:
    """Copy the course's config and source (and release) folders from ``root`` into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for name in config_files(root):
        shutil.copy(root / name, into / name)
    coursedir = course_directory(root, load_config(root))
    folders = [coursedir.source_directory] + ([coursedir.release_directory] if release else [])
    for folder in folders:
        shutil.copytree(root / folder, into / folder)
    return into
