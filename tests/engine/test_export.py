"""From an LMS download to a file the LMS imports: Canvas and Moodle, in one command each.

A class of the toy course as Canvas names its download (``downloaded``: user ids
in the file names, so ``ivan_1008_9008_toy.ipynb`` is the student ``ivan-1008``),
graded once; a TA grades one written answer by hand before the export.
"""

import csv
import shutil
import subprocess
import sys
import zipfile

import pytest
from nbgrader.api import Gradebook

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import find_assignment, tool_environment
from autograder.pipeline.lms import canvas, moodle
from autograder.pipeline.lms.grades import Total

from .command_line import run_command_line

pytestmark = pytest.mark.slow


def _autograder(*args, cwd=None):
    return run_command_line(args, timeout=600, cwd=cwd)


ID, NOTEBOOK = "toy-1", "toy.ipynb"  #: the toy course's assignment (tests/engine/conftest.py)
POINTS = "7"  #: the assignment's points: 5 from tests, 2 for the written answer
NAMES = ("ada", "ben", "chen", "dara", "eli", "fay", "gus", "hana", "ivan", "jo", "kai", "lee")
WRONG = {  # what some students got wrong; the rest hand in the solution
    "ben": {"double": "def double(v):\n    return v + 2"},
    "dara": {"count_words": "def count_words(text):\n    return len(text)"},
    "eli": {"double": "def double(v):\n    return 0"},
    "gus": {"count_words": "def count_words(text):\n    return text.count(' ')"},
}


def _grade(submissions, course, out):
    argv = ["grade", str(submissions), "--course", str(course), "--out", str(out), "--jobs", "2"]
    return run_command_line(argv, timeout=600)


@pytest.fixture(scope="module")
def downloaded(lesson_template, lesson_solved, tmp_path_factory):
    """The class downloaded from Canvas and graded once in its own course.

    ``{"course", "out", "done", "ids", "lms_ids", "download"}``: ids: ``{name: student id}``;
    lms_ids: ``{student id: Canvas user id}``.
    """
    base = tmp_path_factory.mktemp("download")
    course = shutil.copytree(lesson_template, base / "course")
    download, out = base / "canvas-download", base / "grades"
    ids, lms_ids = {}, {}
    for number, name in enumerate(NAMES):
        ids[name] = f"{name}-{1000 + number}"
        lms_ids[ids[name]] = str(1000 + number)
        handed_in = notebook.fill(lesson_solved, WRONG.get(name, {}))
        notebook.write(handed_in, download / f"{name}_{1000 + number}_{9000 + number}_{NOTEBOOK}")
    done = _grade(download, course, out)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"course": course, "out": out, "done": done, "ids": ids, "lms_ids": lms_ids,
            "download": download}  # fmt: skip


@pytest.fixture(scope="module")
def graded(downloaded):
    """The graded sample class, ivan's written answer graded by a TA; gradebook totals."""
    assignment = find_assignment(downloaded["course"])
    with Gradebook(str(assignment.coursedir.db_url)) as gb:
        grade = gb.find_grade("why_double", "toy", assignment.id, "ivan-1008")
        grade.manual_score = 1.5  # as a TA does in formgrader
        gb.db.commit()
    with Gradebook(str(assignment.coursedir.db_url)) as gb:  # read back as the export will
        totals = {
            s.student.id.split("-")[0]: s.score
            for s in gb.find_assignment(assignment.id).submissions
        }  # by name: ivan
    return {**downloaded, "totals": totals}


def _canvas_template(path):
    rows = [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 7 (100)",
         "toy-1 (4242)", "Current Score"],
        ["    Points Possible", "", "", "", "", "10", "", "(read only)"],
        ["Iva, Ivan", "1008", "s-1", "iiva", "A", "9", "", "90"],
        ["Bo, Ben", "1001", "s-2", "bbo", "A", "8", "", "80"],
        ["Ng, Dara", "7777", "s-4", "dara-1003", "B", "7", "", "70"],
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
                       str(graded["course"]), "--out", str(out), "--grades", str(graded["out"]))  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = _read(out)
    column = rows[0].index("toy-1 (4242)")
    assert got[0] == rows[0] and len(got) == len(rows)
    for before, after in zip(rows, got):  # every other cell as Canvas exported it
        assert before[:column] + before[column + 1 :] == after[:column] + after[column + 1 :]
    totals = graded["totals"]
    assert got[1][column] == POINTS  # Points Possible, filled because it was empty
    assert float(got[2][column]) == totals["ivan"] and totals["ivan"] % 1 == 0.5  # TA's 1.5 in
    assert float(got[3][column]) == totals["ben"]  # by Canvas user id
    assert float(got[4][column]) == totals["dara"]  # by SIS Login ID
    assert got[5][column] == ""  # no submission: left empty, and said
    assert "Zed, Zoe" in done.stdout
    unmatched = next(line for line in done.stdout.splitlines() if "match no one" in line)
    assert "ada-1000" in unmatched and "ivan" not in unmatched  # every graded student named


