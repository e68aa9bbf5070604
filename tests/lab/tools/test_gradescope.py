"""Does autograder.zip grade a submission the way Gradescope runs it, results.json and all?

The zip is unpacked into a temporary folder laid out like Gradescope's
(``source/``, ``submission/``, ``results/``), and ``run_autograder`` is copied
to its root and run from there, as Gradescope does, with ``GRADESCOPE_ROOT``
pointing at it and this environment's Python in place of the one ``setup.sh``
installs.
"""

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.pipeline import results
from autograder.pipeline.course import notebook
from autograder.sandbox.clean_up import STUDENTS_FOLDER
from autograder.tools.gradescope import courses, results_json

from ...engine import processes
from .. import lab

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory):
    """autograder.zip built by the command and unpacked as Gradescope's ``source/``."""
    base = tmp_path_factory.mktemp("gradescope")
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "gradescope", "--out", str(base)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(base / "autograder.zip") as archive:
        names = archive.namelist()
        archive.extractall(base / "source")
        for info in archive.infolist():  # extractall drops the executable bits
            if info.external_attr >> 16 & 0o111:
                os.chmod(base / "source" / info.filename, 0o755)
    return base / "source", names


def _gradescope_root(source, tmp_path):
    """``tmp_path/autograder`` as Gradescope lays it out: source/, and run_autograder copied."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copytree(source, root / "source", symlinks=True)
    shutil.copy2(source / "run_autograder", root / "run_autograder")
    return root


def _run(source, tmp_path, files):
    """Run run_autograder on ``files`` ({name: bytes}); the results.json it wrote."""
    root = _gradescope_root(source, tmp_path)
    for name, data in files.items():
        (root / "submission" / name).write_bytes(data)
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    done = subprocess.run(
        [str(root / "run_autograder")], env=env, capture_output=True, text=True, timeout=300,
        cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text())


def test_zip_holds_what_gradescope_needs_and_no_secrets(unpacked):
    """Are setup.sh and run_autograder at the root, and no solutions or tests inside?"""
    _, names = unpacked
    assert "setup.sh" in names and "run_autograder" in names
    assert any(n.startswith("course/autograder/") for n in names)
    assert f"course/{lab.SOURCE}" in names and f"course/{lab.RELEASE}" in names
    assert not [
        n for n in names if n.startswith(("course/solutions", "course/tests", "course/samples"))
    ]


def test_results_follow_gradescope_format(unpacked, tmp_path, graded_samples, source_nb):
    """One test per graded cell, visible or after_published, scored as the batch grader scores?"""
    source, _ = unpacked
    dara = (lab.ROOT / lab.SAMPLE_CLASS / lab.submission_path("dara")).read_bytes()
    found = _run(source, tmp_path, {lab.NOTEBOOK: dara})
    rows = {r["student_id"]: r for r in results.read_csv(graded_samples["out"] / "grades.csv")}
    row = rows[graded_samples["ids"]["dara"]]
    graded = [c for c in source_nb.cells if notebook.is_graded(c)]
    tests = {t["name"].split(":")[0]: t for t in found["tests"]}
    for cell in graded:
        gid = notebook.grade_id(cell)
        test = tests[gid]
        if notebook.is_test(cell):
            hidden = "BEGIN HIDDEN TESTS" in cell.source
            assert test["visibility"] == ("after_published" if hidden else "visible")
            assert (
                test["score"] == float(row[gid])
                and test["max_score"] == cell.metadata.nbgrader.points
            )
        else:
            assert test["max_score"] == 0 and "by hand" in test["output"]
    assert (
        tests["test_concat_heads"]["score"] == 0
        and "axis 0" in tests["test_concat_heads"]["output"]
    )
    assert found["score"] == float(row["score"])
    assert "test_concat_heads_axis" not in found["output"]  # hidden: not named before publishing
    log = tests["Grader log (instructors only)"]
    assert log["visibility"] == "hidden" and found["stdout_visibility"] == "hidden"


def test_results_written_whatever_is_handed_in(unpacked, tmp_path):
    """An unreadable notebook, or none at all: still a results.json saying why."""
    source, _ = unpacked
    broken = _run(source, tmp_path / "broken", {lab.NOTEBOOK: b'{"cells": ['})
    assert broken["score"] == 0 and "unreadable" in broken["output"]
    nothing = _run(source, tmp_path / "nothing", {"notes.txt": b"hello"})
    assert nothing["score"] == 0 and lab.NOTEBOOK in nothing["output"]


def test_a_grader_that_cannot_start_still_writes_results(unpacked, tmp_path):
    """If Python itself is missing, does run_autograder still leave a results.json?"""
    source, _ = unpacked
    root = _gradescope_root(source, tmp_path)
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": "/nonexistent/python"}
    subprocess.run(
        [str(root / "run_autograder")], env=env, capture_output=True, timeout=60, cwd=root
    )
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and "could not finish" in results["output"]
    assert shutil.which("bash")


def test_a_forbidden_sandbox_is_told_to_instructors_only(source_nb):
    """When the grader ran without bubblewrap, does only the hidden log test say so?"""
    row = {"points": {}, "messages": {}, "status": "ok"}
    unprotected = ("bubblewrap did not start",)
    results = results_json.results_for(lab.ASSIGNMENT, row, "", None, unprotected)
    hidden = [t for t in results["tests"] if t["visibility"] == "hidden"]
    assert len(hidden) == 1 and "because: bubblewrap did not start" in hidden[0]["output"]
    shown = [t["output"] for t in results["tests"] if t["visibility"] != "hidden"]
    assert not any("bubblewrap" in text for text in shown + [results["output"]])


# ----------------------------------------------- attacks, in Gradescope's two kinds of container

# Student code that attacks the Gradescope run; ROOT is Gradescope's root folder
# (/autograder there), which a student knows.
ATTACKS = {
    "forge_and_kill": """
