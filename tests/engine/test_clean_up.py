"""Does the clean-up after a run remove what its students left, and only that?"""

import os

import pytest

from autograder.sandbox.clean_up import RUN_UIDS, remove_user_files

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="students run as a uid of their own only when grading as root"
)


def _make(path, uid, folder=False):
    if folder:
        path.mkdir()
        (path / "inside.txt").write_text("left")
    else:
        path.write_text("left")
    os.chown(path, uid, uid)
    return path


def test_what_a_runs_students_left_in_shared_places_goes(tmp_path):
    """Files and folders of the run's uid go; another uid's, and what links point to, stay."""
    mine, other = RUN_UIDS + 123_456, RUN_UIDS + 123_457
    shared, elsewhere = tmp_path / "tmp", tmp_path / "elsewhere"
    shared.mkdir()
    elsewhere.mkdir()
    target = _make(elsewhere / "precious.txt", other)
    left = [_make(shared / "answers.txt", mine), _make(shared / "cache", mine, folder=True)]
    (shared / "cache" / "inside.txt").chmod(0)
    (shared / "cache").chmod(0)  # a folder its owner made unreadable goes too
    link = shared / "link"
    link.symlink_to(target)
    os.chown(link, mine, mine, follow_symlinks=False)
    kept = [_make(shared / "theirs.txt", other), _make(shared / "their-folder", other, True)]
    assert remove_user_files(mine, [str(shared), str(tmp_path / "missing")]) == 3
    assert [p for p in left + [link] if os.path.lexists(p)] == []
    assert all(p.exists() for p in kept) and target.read_text() == "left"
