"""Are submissions found, named and deduplicated as a TA downloaded them?"""

import os
import zipfile

import pytest

from autograder.pipeline import collect
from autograder.pipeline.errors import UserError

from .. import lab as course


def _touch(path, data=b"{}", mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime:
        os.utime(path, (mtime, mtime))


def test_nbgrader_layout(tmp_path):
    """Is the student id the folder name in nbgrader's layout?"""
    _touch(tmp_path / course.submission_path("ada"))
    _touch(tmp_path / course.submission_path("ben"))
    assert [s.student_id for s in collect.collect(tmp_path, course.ASSIGNMENT)] == ["ada", "ben"]


@pytest.mark.parametrize(
    "name, student",
    [
        ("doejane_12345_67890_multi_head.ipynb", "doejane"),
        ("doejane_LATE_12345_67890_multi_head-2.ipynb", "doejane"),
        ("Jane Doe_4711_assignsubmission_file_multi_head.ipynb", "jane_doe"),
        ("Jane Doe_4711_assignsubmission_file_/multi_head.ipynb", "jane_doe"),
        ("ada.ipynb", "ada"),
        ("ben_multi_head.ipynb", "ben"),
    ],
)
def test_lms_names(name, student):
    """Is the student id read from Canvas, Moodle and plain file names?"""
    assert collect.student_of(name, course.ASSIGNMENT.stems)[0] == student


def test_custom_pattern():
    """Does --pattern's student group win over the built-in names?"""
    assert (
        collect.student_of("hw8-s1234567.ipynb", pattern=r"hw8-(?P<student>s\d+)")[0] == "s1234567"
    )


def test_newest_submission_wins(tmp_path):
    """When a student handed in twice, is the newer file the one graded?"""
    _touch(tmp_path / "doejane_1_2_multi_head.ipynb", b"old", mtime=1_000_000)
    _touch(tmp_path / "doejane_1_2_multi_head-1.ipynb", b"new", mtime=2_000_000)
    _touch(tmp_path / "smithjo_3_4_multi_head.ipynb", b"only")
    found = {
        s.student_id: s.files[course.NOTEBOOK] for s in collect.collect(tmp_path, course.ASSIGNMENT)
    }
    assert found == {"doejane": b"new", "smithjo": b"only"}


def test_zip_is_read_without_extracting(tmp_path):
    """Is a Canvas .zip read in memory, the newest entry per student kept?"""
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr(zipfile.ZipInfo("doejane_1_2_multi_head.ipynb", (2026, 1, 1, 0, 0, 0)), "old")
        out.writestr(
            zipfile.ZipInfo("doejane_1_2_multi_head-1.ipynb", (2026, 1, 2, 0, 0, 0)), "new"
        )
        out.writestr("__MACOSX/._doejane_1_2_multi_head.ipynb", "junk")
        out.writestr("../../escape_9_9_multi_head.ipynb", "x")
    found = {
        s.student_id: s.files[course.NOTEBOOK] for s in collect.collect(archive, course.ASSIGNMENT)
    }
    assert found["doejane"] == b"new"
    assert "escape" in found and not (tmp_path.parent / "escape_9_9_multi_head.ipynb").exists()


def test_not_a_zip(tmp_path):
    """Is a file that is not a .zip refused with a clear message?"""
    path = tmp_path / "grades.csv"
    path.write_text("a,b")
    with pytest.raises(UserError, match="not a .zip"):
        collect.collect(path, course.ASSIGNMENT)


def test_content_hash_follows_content():
    """Does the hash that decides regrading change with the file, and only with it?"""
    a = collect.Submission("a", {"n.ipynb": b"x"}, "a", None)
    assert a.sha256 == collect.Submission("b", {"n.ipynb": b"x"}, "b", None).sha256
    assert a.sha256 != collect.Submission("a", {"n.ipynb": b"y"}, "a", None).sha256
    assert a.sha256 != collect.Submission("a", {"m.ipynb": b"x"}, "a", None).sha256


def test_links_out_of_the_folder_are_not_followed(tmp_path, capsys):
    """Is a link to a file or folder outside the submissions skipped with a warning?"""
    subs = tmp_path / "subs"
    _touch(subs / course.submission_path("ada"))
    eve = subs / course.submission_path("eve")
    eve.parent.mkdir(parents=True)
    eve.symlink_to(course.ROOT / course.SOURCE)  # a TA's copy mistake
    (subs / "mallory").symlink_to(course.ROOT / "source")  # a whole folder, linked
    found = {s.student_id: s for s in collect.collect(subs, course.ASSIGNMENT)}
    assert sorted(found) == ["ada", "eve"]  # eve gets a row, her file is not read
    assert found["eve"].files == {} and "links outside" in found["eve"].unreadable[course.NOTEBOOK]
    warned = capsys.readouterr().err
    assert "eve" in warned and "mallory" in warned
    flat = tmp_path / "flat"
    _touch(flat / "ada.ipynb")
    (flat / "eve.ipynb").symlink_to(course.ROOT / course.SOURCE)
    assert [s.student_id for s in collect.collect(flat, course.ASSIGNMENT)] == ["ada"]


def test_links_inside_the_folder_are_followed(tmp_path):
    """Is a link to another file inside the submissions folder still graded?"""
    _touch(tmp_path / "ada.ipynb", b'{"nbformat": 4}')
    (tmp_path / "ben.ipynb").symlink_to(tmp_path / "ada.ipynb")
    assert [s.student_id for s in collect.collect(tmp_path, course.ASSIGNMENT)] == ["ada", "ben"]


def test_too_large_file_says_so(tmp_path):
    """Is a file over the size limit unreadable with its size given, not called empty?"""
    big = tmp_path / "ada.ipynb"
    big.parent.mkdir(parents=True, exist_ok=True)
    with open(big, "wb") as handle:
        handle.truncate(collect.MAX_FILE + 1)
    (found,) = collect.collect(tmp_path, course.ASSIGNMENT)
    assert found.files[course.NOTEBOOK] == b""
    assert "over the limit" in found.unreadable[course.NOTEBOOK]


def test_layout_found_at_any_depth(tmp_path):
    """Is nbgrader's layout found one (or more) levels down, every student kept?"""
    _touch(tmp_path / "class" / course.submission_path("ada"))
    _touch(tmp_path / "class" / "extra" / course.submission_path("gus"))
    found = collect.collect(tmp_path, course.ASSIGNMENT)
    assert [s.student_id for s in found] == ["ada", "gus"]


def test_layout_inside_a_zip(tmp_path):
    """Is nbgrader's layout inside a zip graded student by student, not as one file name?"""
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for student in ("ada", "gus"):
            out.writestr(f"class/{course.submission_path(student).as_posix()}", student)
    found = {
        s.student_id: s.files[course.NOTEBOOK] for s in collect.collect(archive, course.ASSIGNMENT)
    }
    assert found == {"ada": b"ada", "gus": b"gus"}


def test_stray_files_are_skipped_by_name(tmp_path, capsys):
    """Is a file that is not a notebook skipped with a warning, never made a student?"""
    _touch(tmp_path / "ada.ipynb")
    _touch(tmp_path / "notes.txt", b"remember to grade")
    assert [s.student_id for s in collect.collect(tmp_path, course.ASSIGNMENT)] == ["ada"]
    assert "notes.txt" in capsys.readouterr().err


def test_two_files_for_one_student_are_named(tmp_path, capsys):
    """When two folders hold the same student, is the newer graded and both named?"""
    _touch(tmp_path / "a" / course.submission_path("ada"), b"old", mtime=1_000_000)
    _touch(tmp_path / "b" / course.submission_path("ada"), b"new", mtime=2_000_000)
    (found,) = collect.collect(tmp_path, course.ASSIGNMENT)
    assert found.files[course.NOTEBOOK] == b"new"
    warned = capsys.readouterr().err
    assert "a/ada" in warned and "b/ada" in warned


def test_corrupt_zip_is_a_user_error(tmp_path):
    """Is a damaged .zip one clear error, not a traceback?"""
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("ada.ipynb", "x" * 1000)
    data = bytearray(archive.read_bytes())
    data[40:80] = b"\0" * 40  # the member's data and header, damaged
    archive.write_bytes(bytes(data))
    with pytest.raises(UserError, match="cannot read the archive"):
        collect.collect(archive, course.ASSIGNMENT)
