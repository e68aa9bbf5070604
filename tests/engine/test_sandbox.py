"""Does nothing a student does in the sandbox outlive that student, or reach past it?

The sandbox cases of tests/engine/hostile.py are graded with one worker, in order,
so the honest student after the planter runs in the very process tree the planter
left; the other tests start a sandbox directly, on no course, and look at the
student process it spawns from outside.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import autograder
from autograder.pipeline import results
from autograder.sandbox import Limits, Sandbox, wire
from autograder.sandbox.isolation import LAB
from autograder.sandbox.launcher import ZYGOTE

from . import hostile
from .command_line import run_command_line

pytestmark = pytest.mark.slow

#: the folder the engine is imported from (a checkout, or site-packages)
ENGINE_HOME = Path(autograder.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox_class(tmp_path_factory, arrays_template, arrays_release, arrays_solution):
    """The sandbox cases, graded in order by one worker, with a 512 MiB memory limit."""
    import shutil

    base = tmp_path_factory.mktemp("sandbox")
    course = shutil.copytree(arrays_template, base / "course")
    context = {"course": course, "out": base / "out", "submissions": base / "s", "port": 9}
    hostile.build_class(base / "s", arrays_release, arrays_solution, context, hostile.SANDBOX)
    argv = ["grade", str(base / "s"), "--course", str(course), "--out", str(base / "out"),
            "--memory", "512", "--jobs", "1"]  # fmt: skip
    done = run_command_line(argv, timeout=900)
    rows = {row["student_id"]: row for row in results.read_csv(base / "out" / "grades.csv")}
    return {"done": done, "rows": rows, "course": course}


def _graded(sandbox_class, student_id):
    path = sandbox_class["course"] / "autograded" / hostile.submission_path(student_id)
    return nbformat.read(path, 4)


def printed(sandbox_class, student_id, label):
    """What a student's cell printed after ``label``, read back as a Python value."""
    for cell in _graded(sandbox_class, student_id).cells:
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            if output.get("output_type") == "stream" and label in text:
                return ast.literal_eval(text.split(label, 1)[1].strip().splitlines()[0])
    raise AssertionError(f"{student_id} printed no {label!r}")


def pictures(sandbox_class, student_id):
    """The PNGs (base64) a student's graded notebook shows, in order."""
    return [
        output["data"]["image/png"]
        for cell in _graded(sandbox_class, student_id).cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]


def test_the_next_student_finds_nothing(sandbox_class):
    """Does the student graded after the planter find no file and run no planted module?"""
    rows = sandbox_class["rows"]
    assert sandbox_class["done"].returncode == 0, sandbox_class["done"].stderr[-2000:]
    assert printed(sandbox_class, "sandbox_2_after_plant", "found:") == []
    after, honest = rows["sandbox_2_after_plant"], rows["honest"]
    assert (after["status"], after["score"]) == ("ok", honest["score"])


def test_student_code_has_no_capabilities(sandbox_class):
    """Does student code run with no capability, no_new_privs, a seccomp filter, not as root?"""
    status = printed(sandbox_class, "sandbox_3_capabilities", "status:")
    assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == "0" * 16
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"
    assert "0" not in status["Uid"].split()


def test_writes_are_bounded_by_the_scratch(sandbox_class):
    """Can a student write no more than its scratch size, whatever the memory limit says?"""
    written = printed(sandbox_class, "sandbox_4_disk_flood", "written:")
    assert written <= Limits.scratch_mb * 2**20


def test_figures_drawn_once_are_the_figures_a_student_draws(sandbox_class):
    """Are the course's figures copied from the trusted run, byte for byte, whatever came before?

    "honest" is graded first, before the worker learns the figures, and draws
    it; the poisoner, after, replaced every entry and matplotlib's drawing in
    its own process; the student after it copies the figure, unchanged.
    """
    assert printed(sandbox_class, "sandbox_5_figure_poison", "known:") == 1
    assert printed(sandbox_class, "sandbox_6_after_figures", "reused:") == 1
    drawn = pictures(sandbox_class, "honest")
    assert len(drawn) == 1 and pictures(sandbox_class, "sandbox_6_after_figures") == drawn
    rows = sandbox_class["rows"]
    assert rows["sandbox_6_after_figures"]["score"] == rows["honest"]["score"]


