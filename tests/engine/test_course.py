"""Is an assignment a value found from the course, and a user's mistake one clear line?"""

import pytest

from autograder import cli
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import Status, UserError

from . import toy


@pytest.fixture
def course(tmp_path):
    """A toy course of one assignment, ``toy-1``, its release and a class of one handed in."""
    root = toy.write_course(tmp_path / "course")
    toy.write_notebook(toy.DOUBLE, root / "release" / "toy-1" / "toy.ipynb")
    toy.write_notebook(toy.DOUBLE, root / "class" / "ada" / "toy-1" / "toy.ipynb")
    return root


def test_the_only_assignment_is_the_default(course):
    """With one assignment under source/, is it chosen when none is named?"""
    assignment = find_assignment(course)
    assert assignment.id == "toy-1" and assignment.notebooks == ("toy.ipynb",)
    assert assignment.release("toy.ipynb") == course / "release" / "toy-1" / "toy.ipynb"


def test_folder_names_come_from_the_config(course):
    """Are the folders where the course's config says, not where a name was typed?"""
    with open(course / "nbgrader_config.py", "a") as handle:
        handle.write('\nc.CourseDirectory.source_directory = "instructor"\n')
    (course / "source").rename(course / "instructor")
    assignment = find_assignment(course)
    assert assignment.source_dir == course / "instructor" / "toy-1"


def test_several_assignments_must_be_named(course):
    """With two assignments, does leaving --assignment out name the choices?"""
    (course / "source" / "toy-2").mkdir(parents=True)
    with pytest.raises(UserError, match="toy-1, toy-2"):
        find_assignment(course)
    with pytest.raises(UserError, match="no assignment 'toy-3'"):
        find_assignment(course, "toy-3")


@pytest.mark.parametrize(
    "argv, says",
    [
        (["grade", "no/such/folder"], "no such folder"),
        (["grade", "release"], "holds one assignment folder (toy-1/), not a class"),
        (["grade", "release/toy-1"], "not a class: give the folder"),
        (["grade", "class/ada"], "SUBMISSIONS/<student>/toy-1/"),
        (["grade", "class", "--jobs", "0"], "--jobs must be positive"),
        (["grade", "class", "--timeout", "-1"], "--timeout must be positive"),
        (["grade", "class", "--memory", "0"], "--memory must be positive"),
        (["grade", "class", "--assignment", "nope"], "no assignment 'nope'"),
        (["check", "missing.ipynb"], "cannot check"),
        (["generate", "--course", "/"], "not an nbgrader course"),
    ],
)
def test_user_mistakes_are_one_line_and_status_2(course, argv, says, capsys, monkeypatch):
    """Does each mistake end in one line on stderr and exit status 2, with no traceback?"""
    monkeypatch.chdir(course)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_statuses_know_their_severity():
    """Is the most severe status the one a row shows?"""
    assert Status.worst("ok", "tampered", "timeout") == Status.TIMEOUT
    assert Status.worst(Status.OK) == "ok"
    assert Status.GRADER_ERROR.severity < Status.UNREADABLE.severity < Status.OK.severity
