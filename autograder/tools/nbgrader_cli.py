"""Stock nbgrader's own commands, run in a scratch copy of a course.

What :mod:`.generate` (the release and solutions) and :mod:`.stock` (the
reference scores) build on; the TA's course folder and gradebook are never
touched.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from ..pipeline.course import CONFIG_FILES, course_directory, load_config, tool_environment


class NbgraderError(RuntimeError):
    """A stock nbgrader command failed on the whole course (not one student's notebook)."""


def run_nbgrader(course_dir: Path, *args: str) -> None:
    """Run ``nbgrader ARGS`` in ``course_dir`` with its config; NbgraderError on failure."""
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course_dir,
        env=tool_environment(),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise NbgraderError(f"nbgrader {' '.join(args)} failed:\n{result.stdout}{result.stderr}")


def scratch_course(root: Path, into: Path, release: bool = False) -> Path:
    """Copy the course's config and source (and release) folders from ``root`` into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for name in CONFIG_FILES:
        shutil.copy(root / name, into / name)
    coursedir = course_directory(root, load_config(root))
    folders = [coursedir.source_directory] + ([coursedir.release_directory] if release else [])
    for folder in folders:
        shutil.copytree(root / folder, into / folder)
    return into
