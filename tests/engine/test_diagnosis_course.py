"""Every kind of edit the diagnosis names, and every crash rule, on a toy course.

One answer per kind, each with one slip a student could make; graded once
through the real grader and self-checked once, as a student runs
``python -m autograder check``: the page and the self-check name each slip
in its own answer. The table is also run in this process (fast), and read
against the engine's own source, so that a kind of edit or a crash rule added
to the engine without a row here fails.
"""

from __future__ import annotations

import ast
import html
import inspect
import itertools
import linecache
import re
import subprocess
import sys
from typing import Any

import pytest

from autograder.diagnosis import mutants
from autograder.sandbox import crash_reasons

from . import toy

SETUP = '''import numpy as np
from autograder.diagnosis import Mutants, shape_reason

M = np.arange(1.0, 13.0).reshape(3, 4)
N = np.arange(2.0, 17.0).reshape(5, 3) ** 1.5
A = np.random.default_rng(0).normal(size=(3, 3))
B = np.random.default_rng(1).normal(size=(3, 3))
P = np.arange(1.0, 5.0)
Q = np.arange(3.0, 7.0) ** 2


def _check(answer, right, *probes):
    """Raise with the cause when ``answer`` differs from ``right`` on a probe."""
    got = [answer(*p) for p in probes]
    for g, p in zip(got, probes):
        want = right(*p)
        if np.shape(g) != np.shape(want) or not np.allclose(g, want):
            sizes = {"rows": np.shape(want)[0], "columns": np.shape(want)[-1]}
            said = Mutants(right, probes).cause(*got)
            said = said or shape_reason(np.shape(g), np.shape(want), sizes)
            raise AssertionError(said or "wrong values")
'''

