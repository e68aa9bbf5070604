"""Does the sandbox preload and warm up what the course configures, and nothing of its own?

A course names the modules its sandbox imports once (``c.Autograder.preload``,
by default the notebooks' own imports) and code run once before any student
(``c.Autograder.warm_up``). A course that draws nothing starts no plotting
library, yet a student who draws still gets the figure inline, as Jupyter shows
it. A setting that cannot work is the course author's mistake, told in one line.
"""

import pytest

from . import toy
from .command_line import run_command_line

pytestmark = pytest.mark.slow

ID = "warm-1"
LOOK = (
    "import sys\n"
    "print('loaded:', [m for m in ('colorsys', 'matplotlib') if m in sys.modules],"
    " getattr(sys, 'warmed', None))"
)
DRAW = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
CELLS = [toy.cell(LOOK), *toy.DOUBLE, toy.cell(DRAW)]


def _grade(tmp_path, config: str):
    course = toy.write_course(tmp_path / "course", ID, {"warm.ipynb": CELLS}, config=config)
    return toy.grade_class(course, ID, "warm.ipynb", {"ada": CELLS}, tmp_path)


def test_a_course_gets_its_own_preload_and_warm_up(tmp_path):
    """Preloaded: the course's modules; warmed: by its code, whose output no student sees."""
    done, out = _grade(
        tmp_path,
        'c.Autograder.preload = ["colorsys"]\n'
        "c.Autograder.warm_up = \"import sys\\nsys.warmed = 42\\nprint('warm-up output')\"\n",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page = (out / "feedback" / "ada.html").read_text()
    assert "loaded: [&#39;colorsys&#39;] 42" in page or "loaded: ['colorsys'] 42" in page
    assert "warm-up output" not in page
    assert "data:image/png;base64," in page  # drawn inline, matplotlib never preloaded


def test_by_default_the_notebooks_imports_are_preloaded(tmp_path):
    """No setting: the notebooks' imports (matplotlib here) are loaded before the student runs."""
    done, out = _grade(tmp_path, "")
    assert done.returncode == 0, done.stderr[-3000:]
    page = (out / "feedback" / "ada.html").read_text()
    assert "matplotlib" in page.split("loaded:", 1)[1].split("\n", 1)[0]
    assert "None" in page.split("loaded:", 1)[1].split("\n", 1)[0]  # no warm-up of ours


@pytest.mark.parametrize(
    "config, said",
    [
        ('c.Autograder.preload = ["numpy; import os"]\n', "is not a module name"),
        ('c.Autograder.warm_up = "def ("\n', "c.Autograder.warm_up does not parse"),
        ("c.Autograder.preload = 3\n", "c.Autograder settings"),
    ],
)
def test_a_setting_that_cannot_work_is_one_line(tmp_path, config, said):
    course = toy.write_course(tmp_path, ID, {"warm.ipynb": CELLS}, config=config)
    done = run_command_line(["grade", str(tmp_path / "nothing"), "--course", str(course)], 120)
    lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert done.returncode == 2 and len(lines) == 1 and said in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_a_sandbox_its_warm_up_kills_stops_the_run_in_one_line(tmp_path):
    """Warm-up code that ends the sandbox's process: the run stops, says so, writes no grades."""
    done, out = _grade(tmp_path, 'c.Autograder.warm_up = "import os\\nos._exit(3)"\n')
    lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert "the sandbox could not start" in lines[0] and "Traceback" not in done.stderr
    assert not (out / "grades.csv").exists()


def test_the_student_readme_names_the_packages_the_notebooks_import(tmp_path):
    """The README's install line: the notebooks' imports, less the standard library and
    the assignment's helpers, as pip names them (sklearn is scikit-learn)."""
    from autograder.pipeline.course.assignment import find_assignment
    from autograder.tools.generate import packages

    imports = toy.cell("import colorsys\nimport pandas as pd\nfrom checks import ok\nimport yaml")
    toy.write_course(tmp_path, ID, {"warm.ipynb": [imports, *toy.DOUBLE]}, {"checks.py": "ok=1"})
    assignment = find_assignment(tmp_path)
    releases = {"warm.ipynb": toy.notebook(imports, *toy.DOUBLE)}
    assert packages(assignment, releases) == ["pandas", "pyyaml"]


def test_helper_modules_come_compiled_with_their_imports_preloaded(tmp_path):
    """A helper file's own imports are preloaded, and it is imported from the zygote's bytecode
    (the student's folder is read-only, so no student process could have compiled it there)."""
    helper = "import colorsys\n\nLIGHT = colorsys.rgb_to_hls(1, 1, 1)[1]\n"
    cells = [
        toy.cell("import sys\nprint('preloaded:', 'colorsys' in sys.modules)"),
        toy.cell("import os\nimport checks\nprint('bytecode:', os.path.isfile(checks.__cached__))"),
        *toy.DOUBLE,
    ]
    course = toy.write_course(tmp_path / "course", ID, {"warm.ipynb": cells}, {"checks.py": helper})
    done, out = toy.grade_class(course, ID, "warm.ipynb", {"ada": cells}, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (out / "feedback" / "ada.html").read_text()
    assert "preloaded: True" in page and "bytecode: True" in page, page[-3000:]
