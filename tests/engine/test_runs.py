"""Does a TA's run leave the CSV, the pages, the rerun state and the gradebook agreeing?

Each test grades a small class in a fresh copy of the course, with the real
command: trial runs with other limits, dry runs, and two runs at once.
"""

import csv
import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.pipeline import results
from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import tool_environment
from autograder.tools.nbgrader_cli import run_nbgrader

from . import toy
from .command_line import run_command_line

ID, NOTEBOOK = "toy-1", "toy.ipynb"  #: the toy course's assignment (tests/engine/conftest.py)


def submission(student: str) -> Path:
    """Where a student's notebook goes below a submissions folder."""
    return Path(student) / ID / NOTEBOOK


def grade_class(submissions: Path, course_dir: Path, out: Path, *extra: str):
    """``python -m autograder grade`` on one worker, as a TA types it."""
    argv = ["grade", str(submissions), "--course", str(course_dir), "--out", str(out),
            "--jobs", "1", *extra]  # fmt: skip
    return run_command_line(argv, timeout=900)


pytestmark = pytest.mark.slow


@pytest.fixture
def small_class(lesson_course, tmp_path, lesson_solved):
    """A new course and two students: one solved, one with a wrong count."""
    course_dir = lesson_course
    subs = tmp_path / "subs"
    solved = lesson_solved
    wrong = notebook.fill(solved, {"count_words": "def count_words(text):\n    return 0"})
    for student, nb in (("ada", solved), ("ben", wrong)):
        path = subs / submission(student)
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(nb))
    return course_dir, subs, tmp_path


def gradebook_scores(course_dir):
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        return {s.student_id: s.score for s in gb.assignment_submissions(ID)}


def csv_scores(out):
    return {r["student_id"]: float(r["score"]) for r in results.read_csv(out / "grades.csv")}


def test_trial_run_then_default_run_agree(small_class):
    """After a trial with other limits elsewhere, does the default run regrade and agree?"""
    course_dir, subs, base = small_class
    first = grade_class(subs, course_dir, base / "grades")
    assert first.returncode == 0, first.stderr
    trial = grade_class(subs, course_dir, base / "scratch", "--wall", "1")
    assert trial.returncode == 0, trial.stderr
    again = grade_class(subs, course_dir, base / "grades")
    assert "2 to grade" in again.stderr  # the gradebook holds the trial's grading now
    assert gradebook_scores(course_dir) == csv_scores(base / "grades")
    same = grade_class(subs, course_dir, base / "grades")
    assert "0 to grade, 2 unchanged" in same.stderr
    assert gradebook_scores(course_dir) == csv_scores(base / "grades")


# As root, a file in /tmp owned by the run's own uid, as a student without a
# filesystem sandbox would leave it, then the command (exec keeps the pid: the uid).
PLANT_THEN_GRADE = (
    "import os, sys; from autograder.sandbox.clean_up import run_uid\n"
    "if os.geteuid() == 0:\n"
    "    open(sys.argv[1], 'w').write('left'); os.chown(sys.argv[1], run_uid(os.getpid()), -1)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'autograder', *sys.argv[2:]])"
)


