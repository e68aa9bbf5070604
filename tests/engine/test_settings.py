"""Is each setting declared once: the command line's defaults read from the functions it calls,
its help from the course settings (c.Autograder) each option overrides?"""

import argparse
import inspect

import pytest

from autograder import cli
from autograder.pipeline import grade
from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import UserError
from autograder.pipeline.settings import (
    MEMORY,
    WALL,
    Autograder,
    GradingLimits,
    class_folder,
    configured,
    course_timeout,
    lms_pattern,
)

from . import toy
from .command_line import run_command_line


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every leaf subcommand's parser, by its path (``export canvas``)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                inner = _subcommands(sub)
                found.update({f"{name} {k}": v for k, v in inner.items()} or {name: sub})
    return found


COMMANDS = _subcommands(cli.parser())


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_default_is_the_functions_own(command):
    """Does every option default to what the function it calls defaults to (declared once)?"""
    parser = COMMANDS[command]
    function = parser.get_default("run")
    parameters = inspect.signature(function).parameters
    checked = 0
    for action in parser._actions:
        if action.dest in parameters and action.option_strings and action.dest != "help":
            wanted = parameters[action.dest].default
            if wanted is inspect.Parameter.empty:
                continue
            assert action.default == wanted, f"{command} {action.option_strings[0]}"
            checked += 1
    assert checked >= 2, f"{command}: no option with a default was compared"


@pytest.fixture
def assignment(tmp_path):
    """The toy course's assignment, its cell limit set in the course config."""
    toy.write_course(tmp_path, config="c.Execute.timeout = 17\n")
    return find_assignment(tmp_path)


def test_limits_travel_as_one_object(assignment):
    """Do the run's limits reach the request as one object, with the course's timeout?"""
    limits = GradingLimits.for_course(assignment)
    assert course_timeout(assignment) == 17
    assert (limits.timeout, limits.wall, limits.memory, limits.sandbox) == (
        17,
        WALL,
        MEMORY,
        True,
    )
    assert limits.for_sandbox().memory == MEMORY * 2**20
    assert GradingLimits.for_course(assignment, wall=10).key() != limits.key()
    assert inspect.signature(grade.grade).parameters["wall"].default is None  # the course's


def test_a_course_keeps_its_own_limits_and_the_command_line_overrides_them(tmp_path):
    """c.Autograder in the course's config: read as the course's limits; an option wins?"""
    toy.write_course(
        tmp_path,
        config="c.Execute.timeout = 17\nc.Autograder.timeout = 5\nc.Autograder.wall = 90\n"
        "c.Autograder.memory = 512\nc.Autograder.jobs = 3\nc.Autograder.sandbox = False\n",
    )
    chosen = find_assignment(tmp_path)
    limits = GradingLimits.for_course(chosen)
    assert (limits.timeout, limits.wall, limits.memory, limits.sandbox) == (5, 90, 512, False)
    asked = GradingLimits.for_course(chosen, timeout=8, wall=30, memory=1024, sandbox=True)
    assert (asked.timeout, asked.wall, asked.memory, asked.sandbox) == (8, 30, 1024, True)
    assert configured(chosen).jobs == 3


def test_a_course_setting_of_the_wrong_kind_is_one_line(tmp_path):
    toy.write_course(tmp_path, config='c.Autograder.memory = "lots"\n')
    with pytest.raises(UserError, match="c.Autograder") as error:
        GradingLimits.for_course(find_assignment(tmp_path))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("name", ["timeout", "wall", "memory"])
def test_a_limit_that_is_not_positive_is_the_users_mistake(assignment, name):
    """Is ``--wall 0`` refused in one line naming the option?"""
    with pytest.raises(UserError, match=f"--{name} must be positive"):
        GradingLimits.for_course(assignment, **{name: 0})


#: the course settings each command's options override
OVERRIDES = {
    "grade": [*cli.LIMITS, "out", "pattern"],
    "serve": [*cli.LIMITS, "out"],
    "status": ["out"],
    "remove": ["out"],
}


