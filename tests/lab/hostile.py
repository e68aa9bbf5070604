"""Hostile submissions to this lab: what attacks its own checks, and the bench's failure mix.

Each case builds a submission (bytes) from the committed release and solution,
so cases never go stale. ``CASES`` maps a student id to the case: the attacks on
this lab's checks (its references, helpers and stand-ins, one answer's points
kept apart from another's), which the grader tests grade as one class and check
row by row. ``FAILURES`` (broken files, runaway code, tampering, cheats, floods)
is what ``make bench`` mixes into this lab's class; how the grader holds against
each kind, on any course, is tested with tests/engine/hostile.py. A case may name a
*baseline*: the same notebook without its trick (the same wrong answers handed
in honestly, or the answer left as the stub). The baseline is graded in the
same class as ``<id>--baseline``, and the case must score no more than it
(``no_more_than_baseline``) or exactly as much (``as_baseline``).
"""

import copy
from dataclasses import dataclass

import nbformat

from autograder.pipeline.course import notebook

from ..engine import hunt
from ..engine.hostile import (  # what attacks any course attacks this lab too
    BIG_DISPLAY,
    BROKEN,
    LOOP,
    MANY_DISPLAYS,
    NETWORK,
    READ_SOURCE,
    STUBBORN,
    SWALLOW_ERRORS,
    TRANSFORMER,
    WIRE_GARBAGE,
)
from . import lab


@dataclass(frozen=True)
class Case:
    """A hostile submission and what grading it must give.

    status: the row's status ("any" for no check); score: "zero", "partial",
    "as_solution", "no_more_than_wrong", "no_more_than_baseline" or "as_baseline".
    baseline: builds the notebook this case is compared with, the same way.
    """

    what: str
    build: object  # (release_nb, solution_nb, context) -> bytes
    status: str
    score: str
    baseline: object = None


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


MARKUP = (
    "Averaging forgets who said what. <script>document.title = 'pwned'</script>"
    " <img src=x onerror=\"document.title = 'pwned'\"> [link](javascript:alert(3))"
    ' <a href="javascript:alert(4)">click</a> <svg onload="alert(5)"></svg>'
    ' <iframe srcdoc="<script>alert(6)</script>"></iframe>'
    ' <img src="https://example.org/beacon.png"> and $q = x W_q$'
)


# Maths is drawn as MathML after the first cleaning: what it may carry (PORT: the
# class's listener, which must hear nothing).
MATHS = (
    "\n\n$$\\text{<iframe/srcdoc=\"<script>document.title='pwned'</script>\">}$$"
    " and $\\text{<svg/onload=\"document.title='pwned'\">}$"
    ' and $\\text{<img/src="x"/onerror="document.title=\'pwned\'">}$'
    " and $\\style{position:fixed;top:0;left:0;width:100%;height:100%;"
    "background-image:url(http://127.0.0.1:PORT/fake.png)}{\\text{Score 45 / 45}}$"
    " and $\\href{javascript:document.title='pwned'}{click}$"
    " and $\\text{<plaintext>}$ and $\\frac{a}{b}$"
    # paths a browser resolves to the network once the page is served over HTTP
    ' <img src="/\\127.0.0.1:PORT/slash.png"> <img src="\\\\127.0.0.1:PORT\\back.png">'
    ' <img src="//127.0.0.1:PORT/scheme-relative.png"> <img src="fake.png">'
    # a heading that would take a test's anchor
    '\n\n<h3 id="test_head_causal">test_head_causal passed</h3>'
)


