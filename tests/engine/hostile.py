"""Hostile submissions to any course: broken files, runaway code, tampering, cheats, floods.

Each case builds a submission (bytes) from the toy numpy course's release and
solution (:data:`tests.engine.toy.ARRAYS`), so cases never go stale. ``CASES``
maps a student id to the case; ``tests/engine/test_hostile.py`` grades them all
as one class and checks each row. A case may name a *baseline*: the same
notebook without its trick (the answer left as the stub). The baseline is
graded in the same class as ``<id>--baseline``, and the case must score
exactly as much (``as_baseline``).

What attacks one course's own checks (its helpers, its references, its
stand-ins) is that course's to test: this lab's are in ``tests/lab/hostile.py``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from autograder.pipeline.course import notebook

from . import hunt

ID, NOTEBOOK = "arrays-1", "arrays.ipynb"  #: the hostile class's assignment and notebook
# Seconds per cell: an honest cell takes well under a second here (drawing the figure),
# so a machine at a quarter of the speed, both cores busy, passes with room; only the
# loops that never end run into it.
CELL_TIMEOUT = "6"

#: (release, solution, context) -> the submission's bytes
Build = Callable[[Any, Any, dict[str, Any]], bytes]


@dataclass(frozen=True)
class Case:
    """A hostile submission and what grading it must give.

    status: the row's status ("any" for no check); score: "zero", "partial",
    "as_solution", "no_more_than_wrong" or "as_baseline".
    baseline: builds the notebook this case is compared with, the same way.
    """

    what: str
    build: Build
    status: str
    score: str
    baseline: Build | None = None


def submission_path(student_id: str) -> Path:
    """Where nbgrader keeps a student's notebook, below a submissions folder."""
    return Path(student_id) / ID / NOTEBOOK


def _bytes(nb: Any) -> bytes:
    return nbformat.writes(nb).encode()


def solved(release: Any, solution: Any) -> Any:
    """The release with the solution's answers, as a student who solved it hands it in."""
    answers = notebook.answers(solution)
    return notebook.fill(
        release, {k: notebook.strip_solution_markers(v) for k, v in answers.items()}
    )


def solved_with(grade_id: str, source: str) -> Build:
    """The solution, with one answer cell replaced."""
    return lambda rel, sol, ctx: _bytes(notebook.fill(solved(rel, sol), {grade_id: source}))


def stubbed(grade_id: str) -> Build:
    """The solution with this answer left as the release's stub."""
    return lambda rel, sol, ctx: _bytes(
        notebook.fill(solved(rel, sol), {grade_id: notebook.answers(rel)[grade_id]})
    )


