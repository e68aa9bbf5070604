"""Regenerate everything derived from the source notebook.

``python -m autograder generate`` rebuilds, from ``source/``:

- ``release/``: the student notebook, by stock ``nbgrader generate_assignment``;
- ``solutions/``: the solved notebook, by stock ``nbgrader generate_solution``
  (executed, outputs kept), then normalised so it is byte-for-byte the same on
  every run;
- ``samples/class/``: the sample class, one submission per student of
  ``samples/roster.toml``, each the release with answers from the corpus.

nbgrader runs in a scratch copy of the course, so regenerating never touches
the TA's gradebook. The drift test calls :func:`generate` into a temporary
folder and compares the result with what is committed.
"""

import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from . import course, notebook


class NbgraderError(RuntimeError):
    """A stock nbgrader command failed on the whole course (not one student's notebook)."""


def run_nbgrader(course_dir, *args):
    """Run ``nbgrader ARGS`` in ``course_dir`` with its config; NbgraderError on failure."""
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course_dir,
        env=course.tool_environment(),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise NbgraderError(f"nbgrader {' '.join(args)} failed:\n{result.stdout}{result.stderr}")


def scratch_course(root, into, release=False):
    """Copy the course's config and source (and release) folders from ``root`` into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for name in course.CONFIG_FILES:
        shutil.copy(root / name, into / name)
    for folder in ("source", "release") if release else ("source",):
        shutil.copytree(root / folder, into / folder)
    return into


def normalise_solution(nb, source_nb):
    """Make an executed solution notebook reproducible and readable.

    Keeps the source's notebook metadata (the kernelspec, not the Python
    version that happened to run it) and drops the solution markers, which
    only mean something to nbgrader.
    """
    nb.metadata = source_nb.metadata
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if notebook.is_answer(cell):
            cell.source = notebook.strip_solution_markers(cell.source)
    return nb


def sample_class(root, release_nb, solution_nb):
    """``{student_id: notebook}`` for the sample class in ``samples/roster.toml``.

    Each student's entry names answer sets of the corpus; an answer cell that no
    set fills keeps the solution, except for ``blank`` students, whose cells
    keep the release's stubs. A student listed with ``stop_after`` leaves every
    answer cell after that one as a stub.
    """
    from .corpus import load_corpus  # the corpus is test data; only the sample class needs it

    roster = tomllib.loads((root / course.SAMPLE_ROSTER).read_text())
    entries = load_corpus(root / course.CORPUS)
    solutions = notebook.answers(solution_nb)
    stubs = notebook.answers(release_nb)
    order = list(stubs)
    class_ = {}
    for student_id, spec in roster["students"].items():
        if spec.get("blank"):
            answers = dict(stubs)
        else:
            answers = dict(solutions)
            for name in spec.get("answers", []):
                answers.update(entries[name].cells)
        if "stop_after" in spec:
            for later in order[order.index(spec["stop_after"]) + 1 :]:
                answers[later] = stubs[later]
        class_[student_id] = notebook.fill(release_nb, answers)
    return class_


def generate(root, out):
    """Build release/, solutions/ and samples/class/ from ``root``'s source into ``out``."""
    root, out = Path(root), Path(out)
    with tempfile.TemporaryDirectory(prefix="course-") as scratch:
        scratch = Path(scratch)
        scratch_course(root, scratch)
        run_nbgrader(scratch, "generate_assignment", course.ASSIGNMENT, "--force")
        run_nbgrader(scratch, "generate_solution", course.ASSIGNMENT, "--force")
        for kind in ("release", "solutions"):
            target = out / kind / course.ASSIGNMENT
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(scratch / kind / course.ASSIGNMENT, target)

    source_nb = notebook.read(root / course.SOURCE)
    solution_nb = normalise_solution(notebook.read(out / course.SOLUTION), source_nb)
    notebook.write(solution_nb, out / course.SOLUTION)

    release_nb = notebook.read(out / course.RELEASE)
    target = out / course.SAMPLE_CLASS
    if target.exists():
        shutil.rmtree(target)
    for student_id, nb in sample_class(root, release_nb, solution_nb).items():
        notebook.write(nb, target / course.submission_path(student_id))


def main(args):
    """Regenerate the course's generated files in place."""
    generate(course.ROOT, course.ROOT)
    for path in (course.RELEASE, course.SOLUTION, course.SAMPLE_CLASS):
        print(f"regenerated {path}")
    return 0
