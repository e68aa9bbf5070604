"""Is each setting declared once: the command line's defaults read from the functions it calls?"""

import argparse
import inspect

import pytest

from autograder import cli
from autograder.pipeline import grade
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import UserError
from autograder.pipeline.settings import (
    MEMORY,
    WALL,
    GradingLimits,
    configured,
    course_timeout,
)

from . import toy


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
