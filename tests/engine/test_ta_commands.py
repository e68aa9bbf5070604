"""A TA's commands on a course with a due date: extensions, hand-in times, removal.

A toy course with a due date and nbgrader's "zero" rule (late work scores 0):
ada handed in a day late, ben in time. Each command is run as a TA types it:
``extend`` (with ``--dry-run``, for real, ``--remove``) reaching the late
penalty, ``grades.csv``, the page and ``nbgrader export`` on the next run;
``grade --times`` for an LMS download that carries no hand-in time; the due
date told to students; ``remove`` taking a student out for good.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import cli
from autograder.pipeline import results
from autograder.pipeline.course import extensions, notebook
from autograder.pipeline.course.assignment import find_assignment
from autograder.tools.nbgrader_cli import run_nbgrader

from . import toy
from .command_line import run_command_line

pytestmark = pytest.mark.slow

ID = "toy-1"
DUE = "2026-03-01 12:00:00 UTC"
SOLVED = "def double(v):\n    return 2 * v"


def autograder(course: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m autograder ARGS`` run in the course folder, as a TA runs it."""
    return run_command_line(args, timeout=300, cwd=course)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """``(course, submissions)``: ada handed in a day after the due date; ben in time."""
    base = tmp_path_factory.mktemp("late")
    course = toy.write_course(
        base / "course", ID, config='c.LateSubmissionPlugin.penalty_method = "zero"\n'
    )
    assert autograder(course, "generate").returncode == 0
    run_nbgrader(course, "db", "assignment", "add", ID, f"--duedate={DUE}")
    release = notebook.read(find_assignment(course, ID).release("toy.ipynb"))
    subs = base / "submissions"
    for student, stamp in (("ada", "2026-03-02 12:00:00 UTC"), ("ben", "2026-03-01 11:00:00 UTC")):
        work = subs / student / ID
        notebook.write(notebook.fill(release, {"double": SOLVED}), work / "toy.ipynb")
        (work / "timestamp.txt").write_text(stamp)
    return course, subs


@pytest.fixture
def late_class(template, tmp_path):
    """A fresh copy of the template's course, and its submissions."""
    course, subs = template
    return shutil.copytree(course, tmp_path / "course"), subs


def _rows(course: Path) -> dict[str, dict[str, str]]:
    return {r["student_id"]: r for r in results.read_csv(course / "grades" / "grades.csv")}


