"""Does what ordinary nbgrader courses pass between tests and answers grade as stock grades it?

A small numpy, pandas and matplotlib course written as ``docs/course-authors.md``
says, with what a test in a kernel may do with a student's answer: call it with
keywords, pass it a ``lambda``, iterate the generator it returns, use the class
it defines, read the axes it draws on, use the ``np`` of the student's own
first cell; answers that read the assignment's files (a PNG, a CSV in a
subfolder) by relative paths; and a second notebook whose tests seed numpy's
generator and rebind a student's name, which must run beside the student's
code. Right, wrong and blank students are graded by stock ``nbgrader
autograde`` and by the engine: every cell's points are equal, and only the
second notebook runs beside.
"""

import shutil

import pytest
from nbgrader.api import Gradebook

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import find_assignment
from autograder.tools.nbgrader_cli import run_nbgrader

from . import toy
from .command_line import run_command_line
from .toy import cell

pytest.importorskip("pandas")  # a test dependency of the suite: never skipped there
pytestmark = [pytest.mark.slow, pytest.mark.stock]

ID = "boundary-1"
PNG = bytes(range(256)) + b"\x89PNG" * 11  #: 300 bytes that are not UTF-8


def answer(grade_id: str, solved: str) -> dict:
    """An answer cell whose solution is ``solved`` (its first line, a def, stays for the stub)."""
    first, _, body = solved.partition("\n")
    solution = f"{first}\n    ### BEGIN SOLUTION\n{body}\n    ### END SOLUTION"
    return cell(solution, grade_id, "answer")


TOOLS = [
    cell("import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt"),
    answer("apply", "def apply(f, xs, *, scale=1):\n    return [scale * f(x) for x in xs]"),
    cell("assert apply(lambda x: x + 1, [1, 2], scale=2) == [4, 6]", "test_apply", "test", 1),
    answer("evens", "def evens(n):\n    return (i for i in range(0, n, 2))"),
    cell("assert list(evens(5)) == [0, 2, 4]", "test_evens", "test", 1),
    cell(
        "class Tally:\n    ### BEGIN SOLUTION\n    def __init__(self):\n        self.n = 0\n\n"
        "    def add(self, k=1):\n        self.n += k\n        return self\n    ### END SOLUTION",
        "tally",
        "answer",
    ),
    cell("t = Tally()\nt.add()\nt.add(k=2)\nassert t.n == 3", "test_tally", "test", 1),
    answer(
        "plot",
        'def plot(ys):\n    fig, ax = plt.subplots()\n    ax.plot(ys)\n    ax.set_title("ys")\n'
        "    return ax",
    ),
    cell(
        'ax = plot([1, 2, 3])\nassert ax.get_title() == "ys"\n'
        "assert list(ax.lines[0].get_ydata()) == [1, 2, 3]",
        "test_plot",
        "test",
        1,
    ),
    cell("assert np.allclose(np.arange(3), [0, 1, 2])", "test_np", "test", 1),
    answer("best", 'def best():\n    return pd.read_csv("data/scores.csv").score.max()'),
    cell("assert best() == 9", "test_best", "test", 1),
    answer("logo", 'def logo():\n    return len(open("logo.png", "rb").read())'),
    cell("assert logo() == 300", "test_logo", "test", 1),
]
SEEDED = [
    cell("import numpy as np", "setup", "locked"),
    answer("draw", "def draw():\n    return np.random.rand()"),
    answer("twice", "def twice():\n    return 2 * draw()"),
    cell(
        "np.random.seed(0)\nfirst = draw()\nnp.random.seed(0)\nassert first == draw() < 1",
        "test_draw",
        "test",
        1,
    ),
    cell(
        "original = draw\ndraw = lambda: 0.25\ntry:\n    assert twice() == 0.5\n"
        "finally:\n    draw = original",
        "test_twice_uses_draw",
        "test",
        1,
    ),
]
WRONG = {
    "apply": "def apply(f, xs, scale=1):\n    return [f(scale * x) for x in xs]",
    "evens": "def evens(n):\n    return (i for i in range(1, n, 2))",
    "tally": "class Tally:\n    def __init__(self):\n        self.n = 0\n\n"
    "    def add(self, k=1):\n        self.n = k\n        return self",
    "plot": "def plot(ys):\n    fig, ax = plt.subplots()\n    ax.plot(ys[::-1])\n    return ax",
    "best": 'def best():\n    return pd.read_csv("data/scores.csv").score.min()',
    "logo": 'def logo():\n    return len(open("logo.png", "rb").read(100))',
    "draw": "def draw():\n    return np.random.default_rng().random()",
    "twice": "def twice():\n    return 2 * np.random.rand()",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The course, and its class graded by stock nbgrader and by the engine: ``(stock
    gradebook view, ours, the engine's standard error)``."""
    root = tmp_path_factory.mktemp("boundary") / "course"
    root.mkdir()
    toy.write_course(root, ID, {"tools.ipynb": TOOLS, "seeded.ipynb": SEEDED})
    (root / "source" / ID / "logo.png").write_bytes(PNG)
    (root / "source" / ID / "data").mkdir()
    (root / "source" / ID / "data" / "scores.csv").write_text("name,score\nada,3\nbo,9\n")
    done = run_command_line(["generate", "--course", str(root), "--assignment", ID], timeout=600)
    assert done.returncode == 0, done.stderr
    assert "warning: seeded.ipynb: its tests will run beside" in done.stderr
    assert "tools.ipynb" not in done.stderr
    assignment = find_assignment(root, ID)
    release = {n: notebook.read(assignment.release(n)) for n in assignment.notebooks}
    solved = {n: notebook.answers(notebook.read(assignment.solution(n))) for n in release}
    students = {
        "right": solved,
        "wrong": {n: {k: WRONG[k] for k in answers} for n, answers in solved.items()},
        "blank": {n: {} for n in release},
    }
    subs = root.parent / "subs"
    for student, chosen in students.items():
        for name, sources in chosen.items():
            filled = notebook.fill(release[name], sources)
            notebook.write(filled, subs / student / ID / name)
    stock = root.parent / "stock"
    shutil.copytree(root, stock)
    shutil.copytree(subs, stock / "submitted")
    run_nbgrader(stock, "autograde", ID, "--force")
    ours = run_command_line(
        ["grade", str(subs), "--course", str(root), "--assignment", ID, "--jobs", "1"],
        timeout=600,
    )
    assert ours.returncode == 0, ours.stderr[-3000:]
    return view(stock, students), view(root, students), ours.stderr


def view(course, students):
    """``{(student, notebook, cell): points}`` as the course's gradebook holds them."""
    found = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in students:
            for nb in gradebook.find_submission(ID, student).notebooks:
                for grade in nb.grades:
                    found[(student, nb.name, grade.name)] = grade.score
    return found


def test_every_cell_scores_as_stock_scores_it(graded):
    stock, ours, _ = graded
    assert ours == stock
    # and the course is what it claims: the right answers earn everything, the wrong nothing
    assert all(points == 1 for (student, *_), points in ours.items() if student == "right")
    wrong = {cell for (student, _, cell), points in ours.items() if student == "wrong" and points}
    assert wrong == {"test_np"}


def test_only_the_notebook_that_needs_it_runs_its_tests_beside(graded):
    _, _, said = graded
    lines = said.replace("\r", "\n").replace("nb/s]", "nb/s]\n").splitlines()
    beside = [line for line in lines if "run beside" in line]
    assert len(beside) == 1 and beside[0].startswith("seeded.ipynb: "), said
    assert "test_draw calls seed()" in beside[0]
    assert "test_twice_uses_draw rebinds draw" in beside[0]
