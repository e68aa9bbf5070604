"""The course copies a Gradescope run grades in: the zip's course, and its visible-tests twin."""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import Assignment, config_files, find_assignment
from autograder.pipeline.course.gradebook import sources_hash

VISIBLE = "visible-course"  #: the course's twin whose tests are the visible ones alone
BUILT_FROM = ".built-from"  #: in :data:`VISIBLE`: the hash of the sources it was made from


def copy_course(chosen: Assignment, into: Path, extra: tuple[str, ...] = ()) -> None:
    """Copy ``chosen``'s config files, ``extra`` files of its root, and its source and
    release folders (no ``__pycache__``) into ``into``, at the same relative paths."""
    root = chosen.root
    for name in (*config_files(root), *extra, *chosen.named_by_config()):
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / name, into / name)
    for folder in (chosen.source_dir, chosen.release_dir):
        shutil.copytree(
            folder, into / folder.relative_to(root), ignore=shutil.ignore_patterns("__pycache__")
        )


def visible_only(chosen: Assignment, scratch: Path) -> Assignment:
    """A copy of the course in ``scratch`` whose tests are the visible ones alone.

    Its source notebooks hold the release's test cells (hidden tests cleared, as
    nbgrader clears them), so grading there runs the student's code on nothing
    a hidden test knows.
    """
    root = scratch / VISIBLE
    copy_course(chosen, root)
    for name in chosen.notebooks:
        released = {
            notebook.grade_id(c): c.source for c in notebook.read(chosen.release(name)).cells
        }
        source = notebook.read(chosen.source(name))
        for cell in source.cells:
            if notebook.is_test(cell) and notebook.grade_id(cell) in released:
                cell.source = released[notebook.grade_id(cell)]
        notebook.write(source, root / chosen.source(name).relative_to(chosen.root))
    return find_assignment(root, chosen.id)


def visible_course(chosen: Assignment, scratch: Path) -> Assignment:
    """The zip's :data:`VISIBLE` if it was made from the course's sources as they are, else
    one made now in ``scratch`` (:func:`visible_only`)."""
    built = chosen.root / VISIBLE
    try:
        current = (built / BUILT_FROM).read_text() == sources_hash(chosen)
    except OSError:
        current = False
    return find_assignment(built, chosen.id) if current else visible_only(chosen, scratch)
