"""Hostile submissions: broken files, runaway code, tampering and cheats.

Each case builds a submission (bytes) from the committed release and solution,
so cases never go stale. ``CASES`` maps a student id to the case; the grader
tests grade them all as one class and check each row. Cheats are built on the
*blank* release, so a cheat that worked would score more than zero.
"""

import copy
import json
from dataclasses import dataclass

import nbformat

from autograder import course, notebook


@dataclass(frozen=True)
class Case:
    """A hostile submission and what grading it must give.

    status: the row's status; score: "full", "zero", "partial" or "as_solution".
    """

    what: str
    build: object  # (release_nb, solution_nb, context) -> bytes
    status: str
    score: str


def _bytes(nb):
    return nbformat.writes(nb).encode()


def _solved(release, solution):
    return notebook.fill(release, notebook.answers(solution))


def _with_answer(base, grade_id, source):
    return notebook.fill(base, {grade_id: source})


def solved_with(grade_id, source):
    """The solution, with one answer cell replaced."""
    return lambda rel, sol, ctx: _bytes(_with_answer(_solved(rel, sol), grade_id, source))


def blank_with(grade_id, source):
    """The blank release, with one answer cell replaced (the cheats start from nothing)."""
    return lambda rel, sol, ctx: _bytes(_with_answer(rel, grade_id, source))


def _edit(change):
    def build(rel, sol, ctx):
        nb = copy.deepcopy(_solved(rel, sol))
        change(nb)
        return _bytes(nb)

    return build


def _drop(grade_id):
    return lambda nb: nb.cells.__setitem__(
        slice(None), [c for c in nb.cells if notebook.grade_id(c) != grade_id]
    )


def _duplicate(grade_id):
    def change(nb):
        index = next(i for i, c in enumerate(nb.cells) if notebook.grade_id(c) == grade_id)
        twin = copy.deepcopy(nb.cells[index])
        twin.source = "def blend(weights, values):\n    return values[0]"
        twin.id = "blend-copy"
        nb.cells.insert(index + 1, twin)

    return change


def _cell(nb, grade_id):
    return next(c for c in nb.cells if notebook.grade_id(c) == grade_id)


def _set_test_source(grade_id, source):
    return lambda nb: setattr(_cell(nb, grade_id), "source", source)


def _set_points(grade_id, points):
    return lambda nb: _cell(nb, grade_id).metadata.nbgrader.__setitem__("points", points)


def _rename(grade_id, new):
    return lambda nb: _cell(nb, grade_id).metadata.nbgrader.__setitem__("grade_id", new)


def _break_metadata(nb):
    del _cell(nb, "test_blend").metadata.nbgrader["grade_id"]


def _old_format(rel, sol, ctx):
    return _bytes(nbformat.convert(_solved(rel, sol), 3))