#: (answer, its arguments, the right body, a slip's body, the probes, what is said)
#: A one-line body is returned; a longer one is the function's body as written.
EDITS = [
    ("operator", "m", "m / m.sum(axis=-1, keepdims=True)", "m * m.sum(axis=-1, keepdims=True)",
     "(M,), (N,)", "`m * m.sum(axis=-1, keepdims=True)` where it needs `m / m.sum("),
    ("grouping", "m", "(m - 1) / 2", "m - 1 / 2", "(M,), (N,)", "`m - 1 / 2` where it needs"),
    ("keyword_axis", "m", "m / m.sum(axis=-1, keepdims=True)", "m / m.sum(axis=0, keepdims=True)",
     "(M,), (N,)", "`m.sum(axis=0, keepdims=True)` where it needs `m.sum(axis=-1, keepdims=True)`"),
    ("keyword_keepdims", "m", "m.max(axis=1, keepdims=True)", "m.max(axis=1)", "(M,), (N,)",
     "`m.max(axis=1, keepdims=False)` where it needs `m.max(axis=1, keepdims=True)`"),
    ("keyword_k", "m", "np.triu(m, k=1)", "np.triu(m)", "(M,), (N,)",
     "`np.triu(m, k=0)` where it needs `np.triu(m, k=1)`"),
    ("keyword_ord", "m", "np.linalg.norm(m, ord=2, axis=1)", "np.abs(m).sum(axis=1)", "(M,), (N,)",
     "`np.linalg.norm(m, ord=1, axis=1)` where it needs"),
    ("whole_array", "m", "m - m.mean(axis=0)", "m - m.mean()", "(M,), (N,)",
     "`m.mean()` where it needs `m.mean(axis=0)`"),
    ("constant", "a, b", "2 * a + b", "3 * a + b", "(P, Q), (Q, P)",
     "`3 * a` where it needs `2 * a`"),
    ("term_dropped", "m", "(m - m.mean(axis=0)) / (m.std(axis=0) + 1)",
     "(m - m.mean(axis=0)) / m.std(axis=0)", "(M,), (N,)",
     "`m.std(axis=0)` where it needs `m.std(axis=0) + 1`"),
    ("function_dropped", "a, b", "np.sqrt(a * b)", "a * b", "(P, Q), (Q, P)",
     "`a * b` where it needs `np.sqrt(a * b)`"),
    ("transpose", "a, b", "a @ b.T", "a @ b", "(A, B), (B, A)", "`a @ b` where it needs `a @ b.T`"),
    ("swapped", "a, b", "a / (b + 1)", "(b + 1) / a", "(P, Q), (Q, P)",
     "`(b + 1) / a` where it needs `a / (b + 1)`"),
    ("argument", "a, b", "a @ b + a", "a @ a + a", "(A, B), (B, A)",
     "`a @ a` where it needs `a @ b`"),
    ("twin", "m", "m.max(axis=1)", "m.min(axis=1)", "(M,), (N,)",
     "`m.min(axis=1)` where it needs `m.max(axis=1)`"),
    ("shape_transposed", "m", "m / m.sum(axis=-1, keepdims=True)",
     "(m / m.sum(axis=-1, keepdims=True)).T", "(M,), (N,)", "it is transposed"),
    ("shape_axis_lost", "m", "m / m.sum(axis=-1, keepdims=True)", "m.sum(axis=-1)", "(M,), (N,)",
     "axis 1 (size 4 (columns)) is missing"),
]  # fmt: skip
#: the kind of edit each row of EDITS is named by (a wrong shape alone is no edit)
KIND = {
    "operator": "operator", "grouping": "grouping", "keyword_axis": "keyword axis",
    "keyword_keepdims": "keyword keepdims", "keyword_k": "keyword k", "keyword_ord": "keyword ord",
    "whole_array": "keyword axis", "constant": "constant", "term_dropped": "dropped",
    "function_dropped": "dropped", "transpose": "transpose", "swapped": "swapped",
    "argument": "name", "twin": "function",
}  # fmt: skip
CRASHES = [
    ("matmul", "a, b", "a @ b.T", "a @ b", "(M, M),", "Why: a matrix product lines up the left"),
    ("dot", "a, b", "np.dot(a, b.T)", "np.dot(a, b)", "(M, M),", "b.T is (4, 3), which would fit"),
    ("broadcast", "m", "m / m.sum(axis=1, keepdims=True)", "m / m.sum(axis=1)", "(M,),",
     "Why: numpy lines two shapes up from the right"),
    ("broadcast_where", "m", "np.where(m > 5, m, m.sum(axis=1, keepdims=True))",
     "np.where(m > 5, m, m.sum(axis=1))", "(M,),", "Why: np.where lines up m with m.sum(axis=1)"),
    ("join", "m", "np.concatenate([m, m], axis=1)", "np.concatenate([m, m.T], axis=1)", "(M,),",
     "joining along axis 1 needs every other axis to agree"),
    ("stack", "m", "np.stack([m, m])", "np.stack([m, m.T])", "(M,),",
     "np.stack needs pieces of one shape"),
    ("reshape", "m", "m.reshape(2, -1)", "m.reshape(5, 4)", "(M,),",
     "a reshape keeps every entry: m is (3, 4), 12 entries"),
    ("axis", "m", "m.sum(axis=1)", "m.sum(axis=2)", "(M,),",
     "m has 2 axes (0, 1; or -1 for the last)"),
    ("index", "m", "m[2]", "m[3]", "(M,),",
     "m is (3, 4) (axis 0 has 3, axis 1 has 4); indices start"),
    ("none", "m", "np.sort(m - m.mean(), axis=None)[0]",
     "centre = m - m.mean()\n    top = centre.sort()\n    return top[0]", "(M,),",
     "top holds None: a function that ends without `return`"),
    ("method", "m", "m / m.sum()", "m / m.sum", "(M,),",
     "m.sum is the method itself, not what it computes: call it, m.sum()"),
    ("float_size", "m", "m.reshape(m.shape[0], 2, m.shape[1] // 2)",
     "m.reshape(m.shape[0], 2, m.shape[1] / 2)", "(M,),",
     "m.shape[1] / 2 holds the float 2.0, where a size or an index must be an int"),
    ("key", "m", "m.sum(axis={'rows': 0, 'columns': 1}['rows'])",
     "axes = {'rows': 0, 'columns': 1}\n    return m.sum(axis=axes['row'])", "(M,),",
     "axes has no key 'row' (did you mean 'rows'?)"),
    ("no_rule", "m", "m / max(len(m), 1)", "empty = len(m[:0])\n    return m / (len(m) // empty)",
     "(M,),", "len(m) // empty: empty is the int 0"),
]  # fmt: skip
#: the rule of crash_reasons each row of CRASHES is explained by ("" for none)
RULE = {
    "matmul": "_matmul", "dot": "_matmul", "broadcast": "_broadcast",
    "broadcast_where": "_broadcast_all", "join": "_join", "stack": "_join",
    "reshape": "_reshape", "axis": "_axis", "index": "_index", "none": "_wrong_kind",
    "method": "_wrong_kind", "float_size": "_not_an_int", "key": "_missing_key", "no_rule": "",
}  # fmt: skip
ROWS = EDITS + CRASHES
#: an answer cell that crashes on its own, outside any function
TOP_LEVEL = ("totals = np.ones((4, 3)).sum(axis=1)", "totals = np.ones((4, 3)).sum(axis=3)",
             "np.ones((4, 3)) is a (4, 3) array of floats")  # fmt: skip