def test_no_student_process_holds_the_solutions(sandbox_class):
    """Can a student's process find no line of the source's solutions anywhere it can read?

    Graded after the worker learned the course's cells and figures, a blank
    notebook reads its whole memory, every process's command line and
    environment it can see and every file it can reach. It finds the release's
    own line (the search works) and no solution line: not as text, nor in a cell
    the zygote compiled, a figure it learned or a name the grader watches.
    """
    found = printed(sandbox_class, "sandbox_7_solution_hunt", "found:")
    scanned = printed(sandbox_class, "sandbox_7_solution_hunt", "scanned:")
    assert ("control", "memory") in found
    assert [hit for hit in found if hit[0] != "control"] == []
    assert scanned["memory"] > 20 * 2**20 and scanned["files"] > 0 and scanned["processes"] > 0
    row = sandbox_class["rows"]["sandbox_7_solution_hunt"]
    assert (row["status"], float(row["score"])) == ("ok", 0.0)


@pytest.fixture
def student():
    """A sandboxed student process, started directly; closed afterwards."""
    sandbox = Sandbox()
    process = sandbox.spawn({"checks.py": b"# helper\n"}, Limits())
    yield process
    process.close()
    sandbox.close()


def _run(student, source):
    reply = student.request({"op": "run", "source": source}, 30)
    return "".join(o.get("text", "") for o in reply["outputs"] if o["output_type"] == "stream")


def test_student_code_knows_it_is_autograded_as_under_stock(student):
    """Is NBGRADER_EXECUTION "autograde", as stock nbgrader's autograde sets it for the kernel?"""
    said = _run(student, "import os\nprint(os.environ.get('NBGRADER_EXECUTION'))")
    assert said.strip() == "autograde"


# A sandbox started in a process of its own, as a grading run starts one (its own
# matplotlib cache folder in MPLCONFIGDIR); with "refuse", where namespaces are
# refused, so bubblewrap cannot start. It prints what a student sees.
FONTS_SEEN = """
import sys
from autograder.sandbox import Limits, Sandbox, syscalls
if sys.argv[1] == "refuse":
    syscalls.install()
sandbox = Sandbox(warm_up="import matplotlib.pyplot")
student = sandbox.spawn({}, Limits())
reply = student.request({"op": "run", "source": sys.argv[2]}, 30)
student.close()
sandbox.close()
print(bool(sandbox.unprotected))
print("".join(o.get("text", "") for o in reply["outputs"] if o["output_type"] == "stream"))
"""


@pytest.mark.parametrize("namespaces", ["allow", "refuse"])
def test_a_sandbox_takes_the_graders_font_list(tmp_path, namespaces):
    """Does a zygote read the grader's matplotlib font list, rather than list the fonts itself?

    The list is marked (its default family renamed): students see the mark.
    """
    import matplotlib.font_manager as fonts

    cache = tmp_path / "matplotlib"
    cache.mkdir()
    listed = cache / f"fontlist-v{fonts.FontManager.__version__}.json"
    fonts.json_dump(fonts.fontManager, listed)
    marked = json.loads(listed.read_text())
    marked["defaultFamily"]["ttf"] = "Marked Sans"
    listed.write_text(json.dumps(marked))
    env = {**os.environ, "MPLCONFIGDIR": str(cache), "PYTHONPATH": str(ENGINE_HOME)}
    look = "import matplotlib.font_manager as f\nprint(f.fontManager.defaultFamily['ttf'])"
    done = subprocess.run(
        [sys.executable, "-c", FONTS_SEEN, namespaces, look],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    unprotected, said = done.stdout.strip().splitlines()[-2:]
    assert unprotected == str(namespaces == "refuse")  # no bubblewrap where namespaces are refused
    assert said == "Marked Sans"
    assert json.loads(listed.read_text()) == marked  # read, never written


def _host_view(pid_on_host):
    status = Path(f"/proc/{pid_on_host}/status").read_text()
    return dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)


def test_student_process_seen_from_the_host(student):
    """Seen from the host, is every student process unprivileged (when grading as root)?"""
    assert student.unprotected == []
    _run(student, "import time")
    found = []
    for entry in Path("/proc").iterdir():
        try:
            view = _host_view(entry.name)
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        # the zygote's children are two pid namespaces below the host
        if ZYGOTE.encode() in command and len(view["NSpid"].split()) == 3:
            found.append(view)
    assert found, "no student process found"
    for view in found:
        assert "0" not in view["Uid"].split(), view["Uid"]
        assert int(view["CapEff"], 16) == 0 and view["NoNewPrivs"].strip() == "1"


