"""Small nbgrader courses for the engine's tests: the one place nbgrader cells are built.

The engine knows nbgrader, not any lab, so its tests grade courses written
here in a temporary folder: a few cells, a helper module, a config. The lab's
own tests (``tests/lab/``) use the repository's course instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat

#: nbgrader's cell kinds, as (grade, solution, locked)
KINDS = {
    "answer": (False, True, False),  # code the student writes
    "test": (True, False, True),  # a test cell with points
    "manual": (True, True, False),  # a written answer a TA grades (Markdown)
    "locked": (False, False, True),  # read-only code (setup, imports)
}

CONFIG = (
    "c = get_config()  # noqa: F821\n"
    'c.CourseDirectory.course_id = "toy"\n'
    'c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}\n'
)  #: a course's nbgrader_config.py: nbgrader's defaults but for these


def cell(
    source: str, grade_id: str | None = None, kind: str | None = None, points: float = 0
) -> Any:
    """One cell; kind: a key of :data:`KINDS` (nbgrader's metadata), or None for a plain cell.

    A ``manual`` cell is Markdown, every other a code cell.
    """
    if kind is None:
        return nbformat.v4.new_code_cell(source)
    grade, solution, locked = KINDS[kind]
    meta = {
        "grade": grade,
        "solution": solution,
        "locked": locked,
        "grade_id": grade_id,
        "points": points,
        "schema_version": 3,
    }
    make = nbformat.v4.new_markdown_cell if kind == "manual" else nbformat.v4.new_code_cell
    return make(source, metadata={"nbgrader": meta}, id=grade_id)


def notebook(*cells: Any) -> Any:
    """A notebook of ``cells``, with Python's kernel."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.from_dict(c) for c in cells])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def write_notebook(cells: list[Any], path: Path) -> None:
    """Write a notebook of ``cells`` at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook(*cells), str(path))


DOUBLE = [
    cell(
        "def double(v):\n    ### BEGIN SOLUTION\n    return 2 * v\n    ### END SOLUTION",
        "double",
        "answer",
    ),
    cell('"""Does double(2) give 4?"""\nassert double(2) == 4', "test_double", "test", 1),
    cell(
        "# Hidden test: negatives too.\n### BEGIN HIDDEN TESTS\nassert double(-3) == -6\n"
        "### END HIDDEN TESTS",
        "test_double_negative",
        "test",
        2,
    ),
]  #: the smallest assignment: one answer, a visible test, a hidden one


LESSON = [
    nbformat.v4.new_markdown_cell("# Doubling and counting\n\nTwo small functions.", id="intro"),
    DOUBLE[0],
    DOUBLE[1],
    DOUBLE[2],
    cell(
        "def count_words(text):\n    ### BEGIN SOLUTION\n    return len(text.split())\n"
        "    ### END SOLUTION",
        "count_words",
        "answer",
    ),
    cell('assert count_words("one two three") == 3', "test_count_words", "test", 2),
    cell("Why does doubling twice quadruple?", "why_double", "manual", 2),
]  #: a class's assignment: two answers, three test cells (5 points) and a written answer (2)

ARRAYS = [
    nbformat.v4.new_markdown_cell("# Arrays\n\nScaling, spreads and a picture.", id="intro"),
    cell("import numpy as np\nimport matplotlib.pyplot as plt", "setup", "locked"),
    cell(
        "def scale(v, k):\n    ### BEGIN SOLUTION\n    return np.asarray(v, dtype=float) * k\n"
        "    ### END SOLUTION",
        "scale",
        "answer",
    ),
    cell(
        '"""Does scale multiply every entry?"""\nassert np.allclose(scale([1, 2], 3), [3, 6])',
        "test_scale",
        "test",
        1,
    ),  # fmt: skip
    cell(
        "# Hidden test: an array and a negative factor.\n### BEGIN HIDDEN TESTS\n"
        "assert np.allclose(scale(np.arange(3), -2), [0, -2, -4])\n### END HIDDEN TESTS",
        "test_scale_hidden",
        "test",
        2,
    ),
    cell(
        "def spread(v):\n    ### BEGIN SOLUTION\n    return float(np.max(v) - np.min(v))\n"
        "    ### END SOLUTION",
        "spread",
        "answer",
    ),
    cell(
        '"""Is the spread the largest less the smallest?"""\nassert spread([1, 5, 2]) == 4',
        "test_spread",
        "test",
        1,
    ),  # fmt: skip
    cell(
        "# Hidden test: negatives.\n### BEGIN HIDDEN TESTS\n"
        "assert spread(np.array([-3.0, 3.0])) == 6\n### END HIDDEN TESTS",
        "test_spread_hidden",
        "test",
        1,
    ),
    nbformat.v4.new_code_cell(
        "fig, ax = plt.subplots(figsize=(2, 2))\nax.imshow(np.eye(3))\n"
        "ax.set_title('the identity')\nplt.show()",
        id="picture",
    ),
    cell(
        "### BEGIN SOLUTION\ntable = np.arange(6).reshape(2, 3)\n### END SOLUTION",
        "table",
        "answer",
    ),
    cell(
        '"""Is table the numbers 0 to 5 in two rows?"""\n'
        "assert np.shape(table) == (2, 3) and table[1, 2] == 5",
        "test_table",
        "test",
        1,
    ),  # fmt: skip
    cell("Why is the spread never negative?", "why", "manual", 2),
]  #: a numpy course's assignment with a figure: two functions, a table, 6 points and a written 2

ARRAYS_POINTS = 6.0  #: what :data:`ARRAYS`'s tests give, the written answer aside

HIDE_HIDDEN_TESTS = """
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
"""  #: a course's feedback without the hidden tests' code (nbgrader's default shows it)

LESSON_POINTS = 5.0  #: what :data:`LESSON`'s tests give, the written answer aside

SOLVED = {
    "double": "def double(v):\n    return 2 * v",
    "count_words": "def count_words(text):\n    return len(text.split())",
    "why_double": "Each doubling multiplies by two, and two times two is four.",
}  #: a student's right answers to :data:`LESSON`, by grade id


def write_course(
    root: Path,
    assignment_id: str = "toy-1",
    notebooks: dict[str, list[Any]] | None = None,
    helpers: dict[str, str] | None = None,
    config: str = "",
) -> Path:
    """A course at ``root``: its config (with ``config`` added) and one assignment's source.

    notebooks: ``{file name: cells}`` (default: ``toy.ipynb`` of :data:`DOUBLE`);
    helpers: ``{file name: text}`` beside the notebooks.
    """
    source = root / "source" / assignment_id
    source.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(CONFIG + config)
    for name, cells in (notebooks or {"toy.ipynb": DOUBLE}).items():
        write_notebook(cells, source / name)
    for name, text in (helpers or {}).items():
        (source / name).write_text(text)
    return root


def grade_class(
    course: Path,
    assignment_id: str,
    notebook_name: str,
    students: dict[str, list[Any]],
    folder: Path,
) -> tuple[Any, Path]:
    """Generate ``course``'s release, hand in each student's cells as ``notebook_name`` under
    ``folder/subs``, and grade them with one worker into ``folder/out``: (the run, out)."""
    from .command_line import run_command_line

    assert run_command_line(["generate", "--course", str(course)], timeout=300).returncode == 0
    for student, cells in students.items():
        write_notebook(cells, folder / "subs" / student / assignment_id / notebook_name)
    out = folder / "out"
    done = run_command_line(
        ["grade", str(folder / "subs"), "--course", str(course), "--out", str(out),
         "--jobs", "1"],
        timeout=600,
    )  # fmt: skip
    return done, out


def assignment(root: Path, notebook_name: str = "toy.ipynb", assignment_id: str = "toy-1") -> Any:
    """The :class:`~autograder.pipeline.course.assignment.Assignment` of a new course at
    ``root`` whose one notebook, ``notebook_name``, is :data:`DOUBLE`.

    Its release is the source as is (no ``generate``): enough for what reads the
    release's cells, not for grading.
    """
    from autograder.pipeline.course.assignment import find_assignment

    write_course(root, assignment_id, {notebook_name: DOUBLE})
    write_notebook(DOUBLE, root / "release" / assignment_id / notebook_name)
    return find_assignment(root)


def tree_hash(folder: Path, skip: tuple[str, ...] | set[str] = ()) -> dict[str, str]:
    """``{relative path: sha256}`` of every file below ``folder``, but under a part in ``skip``."""
    import hashlib

    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(Path(folder).rglob("*"))
        if p.is_file() and not any(part in skip for part in p.relative_to(folder).parts)
    }
