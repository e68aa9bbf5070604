"""From an LMS download to a file the LMS imports: Canvas and Moodle, in one command each.

The sample class as Canvas names its download (``graded_samples``: user ids
in the file names), graded once; a TA grades one written answer by hand
before the export.
"""

import csv
import subprocess
import sys
import zipfile

import pytest
from nbgrader.api import Gradebook

from autograder.pipeline.course import find_assignment, tool_environment
from autograder.tools import export

pytestmark = pytest.mark.slow


def _autograder(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args], capture_output=True, text=True, cwd=cwd,
        timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def graded(graded_samples):
    """The graded sample class, ivan's written answer graded by a TA; gradebook totals."""
    assignment = find_assignment(graded_samples["course"])
    with Gradebook(str(assignment.coursedir.db_url)) as gb:
        grade = gb.find_grade("why_not_average", "multi_head", assignment.id, "ivan")
        grade.manual_score = 1.5  # as a TA does in formgrader
        gb.db.commit()
    with Gradebook(str(assignment.coursedir.db_url)) as gb:  # read back as the export will
        totals = {s.student.id: s.score for s in gb.find_assignment(assignment.id).submissions}
    return {**graded_samples, "totals": totals}


def _canvas_template(path):
    rows = [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 7 (100)",
         "08-multi-head (4242)", "Current Score"],
        ["    Points Possible", "", "", "", "", "10", "", "(read only)"],
        ["Iva, Ivan", "1008", "s-1", "iiva", "A", "9", "", "90"],
        ["Bo, Ben", "1001", "s-2", "bbo", "A", "8", "", "80"],
        ["Ng, Dara", "7777", "s-4", "dara", "B", "7", "", "70"],
        ["Zed, Zoe", "1099", "s-9", "zzed", "B", "6", "", "60"],
    ]  # fmt: skip
    with path.open("w", newline="", encoding="utf-8-sig") as handle:
        csv.writer(handle).writerows(rows)
    return rows


def _read(path):
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_canvas_export_fills_the_assignment_column(graded, tmp_path):
    """Does the Canvas file come back unchanged but for our column, matched by user id or login?"""
    template = tmp_path / "gradebook.csv"
    rows = _canvas_template(template)
    out = tmp_path / "canvas.csv"
    done = _autograder("export", "canvas", "--template", str(template), "--course",
                       str(graded["course"]), "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = _read(out)
    column = rows[0].index("08-multi-head (4242)")
    assert got[0] == rows[0] and len(got) == len(rows)
    for before, after in zip(rows, got):  # every other cell as Canvas exported it
        assert before[:column] + before[column + 1 :] == after[:column] + after[column + 1 :]
    totals = graded["totals"]
    assert got[1][column] == "41"  # Points Possible, filled because it was empty
    assert float(got[2][column]) == totals["ivan"] and totals["ivan"] % 1 == 0.5  # TA's 1.5 in
    assert float(got[3][column]) == totals["ben"]  # by Canvas user id
    assert float(got[4][column]) == totals["dara"]  # by SIS Login ID
    assert got[5][column] == ""  # no submission: left empty, and said
    assert "Zed, Zoe" in done.stdout
    unmatched = next(line for line in done.stdout.splitlines() if "match no one" in line)
    assert "ada" in unmatched and "ivan" not in unmatched  # every graded student accounted for


def test_canvas_column_must_be_clear(graded, tmp_path):
    """Without the assignment's id in one column title, is it one line and exit 2?"""
    template = tmp_path / "gradebook.csv"
    rows = _canvas_template(template)
    rows[0][6] = "Lab 8"
    with template.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    done = _autograder(
        "export", "canvas", "--template", str(template), "--course", str(graded["course"])
    )
    assert done.returncode == 2 and "--column" in done.stderr and len(done.stderr.splitlines()) == 1
    out = tmp_path / "canvas.csv"
    done = _autograder("export", "canvas", "--template", str(template), "--column", "Lab 8",
                       "--course", str(graded["course"]), "--out", str(out))  # fmt: skip
    assert done.returncode == 0 and _read(out)[2][6] != ""


def test_moodle_export_and_feedback_zip(graded, tmp_path):
    """Does Moodle's worksheet get each participant's grade, and the zip their pages?"""
    worksheet = tmp_path / "worksheet.csv"
    header = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
              "Grade can be changed", "Last modified (submission)", "Last modified (grade)",
              "Feedback comments"]  # fmt: skip
    rows = [
        ["Participant 1004", "Eli Ekberg", "e.ekberg@example.org", "Submitted", "", "100.00", "Yes", "", "", ""],
        ["Participant 77", "Fay Fox", "fay@example.org", "Submitted", "", "100.00", "Yes", "", "", ""],
        ["Participant 503", "Gil Gray", "gil@example.org", "No submission", "", "100.00", "Yes", "", "", ""],
    ]  # fmt: skip
    with worksheet.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    out = tmp_path / "moodle.csv"
    done = _autograder("export", "moodle", "--worksheet", str(worksheet), "--course", str(graded["course"]),
                       "--out", str(out), "--feedback", str(graded["out"] / "feedback"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = _read(out)
    assert got[0] == header and float(got[1][4]) == graded["totals"]["eli"]  # by number
    assert float(got[2][4]) == graded["totals"]["fay"] and got[3][4] == ""  # by e-mail
    with zipfile.ZipFile(tmp_path / "moodle-feedback.zip") as archive:
        names = sorted(archive.namelist())
        assert names == [
            "Eli Ekberg_1004_assignsubmission_file_/feedback.html",
            "Fay Fox_77_assignsubmission_file_/feedback.html",
        ]
        assert "feedback for eli" in archive.read(names[0]).decode()


def test_as_nbgrader_export_plugin(graded, tmp_path):
    """Does ``nbgrader export --exporter=...`` write the same Canvas file as our command?"""
    template = tmp_path / "gradebook.csv"
    _canvas_template(template)
    ours, theirs = tmp_path / "ours.csv", tmp_path / "theirs.csv"
    assert _autograder("export", "canvas", "--template", str(template), "--course",
                       str(graded["course"]), "--out", str(ours)).returncode == 0  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "export",
         "--exporter=autograder.tools.nbgrader_export.CanvasExportPlugin",
         f"--CanvasExportPlugin.template={template}", f"--to={theirs}"],
        cwd=graded["course"], env=tool_environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _read(theirs) == _read(ours)


def test_lms_ids_are_kept_from_file_names(graded_samples):
    """Is each Canvas user id, from the download's file names, in the gradebook?"""
    assignment = find_assignment(graded_samples["course"])
    with Gradebook(str(assignment.coursedir.db_url)) as gb:
        kept = {s.id: s.lms_user_id for s in gb.students}
    assert kept == graded_samples["lms_ids"]


def test_moodle_matches_participant_numbers_first():
    """Is a Moodle row matched by its participant number before its name or e-mail?"""
    grades = {
        "jane": export.Total("jane", 10, 41, "42"),
        "jane_doe": export.Total("jane_doe", 30, 41, ""),
    }
    header = ["Identifier", "Full name", "Email address", "Grade", "Feedback comments"]
    rows = [["Participant 42", "Jane Doe", "jd@example.org", "", ""]]
    filled, done, who = export.fill_moodle(header, rows, grades)
    assert filled[0][3] == "10" and who == {"jane": ("Jane Doe", "42")}
    assert done.unmatched == ["jane_doe"]