def test_an_export_speaks_of_this_class_only(graded, tmp_path):
    """A student an earlier run left in the gradebook (ivan's old id): no warning, no clash?

    The class is the grade run's (``--grades DIR``, its ``grades.csv``); the
    gradebook's other students are counted in one line. Pointed at a folder
    with no ``grades.csv``, the export says so and exports the whole gradebook.
    """
    course = shutil.copytree(graded["course"], tmp_path / "course")
    earlier = tmp_path / "earlier-download"  # ivan, as an earlier download spelled him
    earlier.mkdir()
    shutil.copy(graded["download"] / f"ivan_1008_9008_{NOTEBOOK}",
                earlier / f"iivan_1008_9999_{NOTEBOOK}")  # fmt: skip
    assert _grade(earlier, course, tmp_path / "earlier").returncode == 0
    template = tmp_path / "gradebook.csv"
    rows = _canvas_template(template)
    column = rows[0].index("toy-1 (4242)")
    out = tmp_path / "canvas.csv"
    command = ["export", "canvas", "--template", str(template), "--course", str(course),
               "--out", str(out)]  # fmt: skip
    done = _autograder(*command, "--grades", str(graded["out"]))
    assert done.returncode == 0, done.stderr
    assert float(_read(out)[2][column]) == graded["totals"]["ivan"]  # this class's ivan
    assert "iivan" not in done.stdout and "claimed" not in done.stdout
    unmatched = next(line for line in done.stdout.splitlines() if "match no one" in line)
    assert "ada-1000" in unmatched  # this class's students are still named
    assert (
        f"1 other student(s) in the gradebook, not in {graded['out'] / 'grades.csv'}, "
        "were left out" in done.stdout
    )
    done = _autograder(*command, "--grades", str(tmp_path / "elsewhere"))
    assert done.returncode == 0, done.stderr
    assert f"no {tmp_path / 'elsewhere' / 'grades.csv'} (the grade run's --out)" in done.stdout
    assert "LMS id 1008 is claimed by iivan-1008 and ivan-1008" in done.stdout
    assert _read(out)[2][column] == ""


