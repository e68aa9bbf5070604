"""Does the students' self-check tell the truth, with the right exit status?"""

import subprocess
import sys

import pytest

from autograder.pipeline import notebook, sanitize

from .. import lab as course

pytestmark = pytest.mark.slow


def _check(path):
    return subprocess.run(
        [sys.executable, "-m", "autograder", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_solved_notebook_passes():
    """Does a fully solved notebook exit 0 and say it is ready?"""
    done = _check(course.ROOT / course.SAMPLE_CLASS / course.submission_path("ada"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ready to submit" in done.stdout


def test_failing_visible_test_fails_with_its_message():
    """Does a wrong glue fail the check, quoting the visible test's message?"""
    done = _check(course.ROOT / course.SAMPLE_CLASS / course.submission_path("dara"))
    assert done.returncode == 1
    line = next(line for line in done.stdout.splitlines() if line.startswith("concat_heads"))
    assert "failing" in line and "axis" in line and "(24, 2)" in line


def test_untouched_release_is_not_attempted():
    """Is every answer of the untouched release reported as not attempted?"""
    done = _check(course.ROOT / course.RELEASE)
    assert done.returncode == 1
    assert done.stdout.count("not attempted") == 10


def test_unreadable_file(tmp_path):
    """Is a broken file refused with a clear message and a non-zero status?"""
    path = tmp_path / "multi_head.ipynb"
    path.write_text('{"cells": [')
    done = _check(path)
    assert done.returncode == 2 and "not valid JSON" in done.stderr


def test_reading_refuses_what_is_not_a_notebook():
    """Does reading say why a file is not gradable?"""
    for data, reason in [
        (b"", "empty"),
        (b"[1, 2]", "not a Jupyter notebook"),
        (b"\xff\xfe", "JSON"),
    ]:
        try:
            sanitize.read(data)
        except sanitize.Unreadable as why:
            assert reason in str(why)
        else:
            raise AssertionError(f"{data!r} was read")
    nb, version = sanitize.read((course.ROOT / course.RELEASE).read_bytes())
    assert version == 4 and notebook.answers(nb)
