"""Is an assignment a value found from the course, and a user's mistake one clear line?"""

import shutil

import pytest

from autograder import cli
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import Status, UserError

from .. import lab


def test_the_only_assignment_is_the_default():
    """With one assignment under source/, is it chosen when none is named?"""
    assignment = find_assignment(lab.ROOT)
    assert assignment == lab.ASSIGNMENT and assignment.notebooks == (lab.NOTEBOOK,)
    assert assignment.release(lab.NOTEBOOK) == lab.ROOT / lab.RELEASE


def test_folder_names_come_from_the_config(tmp_path):
    """Are the folders where course_config.py says, not where a name was typed?"""
    for name in lab.CONFIG_FILES:
        shutil.copy(lab.ROOT / name, tmp_path / name)
    with open(tmp_path / "course_config.py", "a") as handle:
        handle.write('\nc.CourseDirectory.source_directory = "instructor"\n')
    shutil.copytree(lab.ROOT / "source", tmp_path / "instructor")
    assignment = find_assignment(tmp_path)
    assert assignment.source_dir == tmp_path / "instructor" / lab.ASSIGNMENT.id


def test_several_assignments_must_be_named(tmp_path):
    """With two assignments, does leaving --assignment out name the choices?"""
    for name in lab.CONFIG_FILES:
        shutil.copy(lab.ROOT / name, tmp_path / name)
    for assignment in ("part-a", "part-b"):
        (tmp_path / "source" / assignment).mkdir(parents=True)
    with pytest.raises(UserError, match="part-a, part-b"):
        find_assignment(tmp_path)
    with pytest.raises(UserError, match="no assignment 'part-c'"):
        find_assignment(tmp_path, "part-c")


@pytest.mark.parametrize(
    "argv, says",
    [
        (["grade", "no/such/folder"], "no such folder"),
        (["grade", "release"], "holds one assignment folder (08-multi-head/), not a class"),
        (["grade", "release/08-multi-head"], "not a class: give the folder"),
        (["grade", "samples/class/ada"], "SUBMISSIONS/<student>/08-multi-head/"),
        (["grade", "samples/class", "--jobs", "0"], "--jobs must be positive"),
        (["grade", "samples/class", "--timeout", "-1"], "--timeout must be positive"),
        (["grade", "samples/class", "--memory", "0"], "--memory must be positive"),
        (["grade", "samples/class", "--assignment", "nope"], "no assignment 'nope'"),
        (["check", "missing.ipynb"], "cannot check"),
        (["generate", "--course", "/"], "not an nbgrader course"),
    ],
)
def test_user_mistakes_are_one_line_and_status_2(argv, says, capsys, monkeypatch):
    """Does each mistake end in one line on stderr and exit status 2, with no traceback?"""
    monkeypatch.chdir(lab.ROOT)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_statuses_know_their_severity():
    """Is the most severe status the one a row shows?"""
    assert Status.worst("ok", "tampered", "timeout") == Status.TIMEOUT
    assert Status.worst(Status.OK) == "ok"
    assert Status.GRADER_ERROR.severity < Status.UNREADABLE.severity < Status.OK.severity
