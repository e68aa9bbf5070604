"""Are submissions found, named and deduplicated as a TA downloaded them?"""

import os
import zipfile

import pytest

from autograder.pipeline import files
from autograder.pipeline.errors import UserError
from autograder.pipeline.submissions import collect, lms_files, submission

from . import toy

NOTEBOOK = "essay.ipynb"  #: the toy course's one notebook


@pytest.fixture(scope="module")
def essay(tmp_path_factory):
    """A toy course's assignment, ``essay-1``, of one notebook: ``essay.ipynb``."""
    return toy.assignment(tmp_path_factory.mktemp("course"), NOTEBOOK, "essay-1")


def _touch(path, data=b"{}", mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime:
        os.utime(path, (mtime, mtime))


def test_nbgrader_layout(essay, tmp_path):
    """Is the student id the folder name in nbgrader's layout?"""
    _touch(tmp_path / essay.submission_path("ada", NOTEBOOK))
    _touch(tmp_path / essay.submission_path("ben", NOTEBOOK))
    assert [s.student_id for s in collect.collect(tmp_path, essay)] == ["ada", "ben"]


@pytest.mark.parametrize(
    "name, student",
    [
        ("doejane_12345_67890_essay.ipynb", "doejane-12345"),
        ("doejane_LATE_12345_67890_essay-2.ipynb", "doejane-12345"),
        ("Jane Doe_4711_assignsubmission_file_essay.ipynb", "jane_doe-4711"),
        ("Jane Doe_4711_assignsubmission_file_/essay.ipynb", "jane_doe-4711"),
        ("王小明_2003_assignsubmission_file_/essay.ipynb", "王小明-2003"),
        ("müllerjürgen_1003_5003_essay.ipynb", "müllerjürgen-1003"),
        ("garcíalópezmaría_LATE_1009_5009_essay-1.ipynb", "garcíalópezmaría-1009"),
        ("τäïσåμÿä_1007_5007_essay.ipynb", "τäïσåμÿä-1007"),
        # a file name a student chose, inside Canvas's name for it: Canvas's key speaks
        ("eve_3333_4444_x_2222_assignsubmission_file_essay.ipynb", "eve-3333"),
        ("ada.ipynb", "ada"),
        ("ben_essay.ipynb", "ben"),
    ],
)
def test_lms_names(essay, name, student):
    """Is the student id the LMS's own key (with the name), read from the LMS's file names?"""
    assert lms_files.student_of(name, essay.stems)[0] == student


def test_custom_pattern():
    """Does --pattern's student group win over the built-in names?"""
    assert (
        lms_files.student_of("hw8-s1234567.ipynb", pattern=r"hw8-(?P<student>s\d+)")[0]
        == "s1234567"
    )


def test_newest_submission_wins(essay, tmp_path):
    """When a student handed in twice, is the newer file the one graded?"""
    _touch(tmp_path / "doejane_1_2_essay.ipynb", b"old", mtime=1_000_000)
    _touch(tmp_path / "doejane_1_2_essay-1.ipynb", b"new", mtime=2_000_000)
    _touch(tmp_path / "smithjo_3_4_essay.ipynb", b"only")
    found = {s.student_id: s.files[NOTEBOOK] for s in collect.collect(tmp_path, essay)}
    assert found == {"doejane-1": b"new", "smithjo-3": b"only"}


def test_zip_is_read_without_extracting(essay, tmp_path):
    """Is a Canvas .zip read in memory, the newest entry per student kept?"""
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr(zipfile.ZipInfo("doejane_1_2_essay.ipynb", (2026, 1, 1, 0, 0, 0)), "old")
        out.writestr(zipfile.ZipInfo("doejane_1_2_essay-1.ipynb", (2026, 1, 2, 0, 0, 0)), "new")
        out.writestr("__MACOSX/._doejane_1_2_essay.ipynb", "junk")
        out.writestr("../../escape_9_9_essay.ipynb", "x")
    found = {s.student_id: s.files[NOTEBOOK] for s in collect.collect(archive, essay)}
    assert found["doejane-1"] == b"new"
    assert "escape-9" in found and not (tmp_path.parent / "escape_9_9_essay.ipynb").exists()


def test_not_a_zip(essay, tmp_path):
    """Is a file that is not a .zip refused with a clear message?"""
    path = tmp_path / "grades.csv"
    path.write_text("a,b")
    with pytest.raises(UserError, match="not a .zip"):
        collect.collect(path, essay)


def test_content_hash_follows_content():
    """Does the hash that decides regrading change with the file, and only with it?"""
    a = submission.Submission("a", {"n.ipynb": b"x"}, "a", None)
    assert a.sha256 == submission.Submission("b", {"n.ipynb": b"x"}, "b", None).sha256
    assert a.sha256 != submission.Submission("a", {"n.ipynb": b"y"}, "a", None).sha256
    assert a.sha256 != submission.Submission("a", {"m.ipynb": b"x"}, "a", None).sha256


def test_links_out_of_the_folder_are_not_followed(essay, tmp_path, capsys):
    """Is a link to a file or folder outside the submissions skipped with a warning?"""
    subs = tmp_path / "subs"
    _touch(subs / essay.submission_path("ada", NOTEBOOK))
    eve = subs / essay.submission_path("eve", NOTEBOOK)
    eve.parent.mkdir(parents=True)
    eve.symlink_to(essay.source(NOTEBOOK))  # a TA's copy mistake
    (subs / "mallory").symlink_to(essay.root / "source")  # a whole folder, linked
    found = {s.student_id: s for s in collect.collect(subs, essay)}
    assert sorted(found) == ["ada", "eve"]  # eve gets a row, her file is not read
    assert found["eve"].files == {} and "links outside" in found["eve"].unreadable[NOTEBOOK]
    warned = capsys.readouterr().err
    assert "eve" in warned and "mallory" in warned
    flat = tmp_path / "flat"
    _touch(flat / "ada.ipynb")
    (flat / "eve.ipynb").symlink_to(essay.source(NOTEBOOK))
    assert [s.student_id for s in collect.collect(flat, essay)] == ["ada"]


def test_links_inside_the_folder_are_followed(essay, tmp_path):
    """Is a link to another file inside the submissions folder still graded?"""
    _touch(tmp_path / "ada.ipynb", b'{"nbformat": 4}')
    (tmp_path / "ben.ipynb").symlink_to(tmp_path / "ada.ipynb")
    assert [s.student_id for s in collect.collect(tmp_path, essay)] == ["ada", "ben"]


def test_too_large_file_says_so(essay, tmp_path):
    """Is a file over the size limit unreadable with its size given, not called empty?"""
    big = tmp_path / "ada.ipynb"
    big.parent.mkdir(parents=True, exist_ok=True)
    with open(big, "wb") as handle:
        handle.truncate(submission.MAX_FILE + 1)
    (found,) = collect.collect(tmp_path, essay)
    assert found.files[NOTEBOOK] == b""
    assert "over the limit" in found.unreadable[NOTEBOOK]


def test_layout_found_at_any_depth(essay, tmp_path):
    """Is nbgrader's layout found one (or more) levels down, every student kept?"""
    _touch(tmp_path / "class" / essay.submission_path("ada", NOTEBOOK))
    _touch(tmp_path / "class" / "extra" / essay.submission_path("gus", NOTEBOOK))
    found = collect.collect(tmp_path, essay)
    assert [s.student_id for s in found] == ["ada", "gus"]


def test_layout_inside_a_zip(essay, tmp_path):
    """Is nbgrader's layout inside a zip graded student by student, not as one file name?"""
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for student in ("ada", "gus"):
            out.writestr(f"class/{essay.submission_path(student, NOTEBOOK).as_posix()}", student)
    found = {s.student_id: s.files[NOTEBOOK] for s in collect.collect(archive, essay)}
    assert found == {"ada": b"ada", "gus": b"gus"}


def test_stray_files_are_skipped_by_name(essay, tmp_path, capsys):
    """Is a file that is not a notebook skipped with a warning, never made a student?"""
    _touch(tmp_path / "ada.ipynb")
    _touch(tmp_path / "notes.txt", b"remember to grade")
    assert [s.student_id for s in collect.collect(tmp_path, essay)] == ["ada"]
    assert "notes.txt" in capsys.readouterr().err


def test_two_files_for_one_student_are_named(essay, tmp_path, capsys):
    """When two folders hold the same student, is the newer graded and both named?"""
    _touch(tmp_path / "a" / essay.submission_path("ada", NOTEBOOK), b"old", mtime=1_000_000)
    _touch(tmp_path / "b" / essay.submission_path("ada", NOTEBOOK), b"new", mtime=2_000_000)
    (found,) = collect.collect(tmp_path, essay)
    assert found.files[NOTEBOOK] == b"new"
    warned = capsys.readouterr().err
    assert "a/ada" in warned and "b/ada" in warned


def test_corrupt_zip_is_a_user_error(essay, tmp_path):
    """Is a damaged .zip one clear error, not a traceback?"""
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("ada.ipynb", "x" * 1000)
    data = bytearray(archive.read_bytes())
    data[40:80] = b"\0" * 40  # the member's data and header, damaged
    archive.write_bytes(bytes(data))
    with pytest.raises(UserError, match="cannot read the archive"):
        collect.collect(archive, essay)


def _ids(where, essay):
    found = collect.collect(where, essay)
    return {s.student_id: s for s in found}


def test_two_people_of_one_name_stay_two(essay, tmp_path, capsys):
    """Two Canvas students both called "Smith, John": two ids, both graded, and a warning?"""
    _touch(tmp_path / "smithjohn_105_9005_essay.ipynb", b"first")
    _touch(tmp_path / "smithjohn_108_9008_essay.ipynb", b"second")
    found = _ids(tmp_path, essay)
    assert sorted(found) == ["smithjohn-105", "smithjohn-108"]
    assert found["smithjohn-105"].files[NOTEBOOK] == b"first"
    assert found["smithjohn-108"].lms_id == "108"
    assert "2 students are called smithjohn" in capsys.readouterr().err


def test_names_in_any_script(essay, tmp_path):
    """Do Moodle participants with non-Latin names keep their own ids, names and numbers?"""
    for name, number, data in (("王小明", 2003, b"wang"), ("李华", 2007, b"li")):
        _touch(tmp_path / f"{name}_{number}_assignsubmission_file_" / NOTEBOOK, data)
    found = _ids(tmp_path, essay)
    assert {k: (v.name, v.lms_id, v.files[NOTEBOOK]) for k, v in found.items()} == {
        "王小明-2003": ("王小明", "2003", b"wang"),
        "李华-2007": ("李华", "2007", b"li"),
    }


def _zip_without_utf8_flag(path, members):
    """A zip as Info-ZIP's ``zip`` writes it: names in UTF-8 bytes, no UTF-8 flag set.

    Python always flags a non-ASCII name, so each is written under an ASCII
    stand-in of the same length and its bytes swapped in afterwards.
    """
    import zipfile

    stand_ins = {}
    with zipfile.ZipFile(path, "w") as archive:
        for number, (name, data) in enumerate(members.items()):
            raw = name.encode("utf-8")
            stand_in = f"{number:04d}".ljust(len(raw), "x")
            stand_ins[stand_in.encode()] = raw
            archive.writestr(stand_in, data)
    content = path.read_bytes()
    for stand_in, raw in stand_ins.items():
        content = content.replace(stand_in, raw)
    path.write_bytes(content)
    with zipfile.ZipFile(path) as archive:  # as Python reads it: the legacy code page
        assert not any(i.flag_bits & 0x800 for i in archive.infolist())
        assert "müllerjürgen" not in " ".join(archive.namelist())


def test_a_zip_without_the_utf8_flag_keeps_every_name(essay, tmp_path):
    """Canvas names in a zip re-zipped without the UTF-8 flag: each its own id and LMS key?"""
    archive = tmp_path / "canvas.zip"
    _zip_without_utf8_flag(
        archive,
        {
            "submissions/müllerjürgen_1003_5003_essay.ipynb": b"muller",
            "submissions/garcíalópezmaría_LATE_1009_5009_essay.ipynb": b"garcia",
            "submissions/doejane_1001_5001_essay.ipynb": b"doe",
        },
    )
    found = {s.student_id: s for s in collect.collect(archive, essay)}
    assert {k: (v.lms_id, v.files[NOTEBOOK]) for k, v in found.items()} == {
        "müllerjürgen-1003": ("1003", b"muller"),
        "garcíalópezmaría-1009": ("1009", b"garcia"),
        "doejane-1001": ("1001", b"doe"),
    }
    assert found["müllerjürgen-1003"].name == "müllerjürgen"


def test_an_lms_id_claimed_twice_is_named(essay, tmp_path, capsys):
    """Two names with one Canvas user id: both kept, and the clash named?"""
    _touch(tmp_path / "bobsmith_2222_1_essay.ipynb", b"bob")
    _touch(tmp_path / "robertsmith_2222_2_essay.ipynb", b"rob")
    assert sorted(_ids(tmp_path, essay)) == ["bobsmith-2222", "robertsmith-2222"]
    assert "LMS id 2222 is claimed by bobsmith-2222, robertsmith-2222" in capsys.readouterr().err


@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
def test_a_students_own_folders_are_not_students(essay, tmp_path, capsys, as_zip):
    """alice/essay-1/bob/essay-1/...: graded as alice, never as bob?"""
    files = {
        f"alice/{essay.id}/{NOTEBOOK}": b"alice",
        f"alice/{essay.id}/bob/{essay.id}/{NOTEBOOK}": b"forged",
        f"carl/{essay.id}/{NOTEBOOK}": b"carl",
    }
    where = _laid_out(tmp_path, files, as_zip)
    found = _ids(where, essay)
    assert {k: v.files[NOTEBOOK] for k, v in found.items()} == {
        "alice": b"alice",
        "carl": b"carl",
    }
    assert f"bob/{essay.id}/{NOTEBOOK}" in capsys.readouterr().err


def _laid_out(tmp_path, files, as_zip):
    if not as_zip:
        for name, data in files.items():
            _touch(tmp_path / "class" / name, data)
        return tmp_path / "class"
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for name, data in files.items():
            out.writestr(name, data)
    return archive


@pytest.mark.parametrize("as_zip", [False, True], ids=["folder", "zip"])
def test_one_participant_in_nbgrader_layout_keeps_the_class(essay, tmp_path, as_zip):
    """A Moodle download where one participant's folder holds nbgrader's layout: all graded?"""
    files = {
        f"Ann Lee_11_assignsubmission_file_/{essay.id}/{NOTEBOOK}": b"ann",
        f"Bo Yu_12_assignsubmission_file_/{NOTEBOOK}": b"bo",
        f"Cy Ng_13_assignsubmission_file_/{NOTEBOOK}": b"cy",
    }
    found = _ids(_laid_out(tmp_path, files, as_zip), essay)
    assert {k: v.files[NOTEBOOK] for k, v in found.items()} == {
        "ann_lee-11": b"ann",
        "bo_yu-12": b"bo",
        "cy_ng-13": b"cy",
    }


@pytest.mark.parametrize("folder", ['=HYPERLINK("http:x")', "<img src=x onerror=alert(1)>", "-1+2"])
def test_ids_are_never_markup_or_formulas(essay, tmp_path, capsys, folder):
    """A folder named as markup or a formula: not a student id, named in a warning?"""
    _touch(tmp_path / folder / essay.id / NOTEBOOK)
    _touch(tmp_path / "ada" / essay.id / NOTEBOOK)
    assert sorted(_ids(tmp_path, essay)) == ["ada"]
    assert "is not a student id" in capsys.readouterr().err


def test_a_path_is_never_an_id(essay, tmp_path, capsys):
    """A zip member ../essay-1/essay.ipynb: no student called '..'?"""
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr(f"x/../{essay.id}/{NOTEBOOK}", b"up")
        out.writestr(f"ada/{essay.id}/{NOTEBOOK}", b"ada")
    assert sorted(_ids(archive, essay)) == ["ada"]


def test_a_renamed_notebook_alone_is_graded_as_the_notebook(essay, tmp_path):
    """essay-Copy1.ipynb, alone in a student's folder: graded as essay.ipynb, noted?"""
    _touch(tmp_path / "ada" / essay.id / "essay-Copy1.ipynb", b"mine")
    _touch(tmp_path / "ben" / essay.id / "a.ipynb", b"one")
    _touch(tmp_path / "ben" / essay.id / "b.ipynb", b"two")
    found = _ids(tmp_path, essay)
    assert found["ada"].files[NOTEBOOK] == b"mine"
    assert found["ada"].renamed == {NOTEBOOK: "essay-Copy1.ipynb"}
    assert NOTEBOOK not in found["ben"].files  # two candidates: which one is not guessed


def test_files_beside_the_notebook_are_read_with_a_bound(essay, tmp_path):
    """A 400 MiB timestamp.txt (sparse, no disk): read no further than its bound, and named?"""
    import tracemalloc

    _touch(tmp_path / essay.submission_path("ada", NOTEBOOK))
    _touch(tmp_path / essay.submission_path("ben", NOTEBOOK))
    stamp = tmp_path / "ben" / essay.id / "timestamp.txt"
    with open(stamp, "wb") as handle:
        handle.truncate(400 * 2**20)
    (tmp_path / "ada" / essay.id / "timestamp.txt").write_text("2026-11-02 12:00:00.000000")
    tracemalloc.start()
    found = {s.student_id: s for s in collect.collect(tmp_path, essay)}
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 * 2**20, f"{peak / 2**20:.0f} MiB held to read two folders"
    assert found["ben"].timestamp is None and "timestamp.txt" in found["ben"].notes[0]
    assert found["ada"].timestamp.day == 2 and found["ada"].notes == []
    assert files.read_bounded(stamp) is None and files.read_bounded(tmp_path) is None
