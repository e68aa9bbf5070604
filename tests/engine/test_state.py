"""Are the rows kept on disk, read back one at a time, and a grader error graded again?"""

from datetime import datetime

import pytest

from autograder.pipeline import recording
from autograder.pipeline.results import NOT_FINISHED, Outcome, Store, StoredOutcomes
from autograder.pipeline.submissions.submission import Submission


def _row(student: str, points: float, status: str = "ok") -> Outcome:
    return Outcome(student, {"test_a": points}, 2.0, status, messages={"test_a": "off by one"})


def _submission(student: str, data: bytes) -> Submission:
    return Submission(student, {"n.ipynb": data}, "here", datetime(2026, 1, 1))


def test_stored_rows_read_from_disk_at_each_pass(tmp_path):
    """Is each pass a fresh read of the files (nothing kept), in the order given?"""
    state = Store(tmp_path)
    state.save("bo", "k", _row("bo", 1.0))
    state.save("al", "k", _row("al", 2.0))
    rows = StoredOutcomes(state, ["bo", "al"])
    assert [r.student_id for r in rows] == ["bo", "al"] and len(rows) == 2
    state.save("bo", "k", _row("bo", 0.0))  # changed on disk after the sequence was made
    assert rows[0].points == {"test_a": 0.0} and rows[0].messages == {"test_a": "off by one"}
    assert [r.student_id for r in rows[1:]] == ["al"]


def test_a_lost_row_is_a_clear_error(tmp_path):
    """Does a state file gone missing say whose, rather than give a wrong CSV?"""
    rows = StoredOutcomes(Store(tmp_path), ["cy"])
    with pytest.raises(OSError, match="grading state of cy"):
        list(rows)


def test_rerun_skips_only_finished_unchanged_students(tmp_path):
    """Is a grader error graded again, and a changed file too, but a finished one skipped?"""
    state = Store(tmp_path)
    done, failed, changed = (_submission(s, b"same") for s in ("al", "bo", "cy"))
    key = f"{done.sha256}:settings"
    state.save("al", key, _row("al", 2.0))
    state.save("bo", NOT_FINISHED, _row("bo", 0.0, "grader_error"))
    state.save("cy", key, _row("cy", 2.0))
    changed = _submission("cy", b"edited")
    unchanged, todo = recording.pending([done, failed, changed], state, False, "settings", None)
    assert [s.student_id for s in unchanged] == ["al"]
    assert [s.student_id for s in todo] == ["bo", "cy"]
    _, forced = recording.pending([done], state, True, "settings", None)
    assert [s.student_id for s in forced] == ["al"]
