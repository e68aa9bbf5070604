"""Is the course's extensions.toml read as a TA writes it by hand, and written back whole?"""

from datetime import datetime, timedelta

import pytest

from autograder.pipeline.course import extensions
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.errors import UserError

from . import toy


@pytest.fixture
def assignment(tmp_path):
    return find_assignment(toy.write_course(tmp_path, "toy-1"))


def test_hand_written_extensions_are_read(assignment):
    """Do until, days and hours each give the extra time nbgrader keeps?"""
    extensions.path(assignment.root).write_text(
        '["toy-1"]\n'
        '"ada" = { until = "2026-03-03 12:00:00 UTC", why = "ill" }\n'
        '"ben" = { days = 2 }\n'
        '"cy" = { hours = 6 }\n'
        '["other-2"]\n"ada" = { days = 9 }\n'
    )
    found = extensions.granted(assignment)
    due = datetime(2026, 3, 1, 12)
    assert {sid: e.beyond(due) for sid, e in found.items()} == {
        "ada": timedelta(days=2),
        "ben": timedelta(days=2),
        "cy": timedelta(hours=6),
    }
    assert found["ada"].why == "ill" and found["ada"].beyond(None) is None


def test_writing_keeps_other_assignments(assignment):
    """Does writing this assignment's table keep every other assignment's, and read back?"""
    extensions.path(assignment.root).write_text('["other-2"]\n"ada" = { days = 9 }\n')
    granted = {"ben": extensions.Extension("ben", more=timedelta(days=1, hours=12), why='a "note"')}
    text = extensions.write(assignment, granted)
    extensions.path(assignment.root).write_text(text)
    assert extensions.granted(assignment) == granted
    other = type(assignment)(assignment.root, "other-2", assignment.config)
    assert extensions.granted(other) == {"ada": extensions.Extension("ada", more=timedelta(days=9))}


@pytest.mark.parametrize("why", ["a\rb", "tab\there", "nul\x00 bell\x07 del\x7f", 'q"\\', "ünï 😀"])
def test_any_note_a_ta_types_reads_back(assignment, why):
    """A note with a carriage return or any control character: written, read back whole?"""
    granted = {"ada": extensions.Extension("ada", more=timedelta(days=2), why=why)}
    extensions.path(assignment.root).write_text(extensions.write(assignment, granted))
    assert extensions.granted(assignment) == granted


@pytest.mark.parametrize(
    "text, says",
    [
        ("[toy-1\n", "not TOML"),
        ('["toy-1"]\n"ada" = 2\n', "must be a table"),
        ('["toy-1"]\n"ada" = { weeks = 2 }\n', "unknown key(s) weeks"),
        ('["toy-1"]\n"ada" = { until = "soon" }\n', "is no date"),
        ('["toy-1"]\n"ada" = { days = 1, until = "2026-03-03" }\n', "either until, or days"),
        ('["toy-1"]\n"ada" = { days = -1 }\n', "cannot take time away"),
    ],
)
def test_a_broken_file_is_one_line(assignment, text, says):
    """Is each hand-editing mistake the user's, said in one line naming the file?"""
    extensions.path(assignment.root).write_text(text)
    with pytest.raises(UserError, match="extensions.toml") as error:
        extensions.granted(assignment)
    assert says in str(error.value) and "\n" not in str(error.value)