def test_nothing_writable_or_of_the_course_on_sys_path(student):
    """Is every folder on the student's sys.path read-only, none of them the course's?"""
    text = _run(
        student, "import os, sys\nprint([(p, os.access(p, os.W_OK)) for p in sys.path if p])"
    )
    entries = ast.literal_eval(text.strip())
    assert (LAB, False) in entries
    assert [path for path, writable in entries if writable] == []
    beside = [  # in the engine's checkout (its course folders), not the interpreter's own
        path
        for path, _ in entries
        if Path(path).is_relative_to(ENGINE_HOME) and not Path(path).is_relative_to(sys.prefix)
    ]
    assert beside == []


def test_only_the_parts_of_etc_python_needs(student):
    """Are secrets of /etc (the shadow file, keys) absent from the sandbox?"""
    text = _run(student, "import os\nprint(sorted(os.listdir('/etc')))")
    listed = ast.literal_eval(text.strip())
    assert "shadow" not in listed and "ssh" not in listed and "ssl" not in listed
    assert os.path.exists("/etc/shadow")  # the host has one: the sandbox hides it


def _call(student, name, *args, stand_ins=None):
    message = {"op": "call", "name": name, "args": [wire.encode(a) for a in args]}
    return student.request(message, 30, stand_ins)


def test_stand_ins_answer_only_during_the_call_they_serve(student):
    """Does a served name answer from the grader during one call, and the student's own after?"""
    _run(
        student,
        "def helper(v):\n    return v * 100\n"
        "kept = []\n"
        "def answer(v):\n    kept.append(helper)\n    return helper(v) + 1\n"
        "def again(v):\n    return kept[0](v)\n",
    )
    seen = []

    def reference(v):  # runs here, in the grader's process
        seen.append(v)
        return v * 2

    served = _call(student, "answer", 5, stand_ins={"helper": reference})
    assert (served["ok"], wire.decode(served["result"]), seen) == (True, 11, [5])
    own = _call(student, "answer", 5)
    assert wire.decode(own["result"]) == 501  # the student's own helper again
    later = _call(student, "again", 5)  # the stand-in, kept and called outside its check
    assert not later["ok"] and "not served" in later["evalue"], later
    assert seen == [5]


def test_replies_say_which_watched_names_are_functions(student):
    """Once asked to watch names, does every reply say which are functions as it ends?"""
    source = "def f():\n    global g\n    g = 3\n    return 1\ng = len\nclass C:\n    pass\nv = 2"
    reply = student.request(
        {"op": "run", "source": source, "watch": ["f", "g", "C", "v", "nope"]}, 30
    )
    assert reply["functions"] == ["f", "g"]  # a class and data are looked up, not called by proxy
    call = student.request({"op": "call", "name": "f", "args": []}, 30)
    assert call["functions"] == ["f"]  # f rebound g to data while it ran
    # a callable whose __class__ raises: asking isinstance runs the student's code, which fails
    trick = "class Trick:\n    __class__ = property(lambda self: 1 / 0)\n    __call__ = len\n"
    _run(student, trick + "f = Trick()")
    assert student.request({"op": "lookup", "name": "v"}, 30)["functions"] is None


def test_stand_in_calls_are_bounded_and_errors_are_data(student):
    """Are a stand-in's errors and oversized arguments the student's to see, never the grader's?"""
    _run(
        student,
        "import numpy as np\n"
        "def big(v):\n    return helper(np.zeros(2**18))\n"
        "def fails(v):\n    return helper(v)\n",
    )

    def refuse(v):
        raise AssertionError("helper refuses")

    too_big = _call(student, "big", 1, stand_ins={"helper": len})
    assert not too_big["ok"] and "bytes" in too_big["evalue"], too_big
    refused = _call(student, "fails", 1, stand_ins={"helper": refuse})
    assert (refused["ename"], refused["evalue"]) == ("AssertionError", "helper refuses")


