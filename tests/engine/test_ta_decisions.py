"""What a TA decided survives every later run, and the TA's commands take turns on the course.

A toy course with a due date, nbgrader's "zero" rule (late work scores 0) and
a written answer a TA grades. Each decision is made the way a TA makes it
(a grade in formgrader, through its HTTP API; a hand-in time from a file; an
extension set through nbgrader's own API, as ngshare and scripts set one; a
removal) and then put through what undid it before: a regrade with
``--force``, a rubric change, a run while formgrader is open, a class folder
that brings a removed student back. The course lock is tried with real
processes at once. Ids a TA types are data: never a path, and never written
where they break a file.
"""

import os
import select
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.pipeline import results
from autograder.pipeline.course import extensions, notebook, removals, turns
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.course.gradebook import course_url
from autograder.tools.nbgrader_cli import run_nbgrader

from . import toy
from .command_line import run_command_line
from .formgrader import Formgrader

pytestmark = pytest.mark.slow

ID = "toy-1"
DUE = "2026-03-01 12:00:00 UTC"
LATE, IN_TIME = "2026-03-02 12:00:00 UTC", "2026-03-01 11:00:00 UTC"
INTRO = nbformat.v4.new_markdown_cell(
    "# Doubling\n\n| part | answer | points |\n| --- | --- | --- |\n| 1 | `double` | 3 |\n"
    "| 2 | `explain` | 2 |\n| | **total** | **5** |"
)  #: the points table a rubric change must keep true
CELLS = [
    INTRO,
    *toy.DOUBLE,
    toy.cell("### BEGIN SOLUTION\nTwice the input.\n### END SOLUTION", "explain", "manual", 2),
]
SOLVED = "def double(v):\n    return 2 * v"
AUTOGRADED = 3  # the two tests' points; the written answer's 2 come from a TA


def autograder(course: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m autograder ARGS`` run in the course folder, as a TA runs it."""
    return run_command_line(args, timeout=300, cwd=course)


def started(course: Path, *args: str) -> subprocess.Popen:
    """``python -m autograder ARGS`` started in the course folder, a process of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "autograder", *args],
        cwd=course, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """``(course, submissions)``: ada handed in a day late; ben and noah in time."""
    base = tmp_path_factory.mktemp("decisions")
    course = toy.write_course(
        base / "course",
        ID,
        {"toy.ipynb": CELLS},
        config='c.LateSubmissionPlugin.penalty_method = "zero"\n',
    )
    assert autograder(course, "generate").returncode == 0
    run_nbgrader(course, "db", "assignment", "add", ID, f"--duedate={DUE}")
    release = notebook.read(find_assignment(course, ID).release("toy.ipynb"))
    subs = base / "submissions"
    for student, stamp in (("ada", LATE), ("ben", IN_TIME), ("noah", IN_TIME)):
        work = subs / student / ID
        filled = notebook.fill(release, {"double": SOLVED, "explain": f"{student}: it doubles."})
        notebook.write(filled, work / "toy.ipynb")
        (work / "timestamp.txt").write_text(stamp)
    return course, subs


@pytest.fixture
def course(template, tmp_path):
    """A fresh copy of the template's course and its submissions, graded once."""
    course = shutil.copytree(template[0], tmp_path / "course")
    subs = shutil.copytree(template[1], tmp_path / "submissions")
    graded = autograder(course, "grade", str(subs), "--jobs", "1")
    assert graded.returncode == 0, graded.stderr
    return course, subs


def _rows(course: Path, out: str = "grades") -> dict[str, dict[str, str]]:
    return {r["student_id"]: r for r in results.read_csv(course / out / "grades.csv")}