def _body(body: str) -> str:
    return body if "\n" in body else f"return {body}"


def _answer(name: str, args: str, body: str) -> str:
    return f"def {name}({args}):\n    {_body(body)}"


def _test(name: str, args: str, right: str, probes: str) -> str:
    return f"# checks: {name}\n{_answer(f'_right_{name}', args, right)}\n\n" \
           f"_check({name}, _right_{name}, {probes})"  # fmt: skip


# ---- in this process: each row is named as the table says ---------------------------------

_cells = itertools.count(1)


def _run_cell(source: str, space: dict[str, Any]) -> None:
    """Run ``source`` as a notebook cell runs (its file name is what marks it the student's)."""
    filename = f"<ipython-input-{next(_cells)}-5a17ed>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), space)


@pytest.fixture(scope="module")
def space() -> dict[str, Any]:
    names: dict[str, Any] = {}
    _run_cell(SETUP, names)
    return names


@pytest.mark.parametrize("row", EDITS, ids=[r[0] for r in EDITS])
def test_each_slip_is_named_by_its_kind_of_edit(row: tuple[str, ...], space: dict[str, Any]):
    name, args, right, wrong, probes, said = row
    _run_cell(_answer(name, args, wrong), space)
    with pytest.raises(AssertionError) as caught:
        _run_cell(_test(name, args, right, probes), space)
    assert said in str(caught.value)
    if name in KIND:
        found = mutants.Mutants(space[f"_right_{name}"], eval(f"[{probes}]", space))
        edits = found.edits(*[space[name](*p) for p in eval(f"[{probes}]", space)])[0]
        assert {e.kind for e in edits} == {KIND[name]}, edits


@pytest.mark.parametrize("row", CRASHES, ids=[r[0] for r in CRASHES])
def test_each_crash_is_explained_by_its_rule(
    row: tuple[str, ...], space: dict[str, Any], monkeypatch: pytest.MonkeyPatch
):
    name, args, right, wrong, probes, said = row
    called: list[str] = []
    for rule in _rules():
        real = getattr(crash_reasons, rule)
        monkeypatch.setattr(crash_reasons, rule, _spy(real, rule, called))
    _run_cell(_answer(name, args, wrong), space)
    with pytest.raises(Exception) as caught:
        _run_cell(_test(name, args, right, probes), space)
    why = crash_reasons.explain(caught.value)
    assert said in why, why
    assert ("Why:" in why) == bool(RULE[name])
    if RULE[name]:
        assert called[-1] == RULE[name], called


def _spy(real: Any, rule: str, called: list[str]) -> Any:
    def spied(*args: Any, **kwargs: Any) -> Any:
        said = real(*args, **kwargs)
        if said:
            called.append(rule)
        return said

    return spied


def _rules() -> set[str]:
    """The rules crash_reasons' dispatcher can return, read from its source."""
    return set(re.findall(r"return (_\w+)\(", inspect.getsource(crash_reasons._rule)))