def _truncated(rel, sol, ctx):
    data = _bytes(_solved(rel, sol))
    return data[: len(data) // 2]


LOOP = "while True:\n    pass"
STUBBORN = "while True:\n    try:\n        pass\n    except KeyboardInterrupt:\n        pass"

# ------------------------------------------------------------- broken files
BROKEN = {
    "empty": Case("an empty file", lambda r, s, c: b"", "unreadable", "zero"),
    "truncated": Case("truncated JSON", _truncated, "unreadable", "zero"),
    "not_a_notebook": Case(
        "JSON that is not a notebook", lambda r, s, c: b'{"cells": 3}', "unreadable", "zero"
    ),
    "binary": Case("a binary file", lambda r, s, c: bytes(range(256)) * 4, "unreadable", "zero"),
    "old_format": Case("nbformat 3", _old_format, "ok", "as_solution"),
}

# --------------------------------------------------------- runaway code
RUNAWAY = {
    "loop_at_top": Case(
        "an infinite loop in an answer cell", solved_with("two_worlds", LOOP), "timeout", "partial"
    ),
    "loop_in_function": Case(
        "an infinite loop inside blend, called by the tests",
        solved_with(
            "blend",
            "def blend(weights, values):\n"
            + "\n".join("    " + line for line in LOOP.splitlines()),
        ),
        "timeout",
        "partial",
    ),
    "stubborn_loop": Case(
        "a loop that swallows interrupts",
        solved_with("count_params", STUBBORN),
        "timeout",
        "partial",
    ),
    "exits": Case(
        "os._exit in an answer cell",
        solved_with("blend", "import os\nos._exit(3)"),
        "kernel_died",
        "partial",
    ),
    "segfault": Case(
        "a segfault",
        solved_with("disagreement", "import ctypes\nctypes.string_at(0)"),
        "kernel_died",
        "partial",
    ),
    "memory_hog": Case(
        "allocates 40 GB",
        solved_with("wrong_axis", "import numpy as np\nhog = np.ones(5 * 10**9)"),
        "memory_limit",
        "partial",
    ),
    "output_flood": Case(
        "prints 200,000 lines",
        solved_with(
            "two_worlds",
            "for i in range(200_000):\n    print(i)\n"
            + "world_a = np.array([[2.0, 0.0], [0.0, 2.0]])\nworld_b = np.ones((2, 2))",
        ),
        "ok",
        "as_solution",
    ),
    "fork_storm": Case(
        "starts hundreds of sleeping processes",
        solved_with(
            "wrong_axis",
            "import subprocess\n"
            "storm = subprocess.Popen(['/bin/sh', '-c', 'for i in $(seq 300); do sleep 600 & done; wait'])\n"
            "import os, time\ntime.sleep(1.5)\nprint('processes:', sum(p.isdigit() for p in os.listdir('/proc')))\n"
            "answers = [head(x, W_q, W_k, W_v) for W_q, W_k, W_v in lab_heads]\nwrong_shape = np.concatenate(answers).shape",
        ),
        "ok",
        "as_solution",
    ),
    "html_script": Case(
        "displays HTML with a script in its output",
        solved_with(
            "two_worlds",
            "from IPython.display import HTML, display\n"
            "display(HTML('<script>document.title = \"pwned\"</script><b>my worlds</b>'))\n"
            "world_a = np.array([[2.0, 0.0], [0.0, 2.0]])\nworld_b = np.ones((2, 2))",
        ),
        "ok",
        "as_solution",
    ),
}

# ------------------------------------------------------------- tampering
TAMPERED = {
    "deleted_answer": Case(
        "deleted the head answer cell", _edit(_drop("head")), "cells_missing", "partial"
    ),
    "deleted_test": Case(
        "deleted a visible test cell", _edit(_drop("test_blend")), "cells_missing", "as_solution"
    ),
    "duplicated_answer": Case(
        "duplicated the blend cell", _edit(_duplicate("blend")), "tampered", "partial"
    ),
    "edited_test": Case(
        "replaced a test with `pass`",
        _edit(_set_test_source("test_count_params", '"""Does it?"""\npass')),
        "tampered",
        "as_solution",
    ),
    "more_points": Case(
        "gave a test 100 points", _edit(_set_points("test_blend", 100)), "tampered", "as_solution"
    ),
    "renamed_test": Case(
        "renamed a test's grade_id",
        _edit(_rename("test_blend", "test_blend_mine")),
        "tampered",
        "as_solution",
    ),
    "broken_metadata": Case(
        "nbgrader metadata without a grade_id", _edit(_break_metadata), "tampered", "as_solution"
    ),
}

# ------------------------------------------------------------------ cheats
ZEROS = {  # wrong answers of the right shapes
    "attention_weights": "def attention_weights(x, W_q, W_k):\n    return np.tril(np.ones((len(x), len(x)))) / np.arange(1, len(x) + 1)[:, None]",
    "head": "def head(x, W_q, W_k, W_v):\n    return np.zeros((len(x), W_v.shape[1]))",
    "blend": "def blend(weights, values):\n    return values[0]",
    "disagreement": "def disagreement(shares_a, shares_b):\n    return np.zeros(len(shares_a))",
    "concat_heads": "def concat_heads(answers):\n    return np.zeros((len(answers[0]), 99))",
    "count_params": "def count_params(d_model, n_heads, d_head=None):\n    return 0",
    "multi_head": "def multi_head(x, heads):\n    return np.zeros((len(x), 8))",
}


def wrong_with(cheat):
    """Wrong answers of the right shapes, with ``cheat`` added to the first answer cell."""

    def build(rel, sol, ctx):
        answers = dict(ZEROS)
        answers["attention_weights"] = answers["attention_weights"] + "\n\n" + cheat.format(**ctx)
        return _bytes(notebook.fill(rel, answers))

    return build


PATCH_COMPARISONS = """
import numpy as np
np.allclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.shape(a), dtype=bool)
np.testing.assert_allclose = lambda *a, **k: None
np.shape = lambda a: (6, 8)
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
SHADOW_HELPERS = """
quietly = lambda fn, *a, **k: None
check_close = check_shape = check_unmodified = lambda *a, **k: None
random_arrays = lambda seed, *shapes: [np.zeros(s) for s in shapes]
import lab_checks
lab_checks.check_close = check_close
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
for path in ["{course}/gradebook.db", "{course}/source/08-multi-head/multi_head.ipynb",
             "{out}/grades.csv", "{submissions}/victim/08-multi-head/multi_head.ipynb", "/tmp/pwned"]:
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
def attention_weights(x, W_q, W_k):
    for frame in inspect.stack():
        for value in frame.frame.f_locals.values():
            if getattr(value, "shape", None) == (len(x), len(x)) and value is not x:
                return value
    return np.zeros((len(x), len(x)))
"""
ALWAYS_EQUAL = """
class Anything:
    shape = (6, 6)
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(self.shape)
"""

CHEATS = {
    "patch_numpy": Case(
        "monkeypatches numpy's comparisons",
        wrong_with(PATCH_COMPARISONS),
        "ok",
        "no_more_than_wrong",
    ),
    "swallow_errors": Case(
        "swallows every error in the kernel", wrong_with(SWALLOW_ERRORS), "ok", "no_more_than_wrong"
    ),
    "transformer": Case(
        "turns every later cell into `pass`", wrong_with(TRANSFORMER), "ok", "no_more_than_wrong"
    ),
    "shadow_helpers": Case(
        "redefines the tests' helpers", wrong_with(SHADOW_HELPERS), "ok", "no_more_than_wrong"
    ),
    "read_source": Case(
        "hunts for the solutions and the gradebook",
        wrong_with(READ_SOURCE),
        "ok",
        "no_more_than_wrong",
    ),
    "vandalise": Case(
        "overwrites the gradebook, source and others' work",
        wrong_with(VANDALISE),
        "ok",
        "no_more_than_wrong",
    ),
    "network": Case("phones home", wrong_with(NETWORK), "ok", "no_more_than_wrong"),
    "wire_garbage": Case(
        "writes forged replies to every open file", wrong_with(WIRE_GARBAGE), "any", "zero"
    ),
    "frame_peeking": Case(
        "looks for expected values in its callers",
        wrong_with(FRAME_PEEKING),
        "ok",
        "no_more_than_wrong",
    ),
    "always_equal": Case(
        "returns an object equal to everything",
        wrong_with(ALWAYS_EQUAL + "\ndef attention_weights(x, W_q, W_k):\n    return Anything()"),
        "ok",
        "no_more_than_wrong",
    ),
}
WRONG = Case("wrong answers of the right shapes, no cheating", wrong_with(""), "ok", "partial")

CASES = {**BROKEN, **RUNAWAY, **TAMPERED, **CHEATS, "honest_wrong": WRONG}


def build_class(folder, release_nb, solution_nb, context):
    """Write every case, plus an honest solution and a victim, in nbgrader's layout."""
    for student_id, case in CASES.items():
        path = folder / course.submission_path(student_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(case.build(release_nb, solution_nb, context))
    for student_id in ("honest", "victim"):
        path = folder / course.submission_path(student_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_bytes(_solved(release_nb, solution_nb)))
    return json.dumps(sorted(CASES))