def _markup(rel, sol, ctx):
    text = MARKUP + MATHS.replace("PORT", str(ctx["port"]))
    nb = notebook.fill(rel, {**notebook.answers(sol), "why_not_average": text})
    nb.cells.append(nbformat.v4.new_markdown_cell("## My notes\n\n" + text))
    return _bytes(nb)


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
    "runaway_attention": Case(
        "attention_weights loops forever; blend, disagreement, concat_heads never call it",
        solved_with(
            "attention_weights",
            "def attention_weights(x, W_q, W_k):\n"
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
    "served_hog": Case(
        # refused as the reference allocates its answer, before any of its work: whatever
        # the machine's speed, a refusal and never a timeout
        "multi_head asks the lab's attention_weights for a (6000, 6000) answer from 48 KB",
        # only when tested: the lesson's cells (the lab's (6, 8) x) run the student's own
        # attention_weights, whose (6000, 6000) table would take seconds, not a refusal
        solved_with(
            "multi_head",
            "def multi_head(x, heads):\n"
            "    if np.shape(x) != (6, 8):\n"
            "        attention_weights(np.ones((6000, 1)), np.ones((1, 1)), np.ones((1, 1)))\n"
            "    return concat_heads([head(x, *h) for h in heads])",
        ),
        "ok",
        "partial",
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


def wrong_with(cheat, fill=True, answer="attention_weights"):
    """Wrong answers of the right shapes, with ``cheat`` added to one answer cell.

    fill: put the context (``{course}``, ``{port}``, ...) into the cheat's text.
    answer: the cell it goes in (the first answer cell by default).
    """

    def build(rel, sol, ctx):
        answers = dict(ZEROS)
        code = cheat.format(**ctx) if fill else cheat
        answers[answer] = answers[answer] + "\n\n" + code
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
SHADOW_HELPERS = """
quietly = lambda fn, *a, **k: None
check_close = check_shape = check_unmodified = lambda *a, **k: None
random_arrays = lambda seed, *shapes: [np.zeros(s) for s in shapes]
import lab_checks
lab_checks.check_close = check_close
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
# Right shapes earn nothing by themselves: each answer's tests also check its values.
WRONG = Case("wrong answers of the right shapes, no cheating", wrong_with(""), "ok", "zero")

# ---------------------------------------- integrity: student code steering verdicts


def solved_with_many(sources, move=(), end_cells=()):
    """The solution with answers replaced, instructor cells moved to the end, cells added."""

    def build(rel, sol, ctx):
        nb = notebook.fill(_solved(rel, sol), sources)
        for grade_id in move:
            cell = _cell(nb, grade_id)
            nb.cells.remove(cell)
            nb.cells.append(cell)
        for number, source in enumerate(end_cells):
            nb.cells.append(nbformat.v4.new_code_cell(source, id=f"extra-{number}"))
        return _bytes(nb)

    return build


def stubbed(*grade_ids):
    """The solution with these answers left as the release's stubs."""

    def build(rel, sol, ctx):
        stubs = notebook.answers(rel)
        return _bytes(notebook.fill(_solved(rel, sol), {g: stubs[g] for g in grade_ids}))

    return build


UNIFORM = (
    "def attention_weights(x, W_q, W_k):\n"
    "    T = len(x)\n"
    "    return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]"
)
SHADOW_UNIFORM = """

def _reference_weights(x, W_q, W_k):
    T = len(x)
    return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]

def _diagnose_weights(*args):
    return ""
"""
ZERO_HEAD = "def head(x, W_q, W_k, W_v):\n    return np.zeros((len(x), W_v.shape[1]))"
ZERO_MULTI = (
    "def multi_head(x, heads):\n"
    "    return np.zeros((len(x), sum(W_v.shape[1] for _, _, W_v in heads)))"
)
SHADOW_ZERO = "\n\ndef _reference_weights(x, W_q, W_k):\n    return np.zeros((len(x), len(x)))\n"
SHADOW_SETUP = """

quietly = lambda fn, *args, **kwargs: fn(*args)
check_close = check_shape = check_unmodified = lambda *args, **kwargs: None
"""
INPLACE_ATTENTION = (
    "def attention_weights(x, W_q, W_k):\n"
    "    W_q[...] = 0  # the caller's matrix: zero queries give every allowed position one score\n"
    "    T = len(x)\n"
    "    return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]"
)
ZERO_CONCAT = (
    "def concat_heads(answers):\n"
    "    return np.zeros((len(answers[0]), sum(np.shape(a)[1] for a in answers)))"
)
INPLACE_CONCAT = (
    "def concat_heads(answers):\n"
    "    for i, a in enumerate(answers):\n"
    "        answers[i] = np.zeros_like(a)\n"
    "    return np.zeros((len(answers[0]), sum(np.shape(a)[1] for a in answers)))"
)


def _wrong_setup_moved(rel, sol, ctx):
    answers = dict(ZEROS)
    answers["attention_weights"] += SHADOW_SETUP
    nb = notebook.fill(rel, answers)
    setup = _cell(nb, "setup")
    nb.cells.remove(setup)
    nb.cells.append(setup)
    return _bytes(nb)


def _int_grade_id(nb):
    _cell(nb, "test_blend").metadata.nbgrader["grade_id"] = 7


INTEGRITY = {
    "moved_reference": Case(
        "moves the cell defining the tests' reference to the end, defines its own",
        solved_with_many(
            {"attention_weights": UNIFORM + SHADOW_UNIFORM},
            move=["test_attention_weights_values"],
        ),
        "tampered",
        "no_more_than_baseline",
        solved_with_many({"attention_weights": UNIFORM}),
    ),
    "moved_reference_zeros": Case(
        "zero head and multi_head, with its own reference of zeros and the real one moved",
        solved_with_many(
            {"head": ZERO_HEAD + SHADOW_ZERO, "multi_head": ZERO_MULTI},
            move=["test_attention_weights_values"],
        ),
        "tampered",
        "no_more_than_baseline",
        solved_with_many({"head": ZERO_HEAD, "multi_head": ZERO_MULTI}),
    ),
    "moved_setup": Case(
        "moves the read-only setup cell to the end and defines the helpers itself",
        _wrong_setup_moved,
        "tampered",
        "no_more_than_wrong",
    ),
    "inplace_queries": Case(
        "zeroes the caller's W_q in place and returns what zero queries give",
        solved_with_many({"attention_weights": INPLACE_ATTENTION}),
        "ok",
        "no_more_than_baseline",
        solved_with_many({"attention_weights": UNIFORM}),
    ),
    "inplace_list": Case(
        "replaces the caller's answers with zeros and returns zeros",
        solved_with_many({"concat_heads": INPLACE_CONCAT}),
        "ok",
        "no_more_than_baseline",
        solved_with_many({"concat_heads": ZERO_CONCAT}),
    ),
    "always_value_error": Case(
        "a count_params that always raises ValueError",
        solved_with(
            "count_params",
            "def count_params(d_model, n_heads, d_head=None):\n    raise ValueError('no')",
        ),
        "ok",
        "as_baseline",
        stubbed("count_params"),
    ),
    "raises_interrupt": Case(
        "a blend that raises KeyboardInterrupt itself (not a timeout)",
        solved_with("blend", "def blend(weights, values):\n    raise KeyboardInterrupt"),
        "ok",
        "as_baseline",
        stubbed("blend"),
    ),
    "int_grade_id": Case(
        "a test cell's grade_id made a whole number",
        _edit(_int_grade_id),
        "tampered",
        "as_solution",
    ),
}


def _do_nothing(answer, body):
    """The solution with ``answer``'s body replaced by ``body`` (``{arg}``: its first argument)."""

    def build(rel, sol, ctx):
        signature = notebook.answers(rel)[answer].split("\n", 1)[0]  # def name(args):
        first = signature.split("(", 1)[1].split(",")[0].split(")")[0].strip()
        source = f"{signature}\n    {body.format(arg=first)}"
        return _bytes(notebook.fill(_solved(rel, sol), {answer: source}))

    return build


FUNCTIONS = (
    "attention_weights", "head", "blend", "disagreement", "concat_heads", "count_params",
    "multi_head",
)  # fmt: skip
NOTHING = {"none": "return None", "raises": "raise ValueError('not done')", "echo": "return {arg}"}
# An answer that does nothing useful scores exactly what the stub scores.
DO_NOTHING = {
    f"nothing_{answer}_{kind}": Case(
        f"{answer} that only does `{body}`",
        _do_nothing(answer, body),
        "ok",
        "as_baseline",
        stubbed(answer),
    )  # fmt: skip
    for answer in FUNCTIONS
    for kind, body in NOTHING.items()
}

# ------------------------------------ one answer's points depend on its own code alone
# Each answer that calls another (head, multi_head) or might (batched_heads, wrong_axis's
# cell) is graded beside every other function answer replaced by a stub or by a function
# returning nan, a constant or an arbitrary array of the right shape: its own tests must
# keep every point. The same replacements everywhere must score nothing (EXPLOITS).
SHAPES = {  # answer -> (its signature's arguments, the shape of a right answer)
    "attention_weights": ("x, W_q, W_k", "(len(x), len(x))"),
    "head": ("x, W_q, W_k, W_v", "(len(x), W_v.shape[1])"),
    "blend": ("weights, values", "(np.shape(values)[1],)"),
    "disagreement": ("shares_a, shares_b", "(len(shares_a),)"),
    "concat_heads": ("answers", "(len(answers[0]), sum(np.shape(a)[1] for a in answers))"),
    "count_params": ("d_model, n_heads, d_head=None", "()"),
    "multi_head": ("x, heads", "(len(x), sum(h[2].shape[1] for h in heads))"),
    "batched_heads": ("x, W_q, W_k, W_v, n_heads", "np.shape(x)"),
}
FILLS = {  # kind -> the array a replaced answer returns, of shape `shape`
    "nan": "np.full(shape, np.nan)",
    "constant": "np.full(shape, 0.5)",
    "arbitrary": "np.arange(np.prod(shape, dtype=int), dtype=float).reshape(shape) % 7",
}
ISOLATED = ("head", "multi_head", "batched_heads", "wrong_axis")  # answers checked alone


def replaced(answer, kind):
    """The source of ``answer`` replaced by ``kind``: "stub", or one of :data:`FILLS`."""
    arguments, shape = SHAPES[answer]
    return (
        f"def {answer}({arguments}):\n    shape = {shape}\n    return {FILLS[kind]}"
        if kind != "stub"
        else None
    )


def others_replaced(kept, kind):
    """The solution with every function answer but ``kept`` replaced by ``kind``."""

    def build(rel, sol, ctx):
        stubs = notebook.answers(rel)
        sources = {a: replaced(a, kind) or stubs[a] for a in SHAPES if a != kept}
        return _bytes(notebook.fill(_solved(rel, sol), sources))

    return build


ALONE = {
    f"alone_{answer}_{kind}": Case(
        f"{answer} right, every other function answer {kind}", others_replaced(answer, kind),
        "ok", "any",
    )
    for answer in ISOLATED
    for kind in ("stub", *FILLS)
}  # fmt: skip
# Ways to earn points from other answers' checks (each scored above the blank notebook
# while answers were checked against the student's own upstream answers).
KEEPER_GLUE = """
kept = []

def concat_heads(answers):
    kept.append([np.array(a) for a in answers])  # what a caller's check hands over
    raise NotImplementedError()
"""
KEEPER_MULTI = """
def multi_head(x, heads):
    for answers in reversed(kept):
        if len(answers) == len(heads) and len(answers[0]) == len(x):
            return np.hstack(answers)
    raise NotImplementedError()
"""
FIXED = {
    "head": "def head(x, W_q, W_k, W_v):\n    return np.arange(len(x) * W_v.shape[1], dtype=float).reshape(len(x), -1)",
    "concat_heads": "def concat_heads(answers):\n    return np.arange(len(answers[0]) * sum(np.shape(a)[1] for a in answers), dtype=float).reshape(len(answers[0]), -1)",
    "multi_head": "def multi_head(x, heads):\n    return np.arange(len(x) * sum(h[2].shape[1] for h in heads), dtype=float).reshape(len(x), -1)",
}
# Answers of a style of their own that call the others (served by the hidden tests), then a
# last cell that searches everything its process can read for the source's solution lines.
OWN_STYLE = {
    "head": "def head(x, W_q, W_k, W_v):\n    return attention_weights(x, W_q, W_k).dot(x.dot(W_v))",
    "multi_head": (
        "def multi_head(x, heads):\n    outs = []\n    for triple in heads:\n"
        "        outs.append(head(x, *triple))\n    return concat_heads(outs)"
    ),
}


def _hunting(rel, sol, ctx):
    nb = notebook.fill(rel, OWN_STYLE)
    helpers = [p.read_text() for p in sorted(lab.ASSIGNMENT.release_dir.glob("*.py"))]
    seen = "\n".join([c.source for c in nb.cells] + helpers)
    source = notebook.read(lab.ROOT / lab.SOURCE)  # its solutions marked, as nbgrader marks them
    cell = hunt.hunting_cell(hunt.solution_lines(source, seen), HUNT_CONTROL)
    nb.cells.append(nbformat.v4.new_code_cell(cell, id="hunt"))
    return _bytes(nb)


HUNT_CONTROL = "outs.append(head(x, *triple))"  #: a line of the hunter's own, in its memory

EXPLOITS = {
    "solution_hunt": Case(
        "head and multi_head in a style of their own, calling the served answers, then a "
        "search of its memory, the processes and the files it can see for the solutions",
        _hunting,
        "ok", "partial",
    ),
    "exploit_fixed_arrays": Case(
        "head, concat_heads and multi_head return a fixed array, whatever their inputs",
        lambda rel, sol, ctx: _bytes(notebook.fill(rel, FIXED)),
        "ok", "zero",
    ),
    "exploit_keeps_reference": Case(
        "concat_heads keeps what it is given and raises; multi_head returns what was kept",
        lambda rel, sol, ctx: _bytes(
            notebook.fill(rel, {"concat_heads": KEEPER_GLUE, "multi_head": KEEPER_MULTI})
        ),
        "ok", "zero",
    ),
    **{
        f"exploit_everything_{kind}": Case(
            f"every function answer returns {kind} of the right shape",
            lambda rel, sol, ctx, kind=kind: _bytes(
                notebook.fill(rel, {a: replaced(a, kind) for a in SHAPES})
            ),
            "ok", "zero",
        )
        for kind in FILLS
    },
}  # fmt: skip

# -------------------------------------------------- floods the grader must bound
HUGE_ERROR = "def blend(weights, values):\n    raise ValueError('x' * 4_000_000)"
FORGED_V0 = """
import base64, json, os, stat, struct

def disagreement(shares_a, shares_b):
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
    return np.zeros(len(shares_a))
"""


def _with_prefix(grade_ids, prefix):
    def build(rel, sol, ctx):
        answers = notebook.answers(_solved(rel, sol))
        return _bytes(notebook.fill(_solved(rel, sol), {g: prefix + answers[g] for g in grade_ids}))

    return build


FLOODS = {
    "flood_big_displays": Case(
        "three cells each display 20 MB",
        _with_prefix(["two_worlds", "wrong_axis", "count_params"], BIG_DISPLAY),
        "ok",
        "as_solution",
    ),
    "flood_many_displays": Case(
        "100,000 display() calls in one cell",
        _with_prefix(["two_worlds"], MANY_DISPLAYS),
        "ok",
        "as_solution",
    ),
    "flood_huge_error": Case(
        "an error message of 4 MB, raised in every test of blend",
        solved_with("blend", HUGE_ERROR),
        "ok",
        "as_baseline",
        stubbed("blend"),
    ),
    "flood_zero_size_array": Case(
        "forged replies holding an array of 10**12 zero-size elements",
        wrong_with(FORGED_V0, fill=False, answer="disagreement"),
        "tampered",
        "no_more_than_wrong",
    ),
}

#: What this lab's hostile class grades (tests/lab/pipeline/test_grader.py): the cases
#: about this lab's own checks (its references, helpers, stand-ins and answers).
LAB_RUNAWAY = {k: RUNAWAY[k] for k in ("runaway_attention", "served_hog")}
LAB_CHEATS = {k: CHEATS[k] for k in ("shadow_helpers", "frame_peeking", "always_equal")}
CASES = {
    **LAB_RUNAWAY, **LAB_CHEATS, **INTEGRITY, **DO_NOTHING, **ALONE, **EXPLOITS,
    "honest_wrong": WRONG,
}  # fmt: skip
#: The failure mix ``make bench`` puts into this lab's class (bench/bench.py). The grader's
#: robustness against such submissions is tested on a toy course, tests/engine/hostile.py.
FAILURES = {**BROKEN, **RUNAWAY, **TAMPERED, **CHEATS, **FLOODS}


def write_case(folder, student_id, data):
    """Write one submission in nbgrader's layout below ``folder``."""
    path = folder / lab.submission_path(student_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


BASELINES = {}  # case id -> the student id of its baseline, once build_class has run


def baseline_id(student_id):
    """The student id a case's baseline is written under (see :data:`BASELINES`)."""
    return f"{student_id}--baseline"


def build_class(folder, release_nb, solution_nb, context, cases=None):
    """Write ``cases`` (default: every case) and their baselines, an honest solution and a victim.

    Returns the student ids written.
    """
    cases = CASES if cases is None else cases
    written = {}  # baseline bytes -> the student id they were written under
    for student_id, case in cases.items():
        write_case(folder, student_id, case.build(release_nb, solution_nb, context))
        if case.baseline:
            baseline = case.baseline(release_nb, solution_nb, context)
            if baseline not in written:  # cases that stub the same answer share one
                written[baseline] = baseline_id(student_id)
                write_case(folder, written[baseline], baseline)
            BASELINES[student_id] = written[baseline]
    for student_id in ("honest", "victim"):
        write_case(folder, student_id, _bytes(_solved(release_nb, solution_nb)))
    return sorted(p.name for p in folder.iterdir())