import json, os, signal
try:
    with open(ROOT + "/results/results.json", "w") as out:
        json.dump({"score": 41, "output": "forged", "tests": []}, out)
except OSError as why:
    print("cannot forge:", why)
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
""",
    "patch_helper": """
try:
    with open(ROOT + "/source/course/source/08-multi-head/lab_checks.py", "a") as out:
        out.write("\\ndef check_close(*a, **k):\\n    return None\\n")
except OSError as why:
    print("cannot patch:", why)
""",
    "read_source": """
import json
try:
    source = json.load(open(ROOT + "/source/course/source/08-multi-head/multi_head.ipynb"))
    for cell in source["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("solution") and cell["cell_type"] == "code":
            exec("".join(cell["source"]), globals())
except Exception as why:
    print("cannot read:", why)
""",
    "linger": """
import json, os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(4)
        try:
            with open(ROOT + "/results/results.json", "w") as out:
                json.dump({"score": 41, "output": "late forgery", "tests": []}, out)
        except OSError:
            pass
    os._exit(0)
""",
}
# Read before grades are published, through a visible test's output (LEAK raises it):
# Gradescope's metadata (earlier results, hidden tests included), and every input the
# tests hand attention_weights, the hidden tests' too.
LEAKS = """
try:
    metadata = open(ROOT + "/submission_metadata.json").read()
except OSError as why:
    metadata = f"cannot read: {why}"
seen = []
def attention_weights(x, W_q, W_k):
    seen.append(np.shape(x))
    T = len(x)
    return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
"""
LEAK = (
    "def batched_heads(x, W_q, W_k, W_v, n_heads):\n"
    "    raise ValueError(f'LEAKED {seen} {metadata}')"
)
SECRET = "PREVIOUS-RESULTS-WITH-HIDDEN-TESTS"  # what Gradescope's metadata holds


def test_visible_outputs_hold_nothing_hidden(container, unpacked, tmp_path):
    """Can a visible test's output show earlier results or a hidden test's inputs? It must not."""
    name, _ = container
    source, _ = unpacked

    def build(root):
        (root / "submission_metadata.json").write_text(
            json.dumps({"previous_submissions": [{"results": {"output": SECRET}}]})
        )
        release = notebook.read(lab.ROOT / lab.RELEASE)
        answers = {"attention_weights": f"ROOT = {str(root)!r}\n" + LEAKS, "batched_heads": LEAK}
        return nbformat.writes(notebook.fill(release, answers)).encode()

    _, results = _run_in(name, source, tmp_path, {lab.NOTEBOOK: build})
    shown = [t["output"] for t in results["tests"] if t["visibility"] == "visible"]
    leaked = next(text for text in shown if "LEAKED" in text)  # the leak ran, and showed
    assert SECRET not in json.dumps([shown, results["output"]]), leaked
    assert "(7, 5)" not in leaked, leaked  # the hidden test of attention_weights's input


def test_honest_work_scores_the_same_without_namespaces(
    stock_golden, release_nb, solution_nb, entries, tmp_path
):
    """The corpus's correct answers, graded where namespaces are refused: stock's scores?

    (The batch grader's too: tests/lab/pipeline/test_grader.py holds it to them.)
    """
    from autograder.tools import corpus

    correct = {n: e for n, e in entries.items() if not e.loses}
    submissions = tmp_path / "subs"
    for name, nb in corpus.build(correct, release_nb, solution_nb).items():
        path = submissions / lab.submission_path(name.replace("/", "--"))
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(nb))
    grade = [sys.executable, "-m", "autograder", "grade", str(submissions), "--out",
             str(tmp_path / "out"), "--dry-run"]  # fmt: skip
    wrapped = f"import os, sys; from autograder.sandbox import syscalls; syscalls.install(); os.execv(sys.executable, {grade!r})"
    done = processes.run_with_pid([sys.executable, "-c", wrapped], timeout=600)
    assert done.returncode == 0, done.stderr
    assert "namespaces" in done.stderr + done.stdout  # it really ran without them
    # the students' private folders, and the sandboxes' that held them, all removed (the run's
    # main process is the one started here: it execs the grader)
    for base in {Path("/tmp"), Path(tempfile.gettempdir())}:
        assert not list(base.glob(f"{STUDENTS_FOLDER}{done.pid}-*"))
    rows = {r["student_id"]: r for r in results.read_csv(tmp_path / "out" / "grades.csv")}
    for name in correct:
        row = rows[name.replace("/", "--")]
        assert (row["status"], float(row["score"])) == ("ok", stock_golden[name].score), name


def test_honest_work_scores_the_same_in_every_container(
    container, unpacked, tmp_path, stock_golden, release_nb, solution_nb, entries
):
    """On Gradescope, in each container, does a correct notebook get stock's score (and so the
    batch grader's)?"""
    from autograder.tools import corpus

    name, _ = container
    source, _ = unpacked
    built = corpus.build({"correct/loops": entries["correct/loops"]}, release_nb, solution_nb)
    data = nbformat.writes(built["correct/loops"]).encode()
    _, found = _run_in(name, source, tmp_path, {lab.NOTEBOOK: data})
    assert found["score"] == stock_golden["correct/loops"].score, found["output"]


NO_NAMESPACES = (
    "import os, sys; from autograder.sandbox import syscalls; syscalls.install(); "
    "os.execv('/bin/bash', ['bash', sys.argv[1]])"
)


def _attack_notebook(name, root):
    release = notebook.read(lab.ROOT / lab.RELEASE)
    code = f"ROOT = {str(root)!r}\n" + ATTACKS[name]
    return nbformat.writes(notebook.fill(release, {"two_worlds": code})).encode()


def _run_in(container, source, tmp_path, files, link=None, seen=None):
    """run_autograder as Gradescope runs it, in ``container`` ("docker": namespaces refused).

    seen: a set to add every pid of the run to (its grading processes among them).
    """
    root = _gradescope_root(source, tmp_path)
    for name, data in files.items():
        (root / "submission" / name).write_bytes(data(root) if callable(data) else data)
    if link:
        (root / "submission" / lab.NOTEBOOK).symlink_to(root / link)
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    command = [str(root / "run_autograder")]
    if container == "docker":
        command = [sys.executable, "-c", NO_NAMESPACES, str(root / "run_autograder")]
    done, pids = processes.run_watched(command, timeout=300, env=env, cwd=root)
    if seen is not None:
        seen |= pids
    assert done.returncode == 0, done.stderr
    return root, json.loads((root / "results" / "results.json").read_text())


@pytest.fixture(scope="module", params=["plain", "docker"])
def container(request, unpacked, tmp_path_factory):
    """Each container with the blank notebook's score in it: ``(name, blank's results)``."""
    source, _ = unpacked
    blank = (lab.ROOT / lab.RELEASE).read_bytes()
    _, results = _run_in(
        request.param, source, tmp_path_factory.mktemp("blank"), {lab.NOTEBOOK: blank}
    )
    return request.param, results


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_scores_no_more_than_a_blank(container, unpacked, tmp_path, attack):
    """Forging, killing, patching, reading the source, lingering: no point more than blank?"""
    name, blank = container
    source, _ = unpacked
    seen: set[int] = set()
    root, results = _run_in(
        name, source, tmp_path, {lab.NOTEBOOK: lambda r: _attack_notebook(attack, r)}, seen=seen
    )
    assert results["score"] <= blank["score"] and "forged" not in results["output"], results
    if attack == "linger":  # its forgery would land four seconds in: it is dead by then
        time.sleep(5)
        again = json.loads((root / "results" / "results.json").read_text())
        assert again == results
    if name == "docker":
        log = results["tests"][-1]["output"]
        assert "because: " in log and "runs as nobody" in log  # the real reason, to instructors
    # none of its students (of the graded run and of the visible one, both seen running)
    assert processes.students_of(seen) == []


def test_a_link_to_the_source_is_refused(container, unpacked, tmp_path):
    """A submission that is a link to the course's source notebook: refused, never graded?"""
    name, blank = container
    source, _ = unpacked
    link = f"source/course/{lab.SOURCE}"
    _, results = _run_in(name, source, tmp_path, {}, link=link)
    assert results["score"] == 0 and "link" in results["output"]


def test_the_bundle_holds_no_solution(unpacked, source_nb, release_nb, solution_nb):
    """Is the bundle's source the tests and the stubs, with no line of a solution (its
    gradebooks too)?"""
    source, _ = unpacked
    bundled = notebook.read(source / "course" / lab.SOURCE)
    stubs = notebook.answers(release_nb)
    for answer, text in notebook.answers(bundled).items():
        assert text.startswith(stubs[answer]), answer
        extra = text[len(stubs[answer]) :].splitlines()
        assert all(line.endswith(" = None  # the answer binds it") for line in extra if line)
    assert [c.source for c in bundled.cells if notebook.is_test(c)] == [
        c.source for c in source_nb.cells if notebook.is_test(c)
    ]
    assert "BEGIN SOLUTION" not in (source / "course" / lab.SOURCE).read_text()
    in_bundle = {line.strip() for cell in bundled.cells for line in cell.source.splitlines()}
    solved = {  # a solution's lines that nothing in the bundle's source holds (a test may)
        line.strip()
        for text in notebook.answers(solution_nb).values()
        for line in text.splitlines()
        if len(line.strip()) > 12 and line.strip() not in in_bundle
    }
    assert len(solved) > 10
    for gradebook in ("gradebook.db", f"{courses.VISIBLE}/gradebook.db"):
        recorded = _every_text(source / "course" / gradebook)
        assert "attention_weights" in recorded  # it holds the notebook's cells
        assert not [line for line in solved if line in recorded], gradebook


def _every_text(database):
    """Every value of every table of a SQLite file, as one string."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(
            str(value) for table in tables for row in db.execute(f'SELECT * FROM "{table}"')
            for value in row
        )  # fmt: skip


def test_the_zip_comes_with_its_gradebooks_recorded(unpacked, tmp_path, monkeypatch):
    """Does a run copy the zip's two gradebooks, recording nothing, unless its sources changed?"""
    from autograder.pipeline import recording
    from autograder.pipeline.course import internals
    from autograder.pipeline.course.assignment import find_assignment

    source, _ = unpacked
    course = shutil.copytree(source / "course", tmp_path / "course")
    chosen = find_assignment(course, lab.ASSIGNMENT.id)

    def record(*args):
        raise AssertionError("recorded again")

    with monkeypatch.context() as patched:
        patched.setattr(internals, "record_assignment", record)
        visible = courses.visible_course(chosen, tmp_path / "scratch")
        assert visible.root == course / courses.VISIBLE
        for number, which in enumerate((chosen, visible)):
            (tmp_path / f"run{number}").mkdir()
            recording.dry_run_gradebook(which, tmp_path / f"run{number}")
    # an instructor edits the unpacked source: the visible tests are made afresh from it
    nb = notebook.read(chosen.source(lab.NOTEBOOK))
    nb.cells[0].source += "\n"
    notebook.write(nb, chosen.source(lab.NOTEBOOK))
    remade = courses.visible_course(chosen, tmp_path / "scratch")
    assert remade.root == tmp_path / "scratch" / courses.VISIBLE


# Run in a process of its own: grading forks workers, and pytest's worker runs threads.
WITH_AND_WITHOUT_PAGES = """
import json, sys
from pathlib import Path
from autograder import startup
startup.start()
from autograder.pipeline import grade
from autograder.pipeline.course.assignment import find_assignment
from autograder.pipeline.results import ClassFolder
from autograder.pipeline.settings import GradingLimits
course, subs, out = (Path(arg) for arg in sys.argv[1:])
chosen = find_assignment(course)
limits = GradingLimits.for_course(chosen)
found = {}
for pages in (True, False):
    folder = ClassFolder(out / f"pages-{pages}")
    request = grade.Request(subs, chosen, folder, 1, limits, dry_run=True, pages=pages)
    found[pages] = grade.run(request).outcome("ada").as_dict()
try:
    grade.Request(subs, chosen, ClassFolder(out / "course"), 1, limits, pages=False)
except ValueError as error:
    found["refused"] = str(error)
print(json.dumps(found))
"""


def test_a_run_without_pages_grades_the_same(course_template, tmp_path):
    """Gradescope's runs render no page: is the outcome the paged run's, and no page made?"""
    course = lab.copy_course(course_template, tmp_path / "course")
    path = tmp_path / "subs" / lab.submission_path("ada")
    path.parent.mkdir(parents=True)
    shutil.copyfile(lab.ROOT / lab.SAMPLE_CLASS / lab.submission_path("ada"), path)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", WITH_AND_WITHOUT_PAGES, str(course), str(tmp_path / "subs"),
         str(out)],
        capture_output=True, text=True, timeout=300, cwd=lab.ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["true"] == found["false"] and found["true"]["status"] == "ok"
    assert sum(p or 0 for p in found["true"]["points"].values()) > 0
    assert (out / "pages-True" / "feedback" / "ada.html").is_file()
    assert (out / "pages-True" / "report.html").is_file()
    assert list((out / "pages-False").rglob("*.html")) == []
    assert (out / "pages-False" / "grades.csv").is_file()
    assert "writes every page" in found["refused"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can start a process as another user")
def test_the_runner_kills_nothing_it_did_not_start(unpacked, tmp_path):
    """Does run_autograder, as root, leave alone a process of nobody's that another run owns?"""
    source, _ = unpacked
    nobody = 65534
    other = subprocess.Popen(
        ["sleep", "120"], user=nobody, group=nobody, stdin=subprocess.DEVNULL
    )  # another grader's student, or a service of the host
    try:
        solved = (lab.ROOT / lab.SOLUTION).read_bytes()
        _, results = _run_in("plain", source, tmp_path, {lab.NOTEBOOK: solved})
        assert results["score"] > 0
        assert other.poll() is None, "run_autograder killed a process it did not start"
    finally:
        other.kill()
        other.wait()