def test_canvas_column_must_be_clear(graded, tmp_path):
    """Without the assignment's id in one of several column titles, is it one line and exit 2?"""
    template = tmp_path / "gradebook.csv"
    rows = _canvas_template(template)
    rows[0][6] = "Lab 8"
    with template.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    done = _autograder(
        "export", "canvas", "--template", str(template), "--course", str(graded["course"])
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "--column=NAME" in done.stderr and "'Week 7 (100)', 'Lab 8'" in done.stderr
    out = tmp_path / "canvas.csv"
    done = _autograder("export", "canvas", "--template", str(template), "--column", "Lab 8",
                       "--course", str(graded["course"]), "--out", str(out),
                       "--grades", str(graded["out"]))  # fmt: skip
    assert done.returncode == 0 and _read(out)[2][6] != ""
    again = _autograder("export", "canvas", "--template", str(template),
                        "--course", str(graded["course"]), "--grades", str(graded["out"]))  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "filled the column 'Lab 8', as last time" in again.stdout
    beside = graded["out"] / "canvas.csv"  # beside the grades it read, not in grades/
    assert f"wrote {beside}" in again.stdout and _read(beside)[2][6] == _read(out)[2][6]


@pytest.mark.parametrize(
    "data, says",
    [
        (b"PK\x03\x04 a workbook", "is an Excel workbook, not a CSV: save it as CSV UTF-8"),
        (b"\xd0\xcf\x11\xe0 an old one", "is an Excel workbook"),
    ],
)
def test_a_workbook_is_one_line(graded, tmp_path, data, says):
    """An .xlsx given as the template: one line saying how to save it, exit 2?"""
    template = tmp_path / "Grades.xlsx"
    template.write_bytes(data)
    done = _autograder(
        "export", "canvas", "--template", str(template), "--course", str(graded["course"])
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert says in done.stderr


def test_a_csv_excel_saved_as_windows_1252_is_read(graded, tmp_path):
    """A template Excel saved as plain CSV (Windows-1252, accented names): read, and noted?"""
    template = tmp_path / "gradebook.csv"
    rows = _canvas_template(template)
    rows[2][0] = "Iva, Iván"
    with template.open("w", newline="", encoding="cp1252") as handle:
        csv.writer(handle).writerows(rows)
    out = tmp_path / "canvas.csv"
    done = _autograder("export", "canvas", "--template", str(template), "--out", str(out),
                       "--course", str(graded["course"]), "--grades", str(graded["out"]))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "read as Windows-1252" in done.stderr
    assert _read(out)[2][0] == "Iva, Iván"


def test_canvas_scales_to_points_possible_and_finds_its_one_column(graded, tmp_path):
    """A real title and 100 Points Possible: the one column found, totals scaled, and said?"""
    template = tmp_path / "gradebook.csv"
    rows = [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
         "Part 1 Toy (4242)", "Current Score", "Final Points"],
        ["    Points Possible", "", "", "", "", "100", "(read only)", "(read only)"],
        ["Bo, Ben", "1001", "s-2", "bbo", "A", "", "80", "8"],
    ]  # fmt: skip
    with template.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    out = tmp_path / "canvas.csv"
    done = _autograder("export", "canvas", "--template", str(template), "--course",
                       str(graded["course"]), "--out", str(out), "--grades", str(graded["out"]))  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = _read(out)
    assert got[1][5] == "100"
    assert float(got[2][5]) == pytest.approx(graded["totals"]["ben"] * 100 / int(POINTS), abs=0.01)
    assert f"totals scaled from {POINTS} points to the LMS's 100" in done.stdout
    rows[1][5] = "lots"
    with template.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    done = _autograder("export", "canvas", "--template", str(template), "--course",
                       str(graded["course"]), "--out", str(out), "--grades", str(graded["out"]))  # fmt: skip
    assert done.returncode == 2 and "cannot read the maximum grade 'lots'" in done.stderr


def test_moodle_export_and_feedback_zip(graded, tmp_path):
    """Does Moodle's worksheet get each participant's grade, and the zip their pages?"""
    worksheet = tmp_path / "worksheet.csv"
    header = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
              "Grade can be changed", "Last modified (submission)", "Last modified (grade)",
              "Feedback comments"]  # fmt: skip
    rows = [
        ["Participant 1004", "Eli Ekberg", "e.ekberg@example.org", "Submitted", "", "100.00", "Yes", "", "", ""],
        ["Participant 77", "Fay Fox", "fay@example.org", "Submitted", "", "", "Yes", "", "", ""],
        ["Participant 503", "Kai Wong", "k.wong@example.org", "No submission", "", "100.00", "Yes", "", "", ""],
    ]  # fmt: skip
    with worksheet.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    out = tmp_path / "moodle.csv"
    command = ["export", "moodle", "--worksheet", str(worksheet), "--course", str(graded["course"]),
               "--out", str(out), "--grades", str(graded["out"])]  # fmt: skip
    done = _autograder(*command)
    assert done.returncode == 0, done.stderr
    got = _read(out)
    assert (
        got[0] == header
        and got[1][4] == f"{round(graded['totals']['eli'] * 100 / int(POINTS), 2):g}"
    )
    assert f"scaled from {POINTS} points to the LMS's 100" in done.stdout  # by number, on its scale
    assert got[2][4] == "" and got[3][4] == ""  # no key: never matched by a name or e-mail
    done = _autograder(*command, "--match-names")  # unless asked, and then said row by row
    got = _read(out)
    assert float(got[2][4]) == graded["totals"]["fay"] and got[2][5] == POINTS  # by e-mail
    assert "Participant 77 (Fay Fox) matched fay-1005 by name or e-mail" in done.stdout
    assert got[3][4] == ""  # Kai Wong handed nothing in: the sample kai is someone else
    with zipfile.ZipFile(tmp_path / "moodle-feedback.zip") as archive:
        names = sorted(archive.namelist())
        assert names == [
            "Eli Ekberg_1004_assignsubmission_file_/feedback.html",
            "Fay Fox_77_assignsubmission_file_/feedback.html",
        ]
        assert "feedback for eli-1004" in archive.read(names[0]).decode()
    assert got[1][9] == got[2][9] == "Your feedback page is attached." and got[3][9] == ""


