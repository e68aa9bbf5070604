"""Regenerate everything derived from the source notebook.

``python -m autograder generate`` first makes each source notebook's points
tables true to its cells' points (:mod:`.points_table`: a rubric change), then
rebuilds, from ``source/``:

- ``release/``: the student notebook, by stock ``nbgrader generate_assignment``,
  ``self_check.py``, the students' self-check (:mod:`.self_check` with the
  assignment's stubs written in), with ``crash_reasons.py`` beside it (it
  explains a crash in the student's kernel as the feedback page does), and
  ``README.md``, what a student needs to know in plain words
  (``templates/student_readme.md.j2``), unless the source folder has a README
  of its own;
- ``solutions/``: the solved notebook, by stock ``nbgrader generate_solution``
  (executed, outputs kept), then normalised so it is byte-for-byte the same on
  every run;
- ``samples/class/``: the sample class, one submission per student of
  ``samples/roster.toml``, each the release with answers from the corpus.

nbgrader runs in a scratch copy of the course, so regenerating never touches
the TA's gradebook. The drift test calls :func:`generate` into a temporary
folder and compares the result with what is committed.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import logging
import shutil
import sys
import tempfile
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

from autograder.pipeline.course import notebook, placement
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import due_date, ensure_gradebook
from autograder.sandbox import crash_reasons
from autograder.tools import points_table, self_check
from autograder.tools.corpus import CORPUS, load_corpus
from autograder.tools.nbgrader_cli import run_nbgrader, scratch_course

_log = logging.getLogger(__name__)

SAMPLE_ROSTER = Path("samples") / "roster.toml"
SAMPLE_CLASS = Path("samples") / "class"
IGNORED_OUTPUT = "nbval-ignore-output"  #: nbval's tag for a cell whose output differs per run


def normalise_solution(nb: Any, source_nb: Any) -> Any:
    """Make an executed solution notebook reproducible and readable.

    Keeps the source's notebook metadata (the kernelspec, not the Python
    version that happened to run it) and drops the solution markers, which
    only mean something to nbgrader. Whatever depends on timing goes: a
    cell's printed text arrives as one stream output or several, depending on
    when the kernel flushed (on a busy machine, more often), so consecutive
    streams are merged, as nbconvert's ``CoalesceStreamsPreprocessor`` does;
    per-cell timings (``execution`` metadata) are dropped, and so are the
    outputs of a cell tagged ``nbval-ignore-output`` (a cell that times
    something prints other numbers on every run, and nbval does not compare it).
    """
    nb.metadata = source_nb.metadata
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if IGNORED_OUTPUT in cell.metadata.get("tags", []):
            cell.outputs, cell.execution_count = [], None
        if notebook.is_answer(cell):
            cell.source = notebook.strip_solution_markers(cell.source)
    return nb


SELF_CHECK = "self_check.py"
#: beside it, what explains a crash in the student's kernel (the grader's own explainer)
CRASH_REASONS = "crash_reasons.py"
STUDENT_README = "README.md"
TEMPLATES = Path(__file__).parent / "templates"
_EMPTY_ASSIGNMENT = 'ASSIGNMENT: dict[str, Any] = {"id": "", "notebooks": {}}'


def due_text(due: datetime | None) -> str:
    """A due date as students read it (``2026-03-01 12:00 UTC``); "" for none."""
    return due.strftime("%Y-%m-%d %H:%M UTC") if due is not None else ""


def self_check_script(
    assignment_id: str, releases: dict[str, Any], due: str = "", needs: list[str] | None = None
) -> str:
    """The text of the release's ``self_check.py``: :mod:`.self_check`, stubs written in.

    releases: ``{notebook file name: released notebook}``; due: the due date as
    students read it (:func:`due_text`), "" for none; needs: what a student must
    install besides Jupyter (:func:`packages`).
    """
    filled: dict[str, Any] = {
        "id": assignment_id,
        "notebooks": {name: notebook.answers(nb) for name, nb in releases.items()},
    }
    if needs:
        filled["packages"] = needs
    if due:
        filled["due"] = due
    text = Path(self_check.__file__).read_text()
    if _EMPTY_ASSIGNMENT not in text:
        raise RuntimeError(f"{self_check.__file__} lost its line {_EMPTY_ASSIGNMENT!r}")
    literal = json.dumps(filled, indent=4)  # JSON of strings and dicts is Python too
    return text.replace(_EMPTY_ASSIGNMENT, f"ASSIGNMENT: dict[str, Any] = {literal}")


def packages(assignment: Assignment, releases: dict[str, Any]) -> list[str]:
    """What a student must ``pip install`` for the notebooks, besides Jupyter: the
    distributions of their top-level imports, in the order first imported.

    The standard library and the assignment's own helper modules are left out; an
    import no installed distribution provides is named as imported.
    """
    helpers = {Path(name).stem for name in assignment.helper_files()}
    provided = importlib.metadata.packages_distributions()
    found: list[str] = []
    for nb in releases.values():
        for node in ast.walk(ast.parse(notebook.imports(nb) or "pass")):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in (name.split(".")[0] for name in names):
                if name in sys.stdlib_module_names or name in helpers:
                    continue
                found += [d.lower() for d in provided.get(name, [name])[:1]]
    return [name for name in dict.fromkeys(found) if name not in ("ipython", "ipykernel")]


def student_readme(assignment: Assignment, releases: dict[str, Any], due: str = "") -> str:
    """The release's ``README.md``: the files, how to work, self-check, keep the name, submit.

    releases: ``{notebook file name: released notebook}``. The title is the first
    notebook's first heading; the points, those its graded cells carry; due: the
    due date as students read it, "" for none.
    """
    first = releases[assignment.notebooks[0]]
    headings = [
        line.removeprefix("# ").strip()
        for cell in first.cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith("# ")
    ]
    points = sum(
        float(notebook.nbgrader_meta(cell).get("points", 0))
        for nb in releases.values()
        for cell in nb.cells
        if notebook.is_graded(cell)
    )
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    return environment.get_template("student_readme.md.j2").render(
        title=headings[0] if headings else assignment.id,
        assignment=assignment.id,
        notebooks=list(assignment.notebooks),
        helpers=[name for name in assignment.helper_files() if name != STUDENT_README],
        stub=_code_stub(assignment),
        hidden=any(
            assignment.hidden_tests in cell.source
            for name in assignment.notebooks
            for cell in notebook.read(assignment.source(name)).cells
        ),
        packages=packages(assignment, releases),
        points=points,
        due=due,
    )


def roster(root: Path) -> dict[str, Any]:
    """The sample class's roster (``samples/roster.toml``), or {} if the course has none."""
    path = root / SAMPLE_ROSTER
    return tomllib.loads(path.read_text()) if path.is_file() else {}