def test_an_extension_reaches_every_output(late_class):
    """Dry run shows 3 -> 0 and writes nothing; the real one and a rerun make ada on time."""
    course, subs = late_class
    graded = autograder(course, "grade", str(subs), "--jobs", "1")
    assert graded.returncode == 0, graded.stderr
    assert _rows(course)["ada"]["late_penalty"] == "3" and _rows(course)["ada"]["score"] == "0"
    assert _rows(course)["ben"]["late_penalty"] == "0"

    tried = autograder(course, "extend", "ada", "--days", "2", "--dry-run")
    assert tried.returncode == 0, tried.stderr
    assert "late penalty 3 -> 0" in tried.stdout and "dry run" in tried.stdout
    assert not extensions.path(course).exists()

    granted = autograder(course, "extend", "ada", "--days", "2", "--why", "a family emergency")
    assert granted.returncode == 0, granted.stderr
    assert "late penalty 3 -> 0" in granted.stdout
    assert "a family emergency" in extensions.path(course).read_text()

    again = autograder(course, "grade", str(subs), "--jobs", "1")
    assert "0 to grade, 2 unchanged" in again.stderr, again.stderr
    ada = _rows(course)["ada"]
    assert (ada["late_penalty"], ada["score"]) == ("0", "3")
    page = (course / "grades" / "feedback" / "ada.html").read_text()
    assert "late submission penalty" not in page
    exported = subprocess.run(
        [sys.executable, "-m", "nbgrader", "export", "--to", "export.csv"],
        cwd=course, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    rows = {r["student_id"]: r for r in results.read_csv(course / "export.csv")}
    assert float(rows["ada"]["score"]) == 3.0 and float(rows["ada"]["late_submission_penalty"]) == 0

    taken = autograder(course, "extend", "ada", "--remove")
    assert taken.returncode == 0 and "late penalty 0 -> 3" in taken.stdout, taken.stdout
    autograder(course, "grade", str(subs), "--jobs", "1")
    assert _rows(course)["ada"]["late_penalty"] == "3"
    page = (course / "grades" / "feedback" / "ada.html").read_text()
    assert "late submission penalty of 3.0 points" in page


@pytest.mark.parametrize(
    "args, says",
    [
        (["--days", "2", "--until", "2026-03-09 12:00 UTC"], "either --until, or --days"),
        (["--until", "next week"], "is no date"),
        (["--days", "-1"], "must add time"),
        (["--remove"], "has no extension"),
        ([], "give --until DATE, or --days"),
    ],
)
def test_a_wrong_extension_is_one_line(template, args, says, capsys):
    """Is a TA's mistake one line on stderr, exit status 2, and nothing written?"""
    course, _ = template  # not graded yet: the course knows no one, so --new
    assert cli.main(["extend", "ada", "--new", *args, "--course", str(course)]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert not extensions.path(course).exists()


def test_students_are_told_the_due_date(late_class):
    """With a due date in the gradebook, do the release README and self_check.py state it?"""
    course, _ = late_class
    done = autograder(course, "generate")
    assert done.returncode == 0, done.stderr
    release = course / "release" / ID
    assert "**Due 2026-03-01 12:00 UTC.**" in (release / "README.md").read_text()
    checked = subprocess.run(
        [sys.executable, "self_check.py"], cwd=release, capture_output=True, text=True, timeout=300
    )
    assert "due 2026-03-01 12:00 UTC: hand in before then" in checked.stdout, checked.stdout


def test_hand_in_times_come_from_the_lms_or_the_run_says_whom_it_lacks(late_class, tmp_path):
    """An LMS download carries no hand-in time: named in one line; --times fills it in.

    Canvas marks ada's file late without a time; ben is a Moodle participant.
    Moodle's worksheet gives ben's time, a plain CSV ada's; the rerun grades no
    one again and charges ada (a day late) while ben (in time) keeps his points.
    """
    course, _ = late_class
    release = notebook.read(find_assignment(course, ID).release("toy.ipynb"))
    download = tmp_path / "download"
    solved = notebook.fill(release, {"double": SOLVED})
    notebook.write(solved, download / "ada_LATE_11_21_toy.ipynb")
    notebook.write(solved, download / "Ben Bo_22_assignsubmission_file_" / "toy.ipynb")

    first = autograder(course, "grade", str(download), "--jobs", "1")
    assert first.returncode == 0, first.stderr
    (said,) = [line for line in first.stderr.splitlines() if "no hand-in time" in line]
    assert "2 student(s)" in said and "ada-11, ben_bo-22" in said
    assert "the LMS marked late: ada-11" in said and "--times FILE" in said
    assert {r["late_penalty"] for r in _rows(course).values()} == {"0"}

    worksheet = tmp_path / "worksheet.csv"
    worksheet.write_text(
        "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
        "Last modified (submission),Online text,Last modified (grade),Feedback comments\n"
        'Participant 22,Ben Bo,ben@example.org,Submitted,,3,Yes,"Sunday, 1 March 2026, 11:00 AM",'
        ",-,\n"
    )
    again = autograder(course, "grade", str(download), "--jobs", "1", "--times", str(worksheet))
    assert again.returncode == 0, again.stderr
    assert "0 to grade, 2 unchanged" in again.stderr
    (said,) = [line for line in again.stderr.splitlines() if "no hand-in time" in line]
    assert "1 student(s)" in said and "ada-11" in said and "ben_bo" not in said

    times = tmp_path / "times.csv"
    times.write_text("student_id,handed_in\nada-11,2026-03-02 12:00:00 UTC\n")
    third = autograder(course, "grade", str(download), "--jobs", "1", "--times", str(times))
    assert "no hand-in time" not in third.stderr, third.stderr
    rows = _rows(course)
    assert (rows["ada-11"]["late_penalty"], rows["ada-11"]["score"]) == ("3", "0")
    assert rows["ben_bo-22"]["late_penalty"] == "0"


def test_a_times_file_of_no_known_kind_is_one_line(template, tmp_path, capsys):
    """Is a --times file that is neither Moodle's nor a plain CSV the TA's mistake, in a line?"""
    course, subs = template
    wrong = tmp_path / "times.csv"
    wrong.write_text("name,when\nada,yesterday\n")
    argv = ["grade", str(subs), "--course", str(course), "--dry-run", "--times", str(wrong)]
    assert cli.main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "not a Moodle grading worksheet" in err and len(err.strip().splitlines()) == 1


def test_a_student_removed_stays_removed(late_class):
    """Removed: out of the gradebook, the CSV, the pages and the export; kept aside; and the
    next run on ``submitted/`` does not bring them back?"""
    course, subs = late_class
    graded = autograder(course, "grade", str(subs), "--jobs", "1")
    assert graded.returncode == 0, graded.stderr
    assert (course / "submitted" / "ada" / ID / "toy.ipynb").is_file()

    tried = autograder(course, "remove", "ada", "--dry-run")
    assert tried.returncode == 0 and "would remove: gradebook" in tried.stdout, tried.stdout
    assert set(_rows(course)) == {"ada", "ben"}

    done = autograder(course, "remove", "ada")
    assert done.returncode == 0, done.stderr
    assert set(_rows(course)) == {"ben"}
    assert not (course / "grades" / "feedback" / "ada.html").exists()
    assert not (course / "submitted" / "ada").exists() or not any(
        (course / "submitted" / "ada").iterdir()
    )
    assert list((course / "removed" / "ada" / ID).glob("*/submitted/toy.ipynb"))
    again = autograder(course, "grade", str(course / "submitted"), "--jobs", "1")
    assert again.returncode == 0, again.stderr
    assert set(_rows(course)) == {"ben"}
    exported = subprocess.run(
        [sys.executable, "-m", "nbgrader", "export", "--to", "export.csv"],
        cwd=course, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert {r["student_id"] for r in results.read_csv(course / "export.csv")} == {"ben"}
    twice = autograder(course, "remove", "ada")
    assert twice.returncode == 2 and "removed from toy-1 on" in twice.stderr, twice.stderr
    assert "--undo" in twice.stderr and len(twice.stderr.strip().splitlines()) == 1


def test_a_dry_run_counts_the_points_a_ta_gave_since(tmp_path):
    """A TA gives ada's written answer 2 points in formgrader after grading: nbgrader stored
    the penalty before that (5 of the tests' points, under "zero"). The dry run and the
    extension both start from the penalty the rule gives now, 7, as --remove ends at."""
    from nbgrader.api import Gradebook

    course = toy.write_course(
        tmp_path / "course",
        ID,
        {"toy.ipynb": toy.LESSON},
        config='c.LateSubmissionPlugin.penalty_method = "zero"\n',
    )
    assert autograder(course, "generate").returncode == 0
    run_nbgrader(course, "db", "assignment", "add", ID, f"--duedate={DUE}")
    release = notebook.read(find_assignment(course, ID).release("toy.ipynb"))
    work = tmp_path / "submissions" / "ada" / ID
    counted = "def count_words(text):\n    return len(text.split())"
    notebook.write(
        notebook.fill(release, {"double": SOLVED, "count_words": counted}), work / "toy.ipynb"
    )
    (work / "timestamp.txt").write_text("2026-03-02 12:00:00 UTC")
    assert autograder(course, "grade", str(work.parent.parent), "--jobs", "1").returncode == 0
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:  # as formgrader saves it
        gb.find_grade("why_double", "toy", ID, "ada").manual_score = 2
        gb.db.commit()
        assert gb.find_submission(ID, "ada").late_submission_penalty == 5  # stored before

    tried = autograder(course, "extend", "ada", "--days", "2", "--dry-run")
    assert tried.returncode == 0 and "late penalty 7 -> 0" in tried.stdout, tried.stdout
    granted = autograder(course, "extend", "ada", "--days", "2")
    assert "late penalty 7 -> 0" in granted.stdout, granted.stdout
    taken = autograder(course, "extend", "ada", "--remove")
    assert "late penalty 0 -> 7" in taken.stdout, taken.stdout
