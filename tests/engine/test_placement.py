"""Does the grader tell which notebooks' tests must run beside the student's code, and why?

``placement.reasons`` reads the source: a test that rebinds a name the tests
read from the student, sets state the student's code shares, or reads the
assignment's files from the working folder cannot reach its verdict in the
grader's own process. A test's own temporaries, loop variables, a function's
locals and a comprehension's are its own, and change nothing.
"""

import pytest

from autograder.pipeline.course import placement

from .toy import cell, notebook

ANSWER = cell("def squares(n):\n    return [i * i for i in range(n)]", "squares", "answer")


def reasons(*tests, files=()):
    return placement.reasons(notebook(ANSWER, *tests), files)


def test_nbgraders_own_rebinding_runs_beside():
    """nbgrader's example: ``orig = squares; del squares; ...; squares = orig``."""
    rebinds = cell(
        "orig = squares\ndel squares\ntry:\n    pass\nfinally:\n    squares = orig",
        "uses_squares",
        "test",
    )
    found = reasons(cell("assert squares(2) == [0, 1]", "t", "test"), rebinds)
    assert found == ["uses_squares rebinds squares, which the tests read from the student's code"]


@pytest.mark.parametrize(
    "source, said",
    [
        ("import numpy as np\nnp.random.seed(0)\nassert squares(1)", "calls seed()"),
        ("import random\nrandom.seed(1)", "calls seed()"),
        ("import os\nos.chdir('/tmp')", "calls chdir()"),
        ("assert open('data.txt').read()", "reads the assignment's file data.txt"),
        ("assert open('out.txt').read()", "reads a file"),
        ("import pandas as pd\nassert pd.read_csv('data/x.csv').size", "reads the assignment's"),
    ],
)
def test_shared_state_and_files_run_beside(source, said):
    found = reasons(cell(source, "t", "test"), files=["data/x.csv", "data.txt"])
    assert len(found) == 1 and said in found[0], found


@pytest.mark.parametrize(
    "source",
    [
        "for squares in range(3):\n    pass",  # binds it, but never reads the student's
        "got = squares(3)\ni = 0\nfor i in range(3):\n    assert got[i] == i * i",
        "def ref(n):\n    squares = [0]\n    return squares\nassert squares(1) == ref(1)",
        "assert [squares(i) for i in range(2)] == [[], [0]]",
        "rng = __import__('numpy').random.default_rng(0)\nassert squares(rng.integers(1, 2))",
    ],
)
def test_a_tests_own_names_keep_it_in_the_grader(source):
    # the student binds i in a loop of its own too: the test's i is the test's
    student_loop = cell("for i in range(2):\n    print(squares(i))")
    assert reasons(student_loop, cell(source, "t", "test")) == []


def test_a_test_that_reads_its_own_binding_first_is_not_rebinding():
    """A test binds ``x`` before reading it: the student's ``x`` is never read."""
    student = cell("x = squares(2)")
    own = cell("x = squares(3)\nassert x == [0, 1, 4]", "t", "test")
    assert reasons(student, own) == []