def _kinds() -> set[str]:
    """Every kind of edit mutants.py makes, read from its source."""
    kinds = {
        node.value.elts[-1].value
        for node in ast.walk(ast.parse(inspect.getsource(mutants)))
        if isinstance(node, ast.Yield)
        and isinstance(node.value, ast.Tuple)
        and isinstance(node.value.elts[-1], ast.Constant)
    }  # yield (how to edit, "kind"); a keyword's kind is "keyword <its name>"
    return kinds | {f"keyword {k}" for k in mutants.KEYWORD_VALUES}


def test_the_table_has_a_row_for_every_kind_of_edit_and_every_rule():
    """A kind of edit or a crash rule the engine gains without a row here fails this test."""
    assert len(_kinds()) >= 12 and len(_rules()) >= 9  # the source is still read right
    assert _kinds() == set(KIND.values())
    assert _rules() == {r for r in RULE.values() if r}


# ---- through the real grader and the self-check --------------------------------------------


def _course_cells(solved: bool) -> list[Any]:
    cells = [toy.cell(SETUP, "setup", "locked")]
    for name, args, right, wrong, probes, _ in ROWS:
        body = _body(right) if solved else _body(wrong)
        answer = f"def {name}({args}):\n" + (
            f"    ### BEGIN SOLUTION\n    {body}\n    ### END SOLUTION" if solved else f"    {body}"
        )
        cells.append(toy.cell(answer, name, "answer"))
        cells.append(toy.cell(_test(name, args, right, probes), f"test_{name}", "test", 1))
    right, wrong, _ = TOP_LEVEL
    top = f"### BEGIN SOLUTION\n{right}\n### END SOLUTION" if solved else wrong
    cells.append(toy.cell(f"# checks: totals (it crashes itself)\n{top}", "totals", "answer"))
    cells.append(toy.cell("# checks: test_totals\nassert totals.shape == (4,)", "test_totals",
                          "test", 1))  # fmt: skip
    cells.append(toy.cell(
        "# checks: hidden\n### BEGIN HIDDEN TESTS\n"
        "_check(operator, _right_operator, (N.T,), (M.T,))\n### END HIDDEN TESTS",
        "test_operator_hidden", "test", 1,
    ))  # fmt: skip
    return cells


def _parts(text: str, marker: str) -> dict[str, str]:
    """``{name: the text after marker + name up to the next marker}``."""
    pieces = text.split(marker)[1:]
    return {piece.split()[0].strip("<>/\"'"): piece for piece in pieces}


@pytest.mark.slow
def test_a_toy_course_names_every_slip_and_crash_on_the_page_and_in_the_self_check(tmp_path):
    course = toy.write_course(tmp_path / "course", "kinds-1", {"kinds.ipynb": _course_cells(True)})
    done, out = toy.grade_class(
        course, "kinds-1", "kinds.ipynb", {"ada": _course_cells(False)}, tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page = html.unescape(re.sub(r"<[^>]+>", "", (out / "feedback" / "ada.html").read_text()))
    on_page = _parts(page, "# checks: ")
    expected = {row[0]: row[-1] for row in ROWS} | {"totals": TOP_LEVEL[2]}
    for name, said in expected.items():
        assert said in on_page[name], (name, said, on_page[name][:3000])
    assert "m * m.sum(axis=-1, keepdims=True)" in on_page["hidden"]
    for name, _, _, wrong, _, _ in CRASHES:  # the student's own line is shown
        assert wrong.splitlines()[-1].strip() in on_page[name], name

    checked = subprocess.run(
        [sys.executable, "-m", "autograder", "check",
         str(tmp_path / "subs" / "ada" / "kinds-1" / "kinds.ipynb"), "--course", str(course)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert checked.returncode == 1, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.split(" ")[0] in expected]
    said_for = {
        lines[i].split(" ")[0]: "\n".join(lines[i:j])
        for i, j in zip(starts, [*starts[1:], len(lines)])
    }
    for name, said in expected.items():
        assert "failing" in said_for[name] and said in said_for[name], (name, said_for[name])