def _edit(change: Callable[[Any], None]) -> Build:
    def build(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
        nb = copy.deepcopy(solved(rel, sol))
        change(nb)
        return _bytes(nb)

    return build


def _cell(nb: Any, grade_id: str) -> Any:
    return next(c for c in nb.cells if notebook.grade_id(c) == grade_id)


def _drop(grade_id: str) -> Callable[[Any], None]:
    return lambda nb: nb.cells.__setitem__(
        slice(None), [c for c in nb.cells if notebook.grade_id(c) != grade_id]
    )


def _duplicate(nb: Any) -> None:
    index = next(i for i, c in enumerate(nb.cells) if notebook.grade_id(c) == "spread")
    twin = copy.deepcopy(nb.cells[index])
    twin.source, twin.id = "def spread(v):\n    return 0.0", "spread-copy"
    nb.cells.insert(index + 1, twin)


def _set_meta(grade_id: str, key: str, value: Any) -> Callable[[Any], None]:
    return lambda nb: _cell(nb, grade_id).metadata.nbgrader.__setitem__(key, value)


def _break_metadata(nb: Any) -> None:
    del _cell(nb, "test_scale").metadata.nbgrader["grade_id"]


def _old_format(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
    return _bytes(nbformat.convert(solved(rel, sol), 3))


def _truncated(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
    data = _bytes(solved(rel, sol))
    return data[: len(data) // 2]


def _many_cells(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
    empty = b'{"cell_type": "markdown", "metadata": {}, "source": ""}, '
    return _bytes(solved(rel, sol)).replace(b'"cells": [', b'"cells": [' + empty * 300_000, 1)


def _deeply_nested(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
    return _bytes(solved(rel, sol)).replace(
        b'"metadata": {', b'"deep": ' + b"[" * 50_000 + b"]" * 50_000 + b', "metadata": {', 1
    )


MARKUP = (
    "The spread is a difference. <script>document.title = 'pwned'</script>"
    " <img src=x onerror=\"document.title = 'pwned'\"> [link](javascript:alert(3))"
    ' <a href="javascript:alert(4)">click</a> <svg onload="alert(5)"></svg>'
    ' <iframe srcdoc="<script>alert(6)</script>"></iframe>'
    ' <img src="https://example.org/beacon.png"> and $s = \\max v - \\min v$'
)
# Maths is drawn as MathML after the first cleaning: what it may carry (PORT: the
# class's listener, which must hear nothing).
MATHS = (
    "\n\n$$\\text{<iframe/srcdoc=\"<script>document.title='pwned'</script>\">}$$"
    " and $\\text{<svg/onload=\"document.title='pwned'\">}$"
    ' and $\\text{<img/src="x"/onerror="document.title=\'pwned\'">}$'
    " and $\\style{position:fixed;top:0;left:0;width:100%;height:100%;"
    "background-image:url(http://127.0.0.1:PORT/fake.png)}{\\text{Score 8 / 8}}$"
    " and $\\href{javascript:document.title='pwned'}{click}$"
    " and $\\text{<plaintext>}$ and $\\frac{a}{b}$"
    # paths a browser resolves to the network once the page is served over HTTP
    ' <img src="/\\127.0.0.1:PORT/slash.png"> <img src="\\\\127.0.0.1:PORT\\back.png">'
    ' <img src="//127.0.0.1:PORT/scheme-relative.png"> <img src="fake.png">'
    # a heading that would take a test's anchor
    '\n\n<h3 id="test_spread_hidden">test_spread_hidden passed</h3>'
)


def _markup(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
    text = MARKUP + MATHS.replace("PORT", str(ctx["port"]))
    nb = notebook.fill(solved(rel, sol), {"why": text})
    nb.cells.append(nbformat.v4.new_markdown_cell("## My notes\n\n" + text))
    return _bytes(nb)


TABLE = "table = np.arange(6).reshape(2, 3)"  #: the right answer of the table cell
LOOP = "while True:\n    pass"
STUBBORN = "while True:\n    try:\n        pass\n    except KeyboardInterrupt:\n        pass"


def _in_function(signature: str, body: str) -> str:
    return signature + "\n" + "\n".join("    " + line for line in body.splitlines())


# ------------------------------------------------------------- broken files
BROKEN = {
    "empty": Case("an empty file", lambda r, s, c: b"", "unreadable", "zero"),
    "truncated": Case("truncated JSON", _truncated, "unreadable", "zero"),
    "not_a_notebook": Case(
        "JSON that is not a notebook", lambda r, s, c: b'{"cells": 3}', "unreadable", "zero"
    ),
    "binary": Case("a binary file", lambda r, s, c: bytes(range(256)) * 4, "unreadable", "zero"),
    "old_format": Case("nbformat 3", _old_format, "ok", "as_solution"),
    "many_cells": Case("300,000 empty cells after the answers", _many_cells, "unreadable", "zero"),
    "deeply_nested": Case(
        "50,000 nested lists in its metadata", _deeply_nested, "unreadable", "zero"
    ),
}

# --------------------------------------------------------- runaway code
RUNAWAY = {
    "loop_at_top": Case(
        "an infinite loop in an answer cell", solved_with("table", LOOP), "timeout", "partial"
    ),
    "loop_in_function": Case(
        "an infinite loop inside spread, called by the tests",
        solved_with("spread", _in_function("def spread(v):", LOOP)),
        "timeout",
        "partial",
    ),
    "stubborn_loop": Case(
        "a loop that swallows interrupts", solved_with("scale", STUBBORN), "timeout", "partial"
    ),
    "exits": Case(
        "os._exit in an answer cell",
        solved_with("spread", "import os\nos._exit(3)"),
        "kernel_died",
        "partial",
    ),
    "segfault": Case(
        "a segfault",
        solved_with("spread", "import ctypes\nctypes.string_at(0)"),
        "kernel_died",
        "partial",
    ),
    "memory_hog": Case(
        "allocates 40 GB",
        solved_with("table", "hog = np.ones(5 * 10**9)"),
        "memory_limit",
        "partial",
    ),
    "output_flood": Case(
        "prints 200,000 lines",
        solved_with("table", "for i in range(200_000):\n    print(i)\n" + TABLE),
        "ok",
        "as_solution",
    ),
    "fork_storm": Case(
        "starts hundreds of sleeping processes",
        solved_with(
            "table",
            "import subprocess\n"
            "storm = subprocess.Popen(['/bin/sh', '-c', 'for i in $(seq 300); do sleep 600 & done; wait'])\n"
            "import os, time\ntime.sleep(1.5)\n"
            "print('processes:', sum(p.isdigit() for p in os.listdir('/proc')))\n" + TABLE,
        ),
        "ok",
        "as_solution",
    ),
    "html_script": Case(
        "displays HTML with a script in its output",
        solved_with(
            "table",
            "from IPython.display import HTML, display\n"
            "display(HTML('<script>document.title = \"pwned\"</script><b>my table</b>'))\n" + TABLE,
        ),
        "ok",
        "as_solution",
    ),
    "markup": Case(
        "writes scripts, handlers, javascript: links and a beacon in its Markdown",
        _markup,
        "ok",
        "as_solution",
    ),
}

# ------------------------------------------------------------- tampering
TAMPERED = {
    "deleted_answer": Case(
        "deleted the spread answer cell", _edit(_drop("spread")), "cells_missing", "partial"
    ),
    "deleted_test": Case(
        "deleted a visible test cell", _edit(_drop("test_scale")), "cells_missing", "as_solution"
    ),
    "duplicated_answer": Case(
        "duplicated the spread cell", _edit(_duplicate), "tampered", "partial"
    ),
    "edited_test": Case(
        "replaced a test with `pass`",
        _edit(lambda nb: setattr(_cell(nb, "test_spread"), "source", '"""Does it?"""\npass')),
        "tampered",
        "as_solution",
    ),
    "more_points": Case(
        "gave a test 100 points",
        _edit(_set_meta("test_scale", "points", 100)),
        "tampered",
        "as_solution",
    ),
    "renamed_test": Case(
        "renamed a test's grade_id",
        _edit(_set_meta("test_scale", "grade_id", "test_scale_mine")),
        "tampered",
        "as_solution",
    ),
    "int_grade_id": Case(
        "a test cell's grade_id made a whole number",
        _edit(_set_meta("test_scale", "grade_id", 7)),
        "tampered",
        "as_solution",
    ),
    "broken_metadata": Case(
        "nbgrader metadata without a grade_id", _edit(_break_metadata), "tampered", "as_solution"
    ),
}

# ------------------------------------------------------------------ cheats
ZEROS = {  # wrong answers of the right shapes
    "scale": "def scale(v, k):\n    return np.zeros(np.shape(v))",
    "spread": "def spread(v):\n    return 0.0",
    "table": "table = np.zeros((2, 3))",
}


def wrong_with(cheat: str, fill: bool = True, answer: str = "scale") -> Build:
    """Wrong answers of the right shapes, with ``cheat`` added to one answer cell.

    fill: put the context (``{course}``, ``{port}``, ...) into the cheat's text.
    answer: the cell it goes in (scale's by default).
    """

    def build(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
        answers = dict(ZEROS)
        code = cheat.format(**ctx, assignment=ID, notebook=NOTEBOOK) if fill else cheat
        answers[answer] = answers[answer] + "\n\n" + code
        return _bytes(notebook.fill(rel, answers))

    return build


PATCH_COMPARISONS = """
import numpy as np
np.allclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.shape(a), dtype=bool)
np.testing.assert_allclose = lambda *a, **k: None
np.shape = lambda a: (2, 3)
"""
SWALLOW_ERRORS = """
import builtins, sys
get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)
sys.excepthook = lambda *a: None
builtins.AssertionError = type("AssertionError", (Exception,), {{}})
"""
TRANSFORMER = """
get_ipython().input_transformers_post.append(lambda lines: ["pass\\n"])
get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\\n"])
"""
READ_SOURCE = """
import glob, json, os
stolen = []
for pattern in ["{course}/source/*/*.ipynb", "{course}/gradebook.db", "/proc/1/cwd/source/*/*.ipynb",
                "/proc/*/cwd/source/*/*.ipynb", "{course}/../*/source/*/*.ipynb", "/work/*/source/*/*.ipynb"]:
    for path in glob.glob(pattern):
        try:
            stolen.append(open(path, "rb").read())
        except OSError:
            pass
for name, value in os.environ.items():
    if "source" in value:
        stolen.append(value.encode())
assert not stolen, "read " + str(len(stolen)) + " files it should not see"
"""
VANDALISE = """
import os
for path in ["{course}/gradebook.db", "{course}/source/{assignment}/{notebook}",
             "{out}/grades.csv", "{submissions}/victim/{assignment}/{notebook}", "/tmp/pwned"]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write("pwned")
    except OSError:
        pass
"""
NETWORK = """
import socket
for host in ["127.0.0.1", "localhost", "::1"]:
    try:
        with socket.create_connection((host, {port}), timeout=1) as conn:
            conn.sendall(b"leak")
    except OSError:
        pass
"""
WIRE_GARBAGE = """
import os
for fd in range(3, 64):
    try:
        os.write(fd, b"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x20" + b'{{"ok": true, "result": 1}}' + b"x" * 8)
    except OSError:
        pass
"""
FRAME_PEEKING = """
import inspect
def scale(v, k):
    for frame in inspect.stack():
        for value in frame.frame.f_locals.values():
            if getattr(value, "shape", None) == np.shape(v) and value is not v:
                return value
    return np.zeros(np.shape(v))
"""
ALWAYS_EQUAL = """
class Anything:
    shape = (2,)
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(self.shape)

def scale(v, k):
    return Anything()
"""

CHEATS = {
    "patch_numpy": Case(
        "monkeypatches numpy's comparisons", wrong_with(PATCH_COMPARISONS), "ok",
        "no_more_than_wrong",
    ),
    "swallow_errors": Case(
        "swallows every error in the kernel", wrong_with(SWALLOW_ERRORS), "ok",
        "no_more_than_wrong",
    ),
    "transformer": Case(
        "turns every later cell into `pass`", wrong_with(TRANSFORMER), "ok", "no_more_than_wrong"
    ),
    "read_source": Case(
        "hunts for the solutions and the gradebook", wrong_with(READ_SOURCE), "ok",
        "no_more_than_wrong",
    ),
    "vandalise": Case(
        "overwrites the gradebook, source and others' work", wrong_with(VANDALISE), "ok",
        "no_more_than_wrong",
    ),
    "network": Case("phones home", wrong_with(NETWORK), "ok", "no_more_than_wrong"),
    "wire_garbage": Case(
        "writes forged replies to every open file", wrong_with(WIRE_GARBAGE), "any", "zero"
    ),
    "frame_peeking": Case(
        "looks for expected values in its callers", wrong_with(FRAME_PEEKING), "ok",
        "no_more_than_wrong",
    ),
    "always_equal": Case(
        "returns an object equal to everything", wrong_with(ALWAYS_EQUAL), "ok",
        "no_more_than_wrong",
    ),
}  # fmt: skip
# Right shapes earn nothing by themselves: each answer's tests also check its values.
WRONG = Case("wrong answers of the right shapes, no cheating", wrong_with(""), "ok", "zero")

# -------------------------------------- what does nothing scores as the stub
SIGNATURES = {"scale": "def scale(v, k):", "spread": "def spread(v):"}
NOTHING = {"none": "return None", "raises": "raise ValueError('not done')", "echo": "return v"}
DO_NOTHING = {
    f"nothing_{answer}_{kind}": Case(
        f"{answer} that only does `{body}`",
        solved_with(answer, f"{signature}\n    {body}"),
        "ok",
        "as_baseline",
        stubbed(answer),
    )
    for answer, signature in SIGNATURES.items()
    for kind, body in NOTHING.items()
}
OWN_ERRORS = {
    "raises_interrupt": Case(
        "a spread that raises KeyboardInterrupt itself (not a timeout)",
        solved_with("spread", "def spread(v):\n    raise KeyboardInterrupt"),
        "ok",
        "as_baseline",
        stubbed("spread"),
    ),
}

# -------------------------------------------------- floods the grader must bound
BIG_DISPLAY = (
    "from IPython.display import display\ndisplay({'text/plain': 'x' * 20_000_000}, raw=True)\n"
)
MANY_DISPLAYS = "from IPython.display import display\nfor i in range(100_000):\n    display(i)\n"
FORGED_V0 = """
import base64, json, os, stat, struct

def spread(v):
    header = repr({"descr": "|V0", "fortran_order": False, "shape": (10**12,)}).encode()
    header += b" " * (-(len(header) + 11) % 64) + b"\\n"
    npy = b"\\x93NUMPY\\x01\\x00" + len(header).to_bytes(2, "little") + header
    value = {"t": "nd", "v": base64.b64encode(npy).decode()}
    for fd in range(3, 1024):
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
        except OSError:
            continue
        for number in range(1, 400):
            reply = {"ok": True, "result": value, "outputs": [], "args": [], "id": number}
            body = json.dumps(reply).encode()
            try:
                os.write(fd, struct.pack(">Q", len(body)) + body)
            except OSError:
                break
    return 0.0
"""


def with_prefix(grade_ids: list[str], prefix: str) -> Build:
    """The solution with ``prefix`` run first in each of these answer cells."""

    def build(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
        answers = notebook.answers(solved(rel, sol))
        return _bytes(notebook.fill(solved(rel, sol), {g: prefix + answers[g] for g in grade_ids}))

    return build


def with_end_cells(*sources: str) -> Build:
    """The solution with plain code cells added at its end."""

    def build(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
        nb = solved(rel, sol)
        for number, source in enumerate(sources):
            nb.cells.append(nbformat.v4.new_code_cell(source, id=f"extra-{number}"))
        return _bytes(nb)

    return build


FLOODS = {
    "flood_big_displays": Case(
        "three cells each display 20 MB",
        with_prefix(["scale", "spread", "table"], BIG_DISPLAY),
        "ok",
        "as_solution",
    ),
    "flood_many_displays": Case(
        "100,000 display() calls in one cell",
        with_prefix(["table"], MANY_DISPLAYS),
        "ok",
        "as_solution",
    ),
    "flood_huge_error": Case(
        "an error message of 4 MB, raised in every test of spread",
        solved_with("spread", "def spread(v):\n    raise ValueError('x' * 4_000_000)"),
        "ok",
        "as_baseline",
        stubbed("spread"),
    ),
    "flood_zero_size_array": Case(
        "forged replies holding an array of 10**12 zero-size elements",
        wrong_with(FORGED_V0, fill=False, answer="spread"),
        "tampered",
        "no_more_than_wrong",
    ),
}

# ------------------------------------------- the sandbox: nothing outlives a student
PLACES = """
import os, sys
places = sorted({p for p in sys.path if p} | {os.getcwd(), os.path.expanduser("~"), "/tmp",
                "/tmp/lab", "/dev/shm", "/dev", "/", "/work", "/etc", "/var/tmp"})
"""
PLANT = (
    PLACES
    + """
PLANTED = "open('/tmp/PLANTED_RAN', 'w').write('ran')\\nraise SystemExit('a planted module ran')\\n"
planted = []
for folder in places:
    for module in ("sitecustomize", "stack_data", "executing", "pygments", "checks", "numpy"):
        try:
            with open(os.path.join(folder, module + ".py"), "w") as handle:
                handle.write(PLANTED)
            planted.append(os.path.join(folder, module))
        except OSError:
            pass
    try:
        with open(os.path.join(folder, "MARKER_FROM_PLANTER"), "w") as handle:
            handle.write("left for the next student")
    except OSError:
        pass
"""
)
PROBE = (
    PLACES
    + """
found = [p for p in places if os.path.exists(os.path.join(p, "MARKER_FROM_PLANTER"))]
found += [p for p in ["/tmp/PLANTED_RAN"] if os.path.exists(p)]
print("found:", found)
"""
)
CAPABILITIES = """
with open("/proc/self/status") as handle:
    status = dict(line.rstrip("\\n").split(":\\t", 1) for line in handle if ":\\t" in line)
print("status:", {k: status.get(k) for k in ("Uid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Seccomp")})
"""
DISK_FLOOD = """
import os
written, block, made = 0, b"x" * 2**20, []
for number, folder in enumerate(("/tmp", "/dev/shm", "/", os.getcwd(), "/tmp/lab", "/dev")):
    path = os.path.join(folder, f"flood-{number}.bin")
    try:
        with open(path, "wb", buffering=0) as handle:
            made.append(path)
            for _ in range(1536):  # 1.5 GB in 1 MiB blocks
                written += handle.write(block)
    except OSError:
        pass
for path in made:  # leave room for the rest of the notebook
    os.remove(path)
print("written:", written)
"""
# The figures the grader's trusted run drew, as a student's process holds them
# (autograder.sandbox.figures): this one replaces every entry and matplotlib's
# drawing, in its own process; the next student must still get the true PNGs.
FIGURE_POISON = """
import sys
from matplotlib.backend_bases import FigureCanvasBase
figures = sys.modules.get("autograder.sandbox.figures")
known = getattr(figures, "_known", {})
print("known:", len(known))
for index in list(known):
    known[index] = bytes(len(known[index]))
FigureCanvasBase.print_figure = lambda self, target, *args, **kwargs: target.write(b"poisoned")
"""
FIGURE_PROBE = """
import sys
print("reused:", getattr(sys.modules.get("autograder.sandbox.figures"), "_reused", None))
"""


def _hunting(rel: Any, sol: Any, ctx: dict[str, Any]) -> bytes:
    """The release, blank, with a last cell that looks for the source's solution lines
    in everything its process can read (:mod:`tests.engine.hunt`)."""
    needles = hunt.solution_lines(sol, "\n".join(c.source for c in rel.cells))
    nb = copy.deepcopy(rel)
    nb.cells.append(nbformat.v4.new_code_cell(hunt.hunting_cell(needles, CONTROL), id="hunt"))
    return _bytes(nb)


CONTROL = "ax.set_title('the identity')"  #: a line every student's process holds: the release's

# Graded in this order by one worker (tests/engine/test_sandbox_class.py): each one after
# the student before it, in the process tree that student left.
SANDBOX = {
    "sandbox_1_plant": Case(
        "plants modules and files everywhere it can write, for the next student",
        with_prefix(["table"], PLANT),
        "ok",
        "as_solution",
    ),
    "sandbox_2_after_plant": Case(
        "an honest student graded right after the planter, looking for what it left",
        with_end_cells(PROBE, "raise ValueError('makes IPython format a traceback')"),
        "ok",
        "as_solution",
    ),
    "sandbox_3_capabilities": Case(
        "reports its own uid, capabilities and seccomp state",
        with_prefix(["table"], CAPABILITIES),
        "ok",
        "as_solution",
    ),
    "sandbox_4_disk_flood": Case(
        "writes 1.5 GB to every in-memory filesystem it finds",
        with_prefix(["table"], DISK_FLOOD),
        "ok",
        "as_solution",
    ),
    "sandbox_5_figure_poison": Case(
        "replaces the figures the grader drew once, and matplotlib's drawing, for the next one",
        with_prefix(["table"], FIGURE_POISON),
        "ok",
        "as_solution",
    ),
    "sandbox_6_after_figures": Case(
        "an honest student graded after the figure poisoner, counting the figures it copied",
        with_end_cells(FIGURE_PROBE),
        "ok",
        "as_solution",
    ),
    "sandbox_7_solution_hunt": Case(
        "a blank notebook that searches its memory, the processes and files it can see for "
        "the solutions, after the worker learned the course's cells and figures",
        _hunting,
        "ok",
        "zero",
    ),
}

CASES = {
    **BROKEN,
    **RUNAWAY,
    **TAMPERED,
    **CHEATS,
    **DO_NOTHING,
    **OWN_ERRORS,
    **FLOODS,
    "honest_wrong": WRONG,
}  # fmt: skip  (the SANDBOX cases are graded in a class of their own, in order)

BASELINES: dict[str, str] = {}  #: case id -> the student id of its baseline, once built


def write_case(folder: Path, student_id: str, data: bytes) -> None:
    """Write one submission in nbgrader's layout below ``folder``."""
    path = folder / submission_path(student_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def build_class(
    folder: Path, release: Any, solution: Any, context: dict[str, Any],
    cases: dict[str, Case] | None = None,
) -> list[str]:  # fmt: skip
    """Write ``cases`` (default: :data:`CASES`) and their baselines, an honest student
    and a victim (both solved) below ``folder``; the student ids written.

    context: ``{"course", "out", "submissions", "port"}``, for the cheats' texts.
    """
    cases = CASES if cases is None else cases
    written: dict[bytes, str] = {}  # baseline bytes -> the student id they were written under
    for student_id, case in cases.items():
        write_case(folder, student_id, case.build(release, solution, context))
        if case.baseline:
            baseline = case.baseline(release, solution, context)
            if baseline not in written:  # cases that stub the same answer share one
                written[baseline] = f"{student_id}--baseline"
                write_case(folder, written[baseline], baseline)
            BASELINES[student_id] = written[baseline]
    for student_id in ("honest", "victim"):
        write_case(folder, student_id, _bytes(solved(release, solution)))
    return sorted(p.name for p in folder.iterdir())