@pytest.mark.parametrize("command", sorted(OVERRIDES))
def test_an_option_that_overrides_a_setting_says_what_the_setting_says(command):
    """Is a setting's help written once: each option that overrides one reads it from the trait?"""
    traits = Autograder.class_traits(config=True)
    options = {a.dest: a for a in COMMANDS[command]._actions if a.option_strings}
    for name in OVERRIDES[command]:
        said = traits[name].help.rstrip(".")
        assert options[name].help.startswith(said), (command, name)
        assert f"c.Autograder.{name}" in options[name].help
        assert options[name].default is None or name == "sandbox"  # unset: the course's


def test_the_class_folder_is_the_options_then_the_courses_then_grades(tmp_path, monkeypatch):
    course = toy.write_course(tmp_path / "course")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    chosen = find_assignment(course)
    assert class_folder(chosen, None) == elsewhere / "grades"
    assert class_folder(chosen, "mine") == elsewhere / "mine"
    toy.write_course(course, config='c.Autograder.out = "marks"\n')
    chosen = find_assignment(course)
    assert class_folder(chosen, None) == course.resolve() / "marks"
    assert class_folder(chosen, "mine") == elsewhere / "mine"  # the option wins


@pytest.mark.parametrize(
    "given, config, says",
    [
        ("(", "", "--pattern '(' is not a regex"),
        (r"^(\w+)_", "", "has no (?P<student>...) group"),
        (None, 'c.Autograder.pattern = "[a-"\n', "c.Autograder.pattern '[a-' is not a regex"),
    ],
)
def test_a_pattern_that_cannot_name_students_is_one_line(tmp_path, given, config, says):
    chosen = find_assignment(toy.write_course(tmp_path, config=config))
    with pytest.raises(UserError) as error:
        lms_pattern(chosen, given)
    assert says in str(error.value) and "\n" not in str(error.value)


def test_the_courses_pattern_is_used_unless_an_option_gives_one(tmp_path):
    config = 'c.Autograder.pattern = r"^(?P<student>[a-z]+)-"\n'
    chosen = find_assignment(toy.write_course(tmp_path, config=config))
    assert lms_pattern(chosen, None) == "^(?P<student>[a-z]+)-"
    assert lms_pattern(chosen, r"(?P<student>\d+)") == r"(?P<student>\d+)"


def test_a_bad_pattern_typed_on_the_command_line_is_one_line_and_status_2(tmp_path):
    course = toy.write_course(tmp_path / "course")
    (tmp_path / "subs").mkdir()
    done = run_command_line(
        ["grade", str(tmp_path / "subs"), "--course", str(course), "--pattern", "(?P<student>"],
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "--pattern '(?P<student>' is not a regex" in done.stderr


@pytest.mark.slow
def test_a_course_that_sets_its_class_folder_is_graded_there_and_read_from_there(tmp_path):
    """c.Autograder.out: grade writes there from any folder, and status reads it there."""
    course = toy.write_course(tmp_path / "course", config='c.Autograder.out = "marks"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run_command_line(["generate", "--course", str(course)], timeout=300).returncode == 0
    answer = "def double(v):\n    return 2 * v"
    release = notebook.read(find_assignment(course).release("toy.ipynb"))
    toy.write_notebook(
        notebook.fill(release, {"double": answer}).cells,
        tmp_path / "subs" / "ada" / "toy-1" / "toy.ipynb",
    )
    done = run_command_line(
        ["grade", str(tmp_path / "subs"), "--course", str(course), "--jobs", "1"],
        timeout=300, cwd=elsewhere,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (course / "marks" / "grades.csv").is_file() and not (elsewhere / "grades").exists()
    shown = run_command_line(["status", "--course", str(course)], timeout=120, cwd=elsewhere)
    assert "ada" in shown.stdout, shown.stdout + shown.stderr