def sample_class(root: Path, release_nb: Any, solution_nb: Any) -> dict[str, Any]:
    """``{student_id: notebook}`` for the sample class in ``samples/roster.toml``.

    Each student's entry names answer sets of the corpus; an answer cell that no
    set fills keeps the solution, except for ``blank`` students, whose cells
    keep the release's stubs. A student listed with ``stop_after`` leaves every
    answer cell after that one as a stub.
    """
    listed = roster(root)
    entries = load_corpus(root / CORPUS / listed["assignment"])
    solutions = notebook.answers(solution_nb)
    stubs = notebook.answers(release_nb)
    order = list(stubs)
    class_ = {}
    for student_id, spec in listed["students"].items():
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


def _code_stub(assignment: Assignment) -> str:
    """The last line of the stub nbgrader leaves in a Python answer cell, as the course
    configures it (``ClearSolutions.code_stub``)."""
    configured = assignment.config.ClearSolutions.get("code_stub") or {}
    stub = str(configured.get("python", "")) or "# YOUR CODE HERE\nraise NotImplementedError()"
    lines = [line for line in stub.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "# YOUR CODE HERE"


def generate(assignment: Assignment, out: Path) -> None:
    """Build the assignment's release and solutions (and the sample class) into ``out``."""
    root, out = assignment.root, Path(out)
    with tempfile.TemporaryDirectory(prefix="course-") as scratch:
        scratch_path = Path(scratch)
        scratch_course(root, scratch_path)
        run_nbgrader(scratch_path, "generate_assignment", assignment.id, "--force")
        run_nbgrader(scratch_path, "generate_solution", assignment.id, "--force")
        for kind in (assignment.release_dir, assignment.solution_dir):
            relative = kind.relative_to(root)
            target = out / relative
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(scratch_path / relative, target)
    releases = {
        name: notebook.read(out / assignment.release(name).relative_to(root))
        for name in assignment.notebooks
    }
    due = due_text(due_date(assignment))  # set with nbgrader db assignment add --duedate
    script = self_check_script(assignment.id, releases, due, packages(assignment, releases))
    release = out / assignment.release_dir.relative_to(root)
    (release / SELF_CHECK).write_text(script)
    shutil.copyfile(crash_reasons.__file__, release / CRASH_REASONS)
    if STUDENT_README not in assignment.helper_files():
        (release / STUDENT_README).write_text(student_readme(assignment, releases, due))
    for name in assignment.notebooks:
        solution = out / assignment.solution(name).relative_to(root)
        source_nb = notebook.read(assignment.source(name))
        notebook.write(normalise_solution(notebook.read(solution), source_nb), solution)
    if roster(root).get("assignment") == assignment.id and len(assignment.notebooks) == 1:
        name = assignment.notebooks[0]
        release_nb = notebook.read(out / assignment.release(name).relative_to(root))
        solution_nb = notebook.read(out / assignment.solution(name).relative_to(root))
        target = out / SAMPLE_CLASS
        if target.exists():
            shutil.rmtree(target)
        for student_id, nb in sample_class(root, release_nb, solution_nb).items():
            notebook.write(nb, target / assignment.submission_path(student_id, name))


def warn_placement(assignment: Assignment) -> None:
    """Warn, per notebook, where its tests must run beside the student's code, and why
    (:mod:`~autograder.pipeline.course.placement`): a difference a course author should
    know of before grading (``docs/course-authors.md``)."""
    files = assignment.helper_files()
    for name in assignment.notebooks:
        why = placement.reasons(notebook.read(assignment.source(name)), files)
        if why:
            _log.warning(
                f"warning: {name}: its tests will run beside the student's code, as stock "
                f"nbgrader runs them, where a student's code can reach their verdict: "
                f"{'; '.join(why)}"
            )


def main(*, assignment: str | None = None, course: Path | str | None = None) -> int:
    """Regenerate the assignment's generated files in place."""
    chosen = find_assignment(course, assignment)
    for name in chosen.notebooks:  # a rubric change: the prose's points tables follow it
        source_nb = notebook.read(chosen.source(name))
        fixed, said = points_table.updated(source_nb)
        if said:
            notebook.write(fixed, chosen.source(name))
            where = chosen.source(name).relative_to(chosen.root)
            _log.info(f"updated the points table in {where}: {'; '.join(said)}")
    generate(chosen, chosen.root)
    for path in (chosen.release_dir, chosen.solution_dir):
        _log.info(f"regenerated {path.relative_to(chosen.root)}")
    release = chosen.release_dir.relative_to(chosen.root)
    readme = STUDENT_README not in chosen.helper_files()
    added = [SELF_CHECK, CRASH_REASONS] + ([STUDENT_README] if readme else [])
    _log.info(
        f"added {', '.join(added[:-1])} and {added[-1]} to {release}: the students' self-check"
        + (
            ", what explains their crashes, and how to work, check and hand in"
            if readme
            else " and what explains their crashes"
        )
    )
    ensure_gradebook(chosen)  # as nbgrader generate_assignment records it: autograde finds it
    warn_placement(chosen)
    if roster(chosen.root).get("assignment") == chosen.id:
        _log.info(f"regenerated {SAMPLE_CLASS}")
    return 0