def test_dry_run_leaves_the_course_alone(small_class):
    """Does --dry-run grade into its folder only, the course untouched, students' leftovers gone?"""
    course_dir, subs, base = small_class
    before = toy.tree_hash(course_dir)
    left = Path("/tmp") / f"left-by-a-student-{base.name}"
    done = subprocess.run(
        [sys.executable, "-c", PLANT_THEN_GRADE, str(left), "grade", str(subs), "--course",
         str(course_dir), "--out", str(base / "dry"), "--jobs", "2", "--dry-run"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    if os.geteuid() == 0:  # a dry run too removes what the run's students left, and says so
        assert not left.exists() and "1 file(s) or folder(s)" in done.stderr, done.stderr
    assert toy.tree_hash(course_dir, skip={".grading.lock"}) == before  # the gradebook too
    assert not (course_dir / "autograded").exists()
    assert (base / "dry" / "autograded" / submission("ada")).exists()
    assert (base / "dry" / "feedback" / "ben.html").exists()
    scores = csv_scores(base / "dry")
    assert scores["ada"] > scores["ben"]


def test_the_output_folder_holds_one_class(small_class):
    """Graded into a folder that held another class, are the other class's pages gone?"""
    course_dir, subs, base = small_class
    assert grade_class(subs, course_dir, base / "out", "--dry-run").returncode == 0
    other = base / "other"
    (other / "cy").mkdir(parents=True)
    shutil.copytree(subs / "ada" / ID, other / "cy" / ID)
    work = other / "cy" / ID  # cy hands in Jupyter's duplicate, renamed
    (work / NOTEBOOK).rename(work / "toy-Copy1.ipynb")
    assert grade_class(other, course_dir, base / "out", "--dry-run").returncode == 0
    assert sorted(p.name for p in (base / "out" / "feedback").iterdir()) == ["cy.html"]
    assert sorted(p.name for p in (base / "out" / "autograded").iterdir()) == ["cy"]
    assert csv_scores(base / "out") == {"cy": toy.LESSON_POINTS}  # graded on the renamed notebook
    page = html.unescape((base / "out" / "feedback" / "cy.html").read_text())
    note = "Note: Graded toy-Copy1.ipynb as toy.ipynb: keep the notebook's name"
    assert note in page


RACES = 2  # how many times the two runs race; raise it to hunt a flaky lock


def test_two_runs_at_once_take_turns(lesson_template, tmp_path, lesson_solved):
    """Started at the same moment on a new course, do two runs never crash or write wrongly?

    A course never graded: both runs race to build its gradebook.
    """
    for attempt in range(RACES):
        course_dir = shutil.copytree(lesson_template, tmp_path / f"c{attempt}")
        (course_dir / "gradebook.db").unlink()
        base = tmp_path / f"r{attempt}"
        subs = base / "subs"
        solved = lesson_solved
        path = subs / submission("ada")
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(solved))
        command = [sys.executable, "-m", "autograder", "grade", str(subs), "--course",
                   str(course_dir), "--jobs", "1", "--out"]  # fmt: skip
        runs = [
            subprocess.Popen([*command, str(base / name)], stderr=subprocess.PIPE, text=True)
            for name in ("one", "two")
        ]
        errors = [run.communicate(timeout=600)[1] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], errors
        assert not any("Traceback" in e for e in errors)
        for name in ("one", "two"):
            assert csv_scores(base / name)["ada"] == toy.LESSON_POINTS
        assert gradebook_scores(course_dir)["ada"] == toy.LESSON_POINTS


def test_a_tas_grade_reaches_the_csv_and_the_page(small_class):
    """After a TA grades the written answer, does a rerun show it (and the rest still wait)?"""
    course_dir, subs, base = small_class
    out = base / "grades"
    assert grade_class(subs, course_dir, out).returncode == 0
    page = (out / "feedback" / "ada.html").read_text()
    assert '<span class="state-ta">awaiting a TA</span>' in page  # in the summary
    assert "awaiting a TA (2.0 points)" in html.unescape(page)  # on the answer's cell
    assert not re.search(r"why_double.{0,300}0(\.0)? / 2", page, re.DOTALL)
    assert (
        csv_scores(out)["ada"] == toy.LESSON_POINTS
        and results.read_csv(out / "grades.csv")[0]["why_double"] == ""
    )
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:  # as formgrader does
        grade = gb.find_grade("why_double", "toy", ID, "ada")
        grade.manual_score = 1.5
        comment = gb.find_comment("why_double", "toy", ID, "ada")
        comment.manual_comment = "Good, but say why two doublings are four."
        gb.db.commit()
    again = grade_class(subs, course_dir, out)
    assert "0 to grade, 2 unchanged" in again.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert (
        rows["ada"]["why_double"] == "1.5"
        and float(rows["ada"]["score"]) == toy.LESSON_POINTS + 1.5
    )
    page = (out / "feedback" / "ada.html").read_text()
    assert "two doublings are four" in page and "awaiting a TA" not in page
    assert "graded by a TA" in page and re.search(r"1\.5 / 2", page)
    assert "awaiting a TA" in (out / "feedback" / "ben.html").read_text()
    assert gradebook_scores(course_dir)["ada"] == toy.LESSON_POINTS + 1.5


def _nbgrader_export(course_dir):
    """``{student: (raw_score, late_submission_penalty, score)}`` from stock ``nbgrader export``."""
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "export", "--to", "export.csv"],
        cwd=course_dir, capture_output=True, text=True, env=tool_environment(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    keys = ("raw_score", "late_submission_penalty", "score")
    rows = results.read_csv(course_dir / "export.csv")
    return {r["student_id"]: tuple(float(r[k]) for k in keys) for r in rows}


def _canvas_template(base):
    """A Canvas gradebook export of the small class, as Canvas writes it."""
    canvas = base / "canvas-template.csv"
    with canvas.open("w", newline="") as handle:
        csv.writer(handle).writerows([
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 8 (1)"],
            ["    Points Possible", "", "", "", "", ""],
            ["Lovelace, Ada", "11", "", "ada", "A", ""],
            ["Bo, Ben", "12", "", "ben", "A", ""],
        ])  # fmt: skip
    return canvas


def _to_lms(course_dir, base):
    """``{student: total}`` in both a Canvas and a Moodle file, checked to agree."""
    canvas, worksheet = _canvas_template(base), base / "worksheet.csv"
    with worksheet.open("w", newline="") as handle:
        csv.writer(handle).writerows([
            ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade"],
            ["Participant 1", "Ada Lovelace", "ada@example.org", "", ""],
            ["Participant 2", "Ben Bo", "ben@example.org", "", ""],
        ])  # fmt: skip
    totals = []
    for args in (
        ["canvas", "--template", str(canvas)],
        ["moodle", "--worksheet", str(worksheet), "--match-names"],
    ):
        out = base / f"{args[0]}.csv"
        done = run_command_line(  # in base, where grades/ is, as a TA types it
            ["export", *args, "--course", str(course_dir), "--out", str(out)], 600, cwd=base
        )
        assert done.returncode == 0, done.stderr
        rows = results.read_csv(out)
        column = "Lab 8 (1)" if args[0] == "canvas" else "Grade"
        key = "SIS Login ID" if args[0] == "canvas" else "Email address"
        totals.append({r[key].split("@")[0]: float(r[column]) for r in rows if r[key]})
    assert totals[0] == totals[1]
    return totals[0]


def test_what_a_ta_does_reaches_every_output(small_class):
    """A TA's override, comments and a due date set after grading: CSV, page, terminal, export?

    Each reaches every output on the next run, without --force, and every total
    is the one ``nbgrader export`` computes from the same gradebook.
    """
    course_dir, subs, base = small_class
    with open(course_dir / "nbgrader_config.py", "a") as handle:
        handle.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    for student, day in (("ada", "2026-11-02"), ("ben", "2026-11-20")):
        stamp = subs / student / ID / "timestamp.txt"
        stamp.write_text(f"{day} 12:00:00.000000")
    out = base / "grades"
    first = grade_class(subs, course_dir, out)
    assert first.returncode == 0, first.stderr
    before = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert before["ben"]["test_count_words"] == "0" and before["ben"]["late_penalty"] == "0"
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:  # as formgrader does
        override = gb.find_grade("test_count_words", "toy", ID, "ben")
        full = float(override.max_score)
        override.manual_score = full
        remark = gb.find_comment("double", "toy", ID, "ada")
        remark.manual_comment = "Neat: one multiplication."
        gb.update_or_create_assignment(ID, duedate="2026-11-10 00:00:00")
        gb.db.commit()
    again = grade_class(subs, course_dir, out)
    assert again.returncode == 0 and "0 to grade, 2 unchanged" in again.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    # ben handed in late: penalty "zero" takes everything, raw_score keeps what he earned
    ben, ada = rows["ben"], rows["ada"]
    assert float(ben["test_count_words"]) == full
    assert float(ben["raw_score"]) == float(before["ben"]["score"]) + full
    assert float(ben["late_penalty"]) == float(ben["raw_score"]) and float(ben["score"]) == 0
    assert (
        float(ada["late_penalty"]) == 0
        and float(ada["score"]) == float(ada["raw_score"]) == toy.LESSON_POINTS
    )
    exported = _nbgrader_export(course_dir)
    for student, row in rows.items():
        ours = tuple(float(row[k]) for k in ("raw_score", "late_penalty", "score"))
        assert ours == exported[student], student
    assert _to_lms(course_dir, base) == {s: exported[s][2] for s in exported}
    ben_page = html.unescape((out / "feedback" / "ben.html").read_text())
    assert "Score: <b>0.0 / 7.0</b>" in ben_page
    assert f"late submission penalty of {float(ben['raw_score'])}" in ben_page
    assert "late: " in again.stdout and "less a penalty of" in again.stdout
    ada_page = html.unescape((out / "feedback" / "ada.html").read_text())
    summary = ada_page.split('id="summary"', 1)[1].split("</section>", 1)[0]
    assert "Neat: one multiplication." in summary  # in the summary...
    assert ada_page.count("Neat: one multiplication.") == 2  # ...and on its cell


def test_feedback_goes_back_through_nbgrader(small_class):
    """Graded from what ``nbgrader collect`` leaves, does feedback reach nbgrader's exchange?

    ``submitted/<student>/<assignment>/`` holds the notebook, ``timestamp.txt``
    and ``submission_secret.txt``, as collect leaves them. After grading that
    folder, ``release_feedback`` releases the course's own pages (it reads both
    files beside them); stock ``generate_feedback`` still works when asked for.
    """
    course_dir, subs, base = small_class
    with open(course_dir / "nbgrader_config.py", "a") as handle:  # pages show no hidden test
        handle.write(toy.HIDE_HIDDEN_TESTS)
    for student in ("ada", "ben"):
        folder = course_dir / "submitted" / student / ID
        folder.mkdir(parents=True)
        shutil.copy(subs / submission(student), folder / NOTEBOOK)
        (folder / "timestamp.txt").write_text("2026-11-30 10:00:00.000000 UTC")
        (folder / "submission_secret.txt").write_text(f"secret-of-{student}")
    done = grade_class(course_dir / "submitted", course_dir, base / "grades")
    assert done.returncode == 0, done.stderr
    for student in ("ada", "ben"):
        graded = course_dir / "autograded" / student / ID
        handed_in = course_dir / "submitted" / student / ID
        stamp = (graded / "timestamp.txt").read_text()
        assert stamp == (handed_in / "timestamp.txt").read_text()
        assert stamp.startswith("2026-11-30 10:00:00")
        assert (graded / "submission_secret.txt").read_text() == f"secret-of-{student}"
    exchange = base / "exchange"
    exchange.mkdir()

    def nbgrader(command: str, *extra: str) -> list[str]:
        """Run ``nbgrader COMMAND`` on the course; the text of each page in the exchange."""
        ran = subprocess.run(
            [sys.executable, "-m", "nbgrader", command, ID,
             f"--Exchange.root={exchange}", *extra],
            cwd=course_dir, capture_output=True, text=True, env=tool_environment(), timeout=300,
        )  # fmt: skip
        assert ran.returncode == 0, f"nbgrader {command}: {ran.stderr[-2000:]}"
        return [page.read_text() for page in sorted(exchange.rglob("*.html"))]

    # What students fetch is the course's own page, with its per-answer summary...
    released = nbgrader("release_feedback")
    assert len(released) == 2  # one page per student, named by nbgrader's hash
    assert all('class="grade-summary' in text for text in released)
    assert not any("BEGIN HIDDEN TESTS" in text or "BEGIN SOLUTION" in text for text in released)
    # ...stock's only when the instructor asks for it, and the next grade run puts it back.
    nbgrader("generate_feedback")  # finds the course's pages there: leaves them be
    assert all('class="grade-summary' in text for text in nbgrader("release_feedback"))
    nbgrader("generate_feedback", "--force")
    assert not any('class="grade-summary' in text for text in nbgrader("release_feedback"))
    again = grade_class(course_dir / "submitted", course_dir, base / "grades")
    assert again.returncode == 0, again.stderr
    assert all('class="grade-summary' in text for text in nbgrader("release_feedback"))


def test_a_rubric_change_regrades_and_every_output_agrees(small_class):
    """One hidden test worth a point more, the release regenerated: new totals everywhere?

    What grading depends on (the source's tests and points, the helper files,
    the course config) is part of "unchanged": every student is graded again
    without --force, and notebooks handed in from the old release are not
    "tampered" for carrying its points.
    """
    course_dir, subs, base = small_class
    out = base / "grades"
    first = grade_class(subs, course_dir, out)
    assert first.returncode == 0, first.stderr
    source = course_dir / "source" / ID / NOTEBOOK
    nb = notebook.read(source)
    changed = next(c for c in nb.cells if notebook.grade_id(c) == "test_double_negative")
    changed.metadata.nbgrader["points"] += 1
    notebook.write(nb, source)
    run_nbgrader(course_dir, "generate_assignment", ID, "--force")
    again = grade_class(subs, course_dir, out)
    assert again.returncode == 0 and "2 to grade, 0 unchanged" in again.stderr, again.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    total = toy.LESSON_POINTS + 2 + 1  # the written answer's 2, and the new point
    for row in rows.values():
        assert (row["status"], float(row["max_score"])) == ("ok", total), row
        assert float(row["test_double_negative"]) == 3, row
    exported = _nbgrader_export(course_dir)
    for student, row in rows.items():
        ours = tuple(float(row[k]) for k in ("raw_score", "late_penalty", "score"))
        assert ours == exported[student], student
        page = html.unescape((out / "feedback" / f"{student}.html").read_text())
        assert f"/ {total:.1f}</b>" in page, student
    assert f"/ {total:g}" in again.stdout
    assert _to_lms(course_dir, base) == {s: exported[s][2] for s in exported}


def test_one_student_regraded_leaves_the_class_as_it_was(small_class):
    """grade --student: only that student graded (from a folder of theirs alone, or --force)?"""
    course_dir, subs, base = small_class
    out = base / "grades"
    first = grade_class(subs, course_dir, out)
    assert first.returncode == 0, first.stderr
    before = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    ada_page = (out / "feedback" / "ada.html").read_bytes()
    # ben's corrected notebook, mailed in after an accepted appeal: a folder of his alone
    mailed = base / "mailed"
    (mailed / "ben" / ID).mkdir(parents=True)
    shutil.copy(subs / submission("ada"), mailed / submission("ben"))
    again = grade_class(mailed, course_dir, out, "--student", "ben")
    assert again.returncode == 0 and "1 submission(s): 1 to grade" in again.stderr, again.stderr
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert rows["ada"] == before["ada"] and (out / "feedback" / "ada.html").read_bytes() == ada_page
    assert (
        float(rows["ben"]["score"]) == float(before["ada"]["score"]) > float(before["ben"]["score"])
    )
    assert gradebook_scores(course_dir) == {s: float(r["score"]) for s, r in rows.items()}
    forced = grade_class(subs, course_dir, out, "--student", "ada", "--force")
    assert forced.returncode == 0 and "1 submission(s): 1 to grade" in forced.stderr
    assert set(csv_scores(out)) == {"ada", "ben"}
    unknown = grade_class(subs, course_dir, out, "--student", "zed")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "--student zed: no such student" in unknown.stderr.strip().splitlines()[-1]


def _export_canvas(course_dir, base, *extra):
    """``export canvas`` of the small class as a TA types it: (the process, the file)."""
    template = _canvas_template(base)
    out = base / "canvas.csv"
    out.unlink(missing_ok=True)
    done = run_command_line(  # in base, where grades/ is, as a TA types it
        ["export", "canvas", "--template", str(template), "--course", str(course_dir),
         "--out", str(out), *extra],
        600, cwd=base,
    )  # fmt: skip
    return done, out


def test_exports_name_grades_not_final_and_final_waits_for_them(small_class):
    """A written answer awaiting a TA, a row not ok: named by the export; --final writes nothing?"""
    course_dir, subs, base = small_class
    crashed = notebook.read(subs / submission("ben"))
    crashed = notebook.fill(crashed, {"count_words": "import os\nos._exit(3)"})
    notebook.write(crashed, subs / submission("ben"))
    graded = grade_class(subs, course_dir, base / "grades")
    assert graded.returncode == 0, graded.stderr
    done, out = _export_canvas(course_dir, base)
    assert done.returncode == 0 and out.is_file(), done.stderr
    said = done.stdout + done.stderr
    assert "2 grade(s) not final yet" in said, said
    assert "ada (a written answer awaits a TA)" in said
    assert "ben (graded kernel_died; a written answer awaits a TA)" in said
    refused, out = _export_canvas(course_dir, base, "--final")
    assert refused.returncode == 2 and not out.exists(), refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr and "--final: 2 grade(s)" in refused.stderr
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:  # a TA grades them
        for student in ("ada", "ben"):
            grade = gb.find_grade("why_double", "toy", ID, student)
            grade.manual_score, grade.needs_manual_grade = 2, False  # as formgrader saves it
        gb.db.commit()
    still, out = _export_canvas(course_dir, base, "--final")
    assert still.returncode == 2 and "ben (graded kernel_died)" in still.stderr
    assert "ada" not in still.stderr.split("nothing written:")[1]