def test_moodle_never_promises_a_page_it_did_not_attach(graded, tmp_path):
    """Without the grade run's pages, is no page promised, and is the TA told where it looked?"""
    worksheet = tmp_path / "worksheet.csv"
    header = ["Identifier", "Full name", "Grade", "Feedback comments"]
    with worksheet.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, ["Participant 1004", "Eli Ekberg", "", ""]])
    out = tmp_path / "moodle.csv"
    done = _autograder("export", "moodle", "--worksheet", str(worksheet), "--course",
                       str(graded["course"]), "--out", str(out), "--grades", str(graded["out"]),
                       "--feedback", str(tmp_path / "nowhere"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = _read(out)[1]
    assert row[2] != "" and row[3] == "", row  # graded, and no page promised
    assert f"no feedback pages in {tmp_path / 'nowhere'}" in done.stderr


def test_as_nbgrader_export_plugin(graded, tmp_path):
    """Does ``nbgrader export --exporter=...`` write the same Canvas file as our command?"""
    template = tmp_path / "gradebook.csv"
    _canvas_template(template)
    ours, theirs = tmp_path / "ours.csv", tmp_path / "theirs.csv"
    assert _autograder("export", "canvas", "--template", str(template), "--course",
                       str(graded["course"]), "--out", str(ours),
                       "--grades", str(graded["out"])).returncode == 0  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "export",
         "--exporter=autograder.tools.nbgrader_export.CanvasExportPlugin",
         f"--CanvasExportPlugin.template={template}", f"--to={theirs}"],
        cwd=graded["course"], env=tool_environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _read(theirs) == _read(ours)


def test_lms_ids_are_kept_from_file_names(downloaded):
    """Is each Canvas user id, from the download's file names, in the gradebook?"""
    assignment = find_assignment(downloaded["course"])
    with Gradebook(str(assignment.coursedir.db_url)) as gb:
        kept = {s.id: s.lms_user_id for s in gb.students}
    assert kept == downloaded["lms_ids"]


def test_people_are_named_as_the_lms_names_them(downloaded):
    """Does the gradebook (formgrader, nbgrader export) hold each person's name, not a file's?"""
    assignment = find_assignment(downloaded["course"])
    with Gradebook(str(assignment.coursedir.db_url)) as gb:
        names = {s.id: (s.first_name, s.last_name) for s in gb.students}
    assert names == {sid: (None, sample) for sample, sid in downloaded["ids"].items()}


def test_names_are_split_as_each_lms_writes_them():
    """Canvas's sortable "Last, First", Moodle's "First Last", a one-word name?"""
    from autograder.pipeline.results.recorder import person

    assert person("Müller, Jürgen") == ("Jürgen", "Müller")
    assert person("María García López") == ("María García", "López")
    assert person("doejane") == (None, "doejane")


def test_moodle_matches_participant_numbers_first():
    """Is a Moodle row matched by its participant number before its name or e-mail?"""
    grades = {
        "jane": Total("jane", 10, 41, "42"),
        "jane_doe": Total("jane_doe", 30, 41, ""),
    }
    header = ["Identifier", "Full name", "Email address", "Grade", "Feedback comments"]
    rows = [["Participant 42", "Jane Doe", "jd@example.org", "", ""]]
    filled, done, who = moodle.fill(header, rows, grades, match_names=True)
    assert filled[0][3] == "10" and who == {"jane": ("Jane Doe", "42")}
    assert done.unmatched == ["jane_doe"]


def test_moodle_keeps_two_participants_apart():
    """王小明 and 李华: each row gets its own grade, each page goes to its own folder?"""
    grades = {
        "王小明-2003": Total("王小明-2003", 39, 41, "2003"),
        "李华-2007": Total("李华-2007", 21, 41, "2007"),
    }
    header = ["Identifier", "Full name", "Grade"]
    rows = [["Participant 2003", "王小明", ""], ["Participant 2007", "李华", ""]]
    filled, _, who = moodle.fill(header, rows, grades)
    assert [row[2] for row in filled] == ["39", "21"]
    assert who == {"王小明-2003": ("王小明", "2003"), "李华-2007": ("李华", "2007")}


def test_an_lms_id_claimed_twice_is_written_for_neither():
    """Two students with one Canvas user id: the row stays empty and the clash is said?"""
    grades = {
        "bob-2222": Total("bob-2222", 39, 41, "2222"),
        "x-2222": Total("x-2222", 0, 41, "2222"),
    }
    header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab (1)"]
    rows = [["Smith, Bob", "2222", "", "bsmith", "A", ""]]
    filled, done = canvas.fill(header, rows, grades, 5)
    assert filled[0][5] == "" and done.notes == [
        "LMS id 2222 is claimed by bob-2222 and x-2222: written for neither; check"
    ]


def test_plugin_mistakes_are_one_line(graded, tmp_path):
    """The nbgrader plugin with an unclear column: one line naming its own flag, exit 2?"""
    template = tmp_path / "gradebook.csv"
    rows = _canvas_template(template)
    rows[0][6] = "Lab 8"
    with template.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "export",
         "--exporter=autograder.tools.nbgrader_export.CanvasExportPlugin",
         f"--CanvasExportPlugin.template={template}", f"--to={tmp_path / 'x.csv'}"],
        cwd=graded["course"], env=tool_environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "--CanvasExportPlugin.column=NAME" in done.stderr