def _one_line_error(done: subprocess.CompletedProcess, says: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_a_tas_written_answer_grades_stand_through_regrades(course):
    """Graded in formgrader: an appeal's --force, a rubric change, a dry run while formgrader
    holds its write in SQLite's log: the grades stand; a changed answer alone asks again."""
    course, subs = course
    with Formgrader(course) as server:
        assert server.needs_grading(ID, "toy") == {"ada": True, "ben": True, "noah": True}
        server.grade(ID, "toy", "ada", "explain", 1.5)
        server.grade(ID, "toy", "ben", "explain", 2)
        wal = Path(str(course / "gradebook.db") + "-wal")
        assert wal.is_file() and wal.stat().st_size > 0  # formgrader's grades live in the log
        dry = autograder(course, "grade", str(subs), "--dry-run", "--out", "dry")
        assert dry.returncode == 0, dry.stderr
        assert _rows(course, "dry")["ada"]["explain"] == "1.5"
        assert float(_rows(course, "dry")["ben"]["score"]) == AUTOGRADED + 2

        appeal = autograder(course, "grade", str(subs), "--student", "ada", "--force")
        assert appeal.returncode == 0, appeal.stderr
        assert "await a TA again" not in appeal.stderr
        assert server.needs_grading(ID, "toy") == {"ada": False, "ben": False, "noah": True}

        source = course / "source" / ID / "toy.ipynb"  # the rubric: the hidden test 2 -> 3
        nb = notebook.read(source)
        (hidden,) = [c for c in nb.cells if c.get("id") == "test_double_negative"]
        hidden.metadata.nbgrader["points"] = 3
        notebook.write(nb, source)
        regenerated = autograder(course, "generate")
        assert regenerated.returncode == 0, regenerated.stderr
        assert "updated the points table" in regenerated.stdout
        assert "1: 3 -> 4" in regenerated.stdout and "total: 5 -> 6" in regenerated.stdout
        released = notebook.read(find_assignment(course, ID).release("toy.ipynb"))
        assert "| 1 | `double` | 4 |" in released.cells[0].source
        assert "**6**" in released.cells[0].source
        rubric = autograder(course, "grade", str(subs))
        assert rubric.returncode == 0 and "3 to grade" in rubric.stderr, rubric.stderr
        assert server.needs_grading(ID, "toy") == {"ada": False, "ben": False, "noah": True}
        rows = _rows(course)
        assert rows["ada"]["explain"] == "1.5" and rows["ben"]["explain"] == "2"

        work = subs / "ben" / ID / "toy.ipynb"  # ben rewrites his answer: a TA must look again
        nb = notebook.read(work)
        nb = notebook.fill(nb, {"explain": "ben: it doubles, and here is why."})
        notebook.write(nb, work)
        changed = autograder(course, "grade", str(subs))
        assert changed.returncode == 0, changed.stderr
        (said,) = [line for line in changed.stderr.splitlines() if "await a TA again" in line]
        assert "ben (explain)" in said and "ada" not in said
        assert server.needs_grading(ID, "toy") == {"ada": False, "ben": True, "noah": True}
    page = (course / "grades" / "feedback" / "ada.html").read_text()
    assert "awaiting a TA" not in page


def test_a_notebook_that_could_not_be_read_has_its_row_in_formgrader(course):
    """A truncated hand-in: formgrader lists it (scored 0, nothing to grade by hand), and its
    page still says why, after a TA's grade elsewhere has the page rendered again. Its
    written answer, like one left as released, scores 0 as nbgrader has it, in the CSV and
    on the page: nothing awaits a TA."""
    course, subs = course
    work = subs / "zed" / ID
    work.mkdir(parents=True)
    (work / "toy.ipynb").write_text('{"cells": [{"cell_type": "code", "sou')
    (work / "timestamp.txt").write_text(IN_TIME)
    release = notebook.read(find_assignment(course, ID).release("toy.ipynb"))
    notebook.write(notebook.fill(release, {"double": SOLVED}), subs / "una" / ID / "toy.ipynb")
    graded = autograder(course, "grade", str(subs))
    assert graded.returncode == 0, graded.stderr
    rows = _rows(course)
    assert rows["zed"]["status"] == "unreadable"
    with Formgrader(course) as server:
        waiting = server.needs_grading(ID, "toy")
        assert waiting["zed"] is False and waiting["una"] is False
    for student in ("zed", "una"):
        assert rows[student]["explain"] == "0", rows[student]
        page = (course / "grades" / "feedback" / f"{student}.html").read_text()
        assert "awaiting a TA" not in page, student
    _grade_by_hand(course, {"ada": 1})
    again = autograder(course, "grade", str(subs))
    assert again.returncode == 0, again.stderr
    page = (course / "grades" / "feedback" / "zed.html").read_text()
    assert "Grading note (unreadable)" in page and "could not be graded" not in page


def test_hand_in_times_are_kept_through_force(course, tmp_path):
    """A time given once with --times: kept by --force, --student --force and a new download;
    a new file says so."""
    course, _ = course
    release = notebook.read(find_assignment(course, ID).release("toy.ipynb"))
    download = tmp_path / "download"
    solved = notebook.fill(release, {"double": SOLVED, "explain": "It doubles."})
    notebook.write(solved, download / "cy_LATE_11_21_toy.ipynb")
    notebook.write(solved, download / "dee_22_23_toy.ipynb")
    times = tmp_path / "times.csv"
    times.write_text(f"student_id,handed_in\ncy-11,{LATE}\ndee-22,{IN_TIME}\n")
    first = autograder(course, "grade", str(download), "--times", str(times))
    assert first.returncode == 0, first.stderr
    assert _rows(course)["cy-11"]["late_penalty"] == "3"

    for again in (["--force"], ["--student", "cy-11", "--force"], []):
        run = autograder(course, "grade", str(download), *again)
        assert run.returncode == 0, run.stderr
        assert "no hand-in time" not in run.stderr, (again, run.stderr)
        cy = _rows(course)["cy-11"]
        assert (cy["late_penalty"], cy["score"]) == ("3", "0"), (again, cy)
        assert _rows(course)["dee-22"]["late_penalty"] == "0"

    redone = notebook.fill(release, {"double": "def double(v):\n    return v + v"})
    notebook.write(redone, download / "cy_LATE_11_21_toy.ipynb")
    changed = autograder(course, "grade", str(download))
    assert changed.returncode == 0, changed.stderr
    assert "kept the hand-in time" in changed.stderr and "cy-11" in changed.stderr
    assert _rows(course)["cy-11"]["late_penalty"] == "3"


def test_an_extension_set_in_the_gradebook_is_kept(course):
    """An extension set with nbgrader's API (as ngshare and scripts set one) stands, and the
    course's file records it, saying so."""
    course, subs = course
    assert _rows(course)["ada"]["late_penalty"] == "3"
    with Gradebook(course_url(find_assignment(course, ID))) as gb:
        gb.update_or_create_submission(ID, "ada", extension=timedelta(days=2))
    again = autograder(course, "grade", str(subs))
    assert again.returncode == 0, again.stderr
    assert "found only in the gradebook" in again.stderr and "ada (48 h)" in again.stderr
    ada = _rows(course)["ada"]
    assert (ada["late_penalty"], ada["score"]) == ("0", str(AUTOGRADED))
    kept = extensions.granted(find_assignment(course, ID))
    assert kept["ada"].more == timedelta(days=2)

    with Gradebook(course_url(find_assignment(course, ID))) as gb:  # another tool changes it
        gb.update_or_create_submission(ID, "ada", extension=timedelta(days=1))
    differ = autograder(course, "grade", str(subs))
    assert "disagree" in differ.stderr and "ada" in differ.stderr, differ.stderr
    assert _rows(course)["ada"]["late_penalty"] == "0"  # the file's two days stand


def test_a_removed_student_stays_removed_until_undone(course):
    """collect --update puts ada's work back: the next run skips her, in one line; grading her
    by name is refused; --undo brings her back."""
    course, subs = course
    done = autograder(course, "remove", "ada")
    assert done.returncode == 0, done.stderr
    assert "ada" in removals.recorded(find_assignment(course, ID))
    # what `nbgrader collect --update` does with her submission still in the exchange
    shutil.copytree(subs / "ada", course / "submitted" / "ada", dirs_exist_ok=True)
    again = autograder(course, "grade", str(course / "submitted"))
    assert again.returncode == 0, again.stderr
    (said,) = [line for line in again.stderr.splitlines() if "removed from" in line]
    assert "skipped 1 student(s)" in said and "ada" in said and "--undo" in said
    assert set(_rows(course)) == {"ben", "noah"}
    with Gradebook(course_url(find_assignment(course, ID))) as gb:
        assert {s.id for s in gb.students} == {"ben", "noah"}
    _one_line_error(
        autograder(course, "grade", str(subs), "--student", "ada"), "removed from toy-1"
    )

    back = autograder(course, "remove", "ada", "--undo")
    assert back.returncode == 0 and "back" in back.stdout, back.stderr
    regraded = autograder(course, "grade", str(course / "submitted"))
    assert regraded.returncode == 0, regraded.stderr
    assert set(_rows(course)) == {"ada", "ben", "noah"}
    assert _rows(course)["ada"]["late_penalty"] == "3"


def test_ids_a_ta_types_are_data(course, tmp_path):
    """A path, a control character or a typo as a student id: one line, nothing touched; any
    note a TA types is written so that every later command still reads the file."""
    course, subs = course
    around = sorted(p.name for p in course.parent.iterdir())
    for bad in ("../../../x", "../../x", "..", "a/b", "ada\n", "ad\x01a"):
        _one_line_error(autograder(course, "remove", bad), "is not a student id")
        _one_line_error(autograder(course, "extend", bad, "--days", "1"), "is not a student id")
    assert sorted(p.name for p in course.parent.iterdir()) == around
    assert (course / "submitted" / "ada" / ID / "toy.ipynb").is_file()

    _one_line_error(autograder(course, "extend", "noha", "--days", "1"), "did you mean noah?")
    _one_line_error(autograder(course, "remove", "noha"), "did you mean noah?")
    assert not extensions.path(course).exists()
    new = autograder(course, "extend", "zoe", "--new", "--days", "1")
    assert new.returncode == 0, new.stderr

    noted = autograder(course, "extend", "ada", "--days", "2", "--why", 'a\rb "c" \x07 d')
    assert noted.returncode == 0, noted.stderr
    assert extensions.granted(find_assignment(course, ID))["ada"].why == 'a\rb "c" \x07 d'
    again = autograder(course, "extend", "ben", "--hours", "1")
    assert again.returncode == 0, again.stderr
    graded = autograder(course, "grade", str(subs))
    assert graded.returncode == 0, graded.stderr
    assert _rows(course)["ada"]["late_penalty"] == "0"


def _holding(course: Path, what: str) -> subprocess.Popen:
    """Another process holding the course's turn as ``what``, until its standard input closes."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom autograder.pipeline.course import turns\n"
         f"with turns.turn({str(course)!r}, {what!r}):\n"
         "    print('held', flush=True)\n    sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    return holder


def _canvas_template(path: Path) -> Path:
    path.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Toy (toy-1)\n"
        "Points Possible,,,,,5\nAda,1,,ada,S,\nBen,2,,ben,S,\nNoah,3,,noah,S,\n"
    )
    return path


def _moodle_worksheet(path: Path) -> Path:
    path.write_text(
        "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
        "Last modified (submission),Online text,Last modified (grade),Feedback comments\n"
        "Participant 1,Ada,ada@example.org,Submitted,,5,Yes,-,,-,\n"
    )
    return path


COMMANDS = {
    "grade": lambda subs, tmp: ["grade", str(subs), "--force"],
    "extend": lambda subs, tmp: ["extend", "ben", "--days", "1"],
    "remove": lambda subs, tmp: ["remove", "noah"],
    "export canvas --final": lambda subs, tmp: [
        "export", "canvas", "--template", str(_canvas_template(tmp / "canvas.csv")),
        "--out", str(tmp / "filled.csv"),
    ],
    "export moodle": lambda subs, tmp: [
        "export", "moodle", "--worksheet", str(_moodle_worksheet(tmp / "moodle.csv")),
        "--out", str(tmp / "moodle-filled.csv"),
    ],
}  # fmt: skip


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_that_changes_the_course_waits_its_turn(course, tmp_path, command):
    """With another command holding the course, does each say whose turn it is and wait,
    changing nothing, then run once the other is done?"""
    course, subs = course
    before = {
        p: p.stat().st_mtime_ns for p in (course / "gradebook.db", course / "grades" / "grades.csv")
    }
    holder = _holding(course, "remove somebody")
    waiting = started(course, *COMMANDS[command](subs, tmp_path))
    try:
        deadline = time.monotonic() + 60
        said = ""
        while "waiting for" not in said and time.monotonic() < deadline:
            if select.select([waiting.stderr], [], [], 1)[0]:
                said += os.read(waiting.stderr.fileno(), 4096).decode()
        assert "waiting for `remove somebody`" in said, said
        time.sleep(1)
        assert waiting.poll() is None  # still waiting, and nothing changed meanwhile
        assert {p: p.stat().st_mtime_ns for p in before} == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    out, err = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, err


def test_remove_during_a_grading_run_waits_and_stays_done(template, tmp_path):
    """``remove noah`` while ``grade`` runs: the run neither crashes nor undoes it."""
    course = shutil.copytree(template[0], tmp_path / "course")
    subs = shutil.copytree(template[1], tmp_path / "submissions")
    for student in ("ada", "ben", "noah"):  # each takes a moment to grade
        work = subs / student / ID / "toy.ipynb"
        slow = "import time\ntime.sleep(1.5)\ndef double(v):\n    return 2 * v"
        notebook.write(notebook.fill(notebook.read(work), {"double": slow}), work)
    grading = started(course, "grade", str(subs), "--jobs", "1")
    deadline = time.monotonic() + 60
    while "grade" not in turns.holder(course) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "grade" in turns.holder(course)
    removing = started(course, "remove", "noah")
    out, err = removing.communicate(timeout=300)
    assert removing.returncode == 0, err
    assert "waiting for `grade" in err
    _, graded = grading.communicate(timeout=300)
    assert grading.returncode == 0, graded
    assert set(_rows(course)) == {"ada", "ben"}
    with Gradebook(course_url(find_assignment(course, ID))) as gb:
        assert "noah" not in {s.id for s in gb.students}
    again = autograder(course, "grade", str(subs))
    assert again.returncode == 0 and set(_rows(course)) == {"ada", "ben"}, again.stderr


def _grade_by_hand(course: Path, scores: dict[str, float]) -> None:
    """Give written-answer grades as formgrader saves them (nbgrader's API)."""
    with Gradebook(course_url(find_assignment(course, ID))) as gb:
        for student, score in scores.items():
            grade = gb.find_grade("explain", "toy", ID, student)
            grade.manual_score, grade.needs_manual_grade = score, False
        gb.db.commit()


def test_status_is_the_one_place_to_look(course, tmp_path):
    """Does ``status`` say what awaits a TA, where an output lags the gradebook, who was
    removed, and exit 0 only when every place agrees and every grade is final?"""
    course, subs = course
    waiting = autograder(course, "status")
    assert waiting.returncode == 1, waiting.stderr
    lines = {line.split()[0]: line for line in waiting.stdout.splitlines() if line.strip()}
    assert "NOT FINAL: a written answer awaits a TA" in lines["ada"]
    assert "late penalty 3" in lines["ada"] and "handed in 2026-03-02 12:00" in lines["ada"]
    assert "3 grade(s) not final: ada, ben, noah" in waiting.stdout

    _grade_by_hand(course, {"ada": 1, "ben": 2, "noah": 0.5})
    assert autograder(course, "grade", str(subs)).returncode == 0
    template = _canvas_template(tmp_path / "canvas.csv")
    exported = autograder(course, "export", "canvas", "--template", str(template), "--final")
    assert exported.returncode == 0, exported.stderr
    agreed = autograder(course, "status")
    assert agreed.returncode == 0, agreed.stdout
    assert "3 student(s): every place agrees, every grade is final" in agreed.stdout

    _grade_by_hand(course, {"ben": 1})  # a TA changes a grade after the export
    assert autograder(course, "remove", "noah").returncode == 0
    lagging = autograder(course, "status")
    assert lagging.returncode == 1
    lines = {line.split()[0]: line for line in lagging.stdout.splitlines() if line.strip()}
    assert "DISAGREE: grades.csv says 5" in lines["ben"]
    assert "the canvas file says 5: export again" in lines["ben"]
    assert "removed" in lines["noah"] and "removed, but in the canvas file" in lines["noah"]
    one = autograder(course, "status", "ben")
    assert one.returncode == 1 and "ada" not in one.stdout and "ben" in one.stdout
    _one_line_error(autograder(course, "status", "benn"), "did you mean ben?")