# Run where namespaces are refused (the seccomp filter student code gets, put on
# the grader itself), so bubblewrap cannot start either: each student then gets
# a private folder in the sandbox's own, instead of a fresh /tmp.
WITHOUT_NAMESPACES = """
import json, os, sys, tempfile
from autograder.sandbox import Limits, Sandbox, syscalls
syscalls.install()
sandbox = Sandbox()
said = {"scratch": sandbox.scratch}

def run(source):
    student = sandbox.spawn({"checks.py": b"# helper\\n"}, Limits())
    reply = student.request({"op": "run", "source": source}, 30)
    said.setdefault("unprotected", student.unprotected)
    student.close()
    return "".join(o.get("text", "") for o in reply["outputs"] if o["output_type"] == "stream")

said["first"] = json.loads(run(
    "import json, os, tempfile\\n"
    "open('answers.txt', 'w').write('mine')\\n"
    "made = tempfile.mkdtemp()\\n"
    "os.chmod(made, 0)\\n"  # a folder its owner cannot read: removed all the same
    "print(json.dumps([os.getcwd(), made, os.environ['HOME']]))\\n"
    "os.chmod('.', 0)\\n"  # and its own folder too
))
said["killer"] = json.loads(run(  # kills the process that would remove its folder
    "import json, os, signal\\n"
    "open('answers.txt', 'w').write('mine')\\n"
    "print(json.dumps(os.getcwd()))\\n"
    "os.kill(os.getppid(), signal.SIGKILL)\\n"
))
said["second"] = json.loads(run(
    "import json, os\\n"
    "first = json.loads(%r)\\n"
    "print(json.dumps([os.path.lexists(p) for p in first] + [os.getcwd() == first[0]]))"
    % json.dumps(said["first"] + [said["killer"]])
))
sandbox.close()
said["scratch_left"] = os.path.lexists(said["scratch"])
print(json.dumps(said))
"""


def test_without_namespaces_nothing_a_student_wrote_outlives_it(tmp_path):
    """Without namespaces: a student's folder gone before the next starts, all gone at close?"""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary), "PYTHONPATH": str(ENGINE_HOME)}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_NAMESPACES], capture_output=True, text=True, env=env,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert any(p.startswith("namespaces") for p in said["unprotected"]), said
    home, made, env_home = said["first"]
    assert home == env_home and home.startswith(said["scratch"] + os.sep)
    assert made.startswith(home + os.sep)  # its temporary files are in its own folder
    assert said["second"] == [False] * 5  # gone, and not given again
    assert not said["scratch_left"]
    assert list(temporary.iterdir()) == []  # nothing left where the grader makes folders


def test_the_graders_side_is_not_in_the_students_process(student):
    """Is the launcher (the grader's side of the sandbox) absent from a student's process,
    which only the zygote's own module needs?"""
    said = _run(student, "import sys\nprint(sorted(m for m in sys.modules if 'autograder' in m))")
    loaded = ast.literal_eval(said.strip())
    assert "autograder.sandbox.student" in loaded
    assert "autograder.sandbox.isolation" in loaded
    assert "autograder.sandbox.launcher" not in loaded


def test_a_student_process_reads_proc_and_calls_libc_as_the_zygote_prepared():
    """What each child uses while it starts is made once: one C library, its functions
    looked up, and /proc read as Python's own file objects read it."""
    from autograder.sandbox import isolation

    libc = isolation.c_library()
    assert isolation.c_library() is libc
    assert libc.prctl is isolation.c_library().prctl  # looked up once, then kept
    for name in ("status", "mountinfo"):  # their first lines do not change between reads
        text = isolation._read_proc(name)
        assert text.splitlines()[0] == Path(f"/proc/self/{name}").read_text().splitlines()[0]
    assert all(field.isdigit() for field in isolation._read_proc("statm").split())
    assert "/" in dict(isolation._mounts())


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's runs drop to another user")
def test_a_grader_its_students_cannot_read_stops_in_one_line(tmp_path):
    """Without bubblewrap, as root: the engine in a folder only root may read (a course cloned
    with mode 700) cannot be imported by the students' user. The run stops before grading
    anyone, in one line with exit 2, saying what to change, instead of failing each student."""
    from . import toy

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    package = Path(autograder.__file__).parent
    shutil.copytree(package, private / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    course = toy.write_course(private / "course")
    toy.write_notebook(toy.DOUBLE, tmp_path / "subs" / "ada" / "toy-1" / "toy.ipynb")
    run = [sys.executable, "-m", "autograder"]
    given = {"cwd": private, "capture_output": True, "text": True, "timeout": 300}
    assert subprocess.run([*run, "generate", "--course", str(course)], **given).returncode == 0
    out = tmp_path / "out"
    done = subprocess.run(
        [*run, "grade", str(tmp_path / "subs"), "--course", str(course), "--out", str(out),
         "--jobs", "1", "--no-sandbox"],
        **given,
    )  # fmt: skip
    said = [line for line in done.stderr.splitlines() if "error:" in line]
    assert done.returncode == 2 and len(said) == 1, done.stderr[-3000:]
    assert "Permission denied" in said[0] and "chmod o+rX" in said[0], said
    assert "grading it again" not in done.stderr and "Traceback" not in done.stderr
    assert not (out / "grades.csv").exists()
