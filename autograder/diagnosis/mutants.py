"""Naming a wrong answer by the one edit of the reference that gives it.

A hidden test holds the reference computation. :func:`mutants` reads its
source and makes every single-edit variant a student could write: an
operator swapped (``*``/``@``, ``/``/``//``, ``+``/``-``, ``*``/``/``), the
grouping of two operators changed, a keyword argument dropped or changed
(``axis``, ``keepdims``, ``k``, ``ord``), a factor or a term dropped, an
integer off by one, a transpose added or removed, two arguments swapped, a
function swapped for its twin (``max``/``min``, ``triu``/``tril``) or dropped
(``np.sqrt(d)`` as ``d``). A mutation library's operator set (mutmut's,
cosmic-ray's) is the model; those libraries mutate files on disk and run test
suites, where this needs each mutant as a function called in memory.

:class:`Mutants` runs every mutant once on the test's probe inputs (cached for
the process: every submission of a class is probed alike) and keeps the
fingerprint of its output. An answer whose values equal the mutants of one
edit on every probe is named by that edit, in the reference's own terms::

    your answer behaves as the right computation would with
    `s.max(axis=0, keepdims=True)` where it needs `s.max(axis=-1, keepdims=True)`

Two different edits that give the same values are named together; more than
two, or none, name nothing: a hint is given only when it is the explanation.
Everything here runs in the grader's trusted process: the reference and its
mutants never reach a student's process, and a page shows only the edited
expression. Write references in the lesson's names (``q``, ``scores``), the
names a student knows.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
import logging
import textwrap
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

_log = logging.getLogger(__name__)

#: operators a student may write for each other
SWAPS: dict[type, tuple[type, ...]] = {
    ast.Mult: (ast.MatMult, ast.Div),
    ast.MatMult: (ast.Mult,),
    ast.Div: (ast.FloorDiv, ast.Mult),
    ast.FloorDiv: (ast.Div,),
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
}
SYMBOL = {ast.Mult: "*", ast.MatMult: "@", ast.Div: "/", ast.FloorDiv: "//", ast.Add: "+",
          ast.Sub: "-", ast.Pow: "**", ast.Mod: "%"}  # fmt: skip
PRECEDENCE = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.MatMult: 2, ast.Div: 2, ast.FloorDiv: 2,
              ast.Mod: 2, ast.Pow: 3}  # fmt: skip
#: a keyword's other values a student may give
KEYWORD_VALUES: dict[str, tuple[Any, ...]] = {
    "axis": (0, 1, -1, -2, None),
    "keepdims": (True, False),
    "k": (-1, 0, 1, 2),
    "ord": (1, 2, None),
}
#: functions and methods a student may write for each other
TWINS = {"max": "min", "min": "max", "argmax": "argmin", "argmin": "argmax", "sum": "mean",
         "mean": "sum", "triu": "tril", "tril": "triu", "hstack": "vstack", "vstack": "hstack",
         "maximum": "minimum", "minimum": "maximum"}  # fmt: skip
#: functions a student may leave out, keeping their argument
DROPPABLE = {"sqrt", "exp", "abs", "log", "transpose", "squeeze"}
#: methods that reduce an array, which a student may leave out
REDUCTIONS = {"sum", "mean", "max", "min", "prod"}
MAX_MUTANTS = 600  #: a reference with more single edits keeps the first this many (source order)
SHOWN = 72  #: characters of an edited expression shown; a longer one shows only the edit


@dataclass(frozen=True)
class Edit:
    """One edit of the reference: the expression as the reference has it and as edited.

    kind: what was done ("operator", "grouping", "keyword axis" (one keyword's value
    or its absence), "dropped", "constant", "transpose", "swapped", "function", "name").
    Edits of one expression and one kind that give the same values are one mistake
    said several ways (``axis=0`` and ``axis=-2`` of a table, ``-1 + 1`` and ``0``).
    """

    kind: str
    was: str
    now: str

    def sentence(self) -> str:
        """How a student hears it."""
        return f"your answer behaves as the right computation would with `{self.now}` where " \
               f"it needs `{self.was}`"  # fmt: skip


@dataclass
class Mutant:
    """An edit and the function it makes."""

    edit: Edit
    function: Callable[..., Any]


def reference_tree(reference: Callable[..., Any]) -> ast.FunctionDef:
    """The reference's definition, parsed from its source (decorators left out)."""
    source = textwrap.dedent(inspect.getsource(reference))
    tree = ast.parse(source)
    found = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    found.decorator_list = []
    return found  # type: ignore[return-value]


def mutants(reference: Callable[..., Any]) -> list[Mutant]:
    """Every single-edit variant of ``reference``, compiled, in source order (at most
    :data:`MAX_MUTANTS`); variants that do not compile are left out."""
    tree = reference_tree(reference)
    made: list[Mutant] = []
    seen: set[str] = set()
    for edited, edit in _edits(tree):
        if len(made) >= MAX_MUTANTS:
            break
        text = ast.unparse(edited)
        if text in seen:
            continue
        seen.add(text)
        function = _compile(edited, reference)
        if function is not None:
            made.append(Mutant(edit, function))
    return made


def _compile(tree: ast.FunctionDef, reference: Callable[..., Any]) -> Callable[..., Any] | None:
    module = ast.Module(body=[tree], type_ignores=[])
    ast.fix_missing_locations(module)
    space = dict(reference.__globals__)
    if reference.__closure__:
        for name, cell in zip(reference.__code__.co_freevars, reference.__closure__):
            try:
                space[name] = cell.cell_contents
            except ValueError:
                return None
    try:
        exec(compile(module, f"<mutant of {reference.__name__}>", "exec"), space)
    except Exception:
        return None
    return space[tree.name]


def _edits(tree: ast.FunctionDef) -> Iterator[tuple[ast.FunctionDef, Edit]]:
    """Each edited copy of ``tree`` and its :class:`Edit`."""
    params = [a.arg for a in tree.args.args]
    for node in ast.walk(tree):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            node.operand._negated = True  # type: ignore[attr-defined]
    nodes = [n for statement in tree.body for n in ast.walk(statement)]
    # An edit inside a while loop may keep it from ending, in the grader's own process:
    # nothing there is edited (a for loop over a range always ends).
    looping = {id(n) for w in nodes if isinstance(w, ast.While) for n in ast.walk(w)}
    for index, node in enumerate(nodes):
        if id(node) in looping:
            continue
        for replace, kind in _node_edits(node, params):
            edited = copy.deepcopy(tree)
            target = [n for s in edited.body for n in ast.walk(s)][index]
            parent, field, position = _parent(edited, target)
            if parent is None:
                continue
            shown = _shown(edited, target, parent)
            was = _unparse(shown)
            new = replace(target)
            if kind == "constant" and _identity(parent, field, new):
                continue  # x + 0 is x with the term dropped, an edit of its own
            if position is None:
                setattr(parent, field, new)
            else:
                getattr(parent, field)[position] = new
            now = _unparse(new if shown is target else shown)
            if now != was:
                yield edited, _edit(kind, (was, _unparse(target)), (now, _unparse(new)))


def _identity(parent: ast.AST, field: str, new: ast.AST) -> bool:
    """Is ``new``, put in ``parent``'s ``field``, a number that leaves the operation
    doing nothing (``x + 0``, ``x - 0``, ``x * 1``, ``1 * x``, ``x / 1``, ``x ** 1``)?"""
    if not isinstance(parent, ast.BinOp) or not isinstance(new, ast.Constant):
        return False
    op, value = type(parent.op), new.value
    if value == 0:
        return op is ast.Add or (op is ast.Sub and field == "right")
    if value == 1:
        return op is ast.Mult or (op in (ast.Div, ast.FloorDiv, ast.Pow) and field == "right")
    return False


def _shown(tree: ast.AST, target: ast.AST, parent: ast.AST) -> ast.AST:
    """The expression a student sees an edit of ``target`` in: ``target`` itself when it is
    an operation, else the expression around it (a number alone says nothing)."""
    if isinstance(target, (ast.BinOp, ast.Call)):
        return target
    while isinstance(parent, (ast.keyword, ast.Slice, ast.Tuple, ast.UnaryOp)):
        parent, _, _ = _parent(tree, parent)
    simple = (ast.expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)
    return parent if isinstance(parent, simple) else target


def _edit(kind: str, was: tuple[str, str], now: tuple[str, str]) -> Edit:
    """The edit shown as its context if short enough, else as the edited node alone."""
    if len(was[0]) <= SHOWN and len(now[0]) <= SHOWN:
        return Edit(kind, was[0], now[0])
    return Edit(kind, was[1], now[1])


def _unparse(node: ast.AST) -> str:
    if isinstance(node, ast.keyword):
        return f"{node.arg}={ast.unparse(node.value)}"
    return ast.unparse(node)


def _parent(tree: ast.AST, target: ast.AST) -> tuple[Any, str, int | None]:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is target:
                return parent, field, None
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is target:
                        return parent, field, i
    return None, "", None


Replace = Callable[[Any], ast.AST]


def _node_edits(node: ast.AST, params: list[str]) -> Iterator[tuple[Replace, str]]:
    """(how to replace ``node``, the kind of edit) for each edit of ``node``; params: the
    reference's arguments, which a student may use for each other."""
    if isinstance(node, ast.BinOp):
        yield from _binop_edits(node)
    if isinstance(node, ast.Call):
        yield from _call_edits(node)
    if _integer(node) is not None:
        for delta in (-1, 1):
            yield partial(_shifted, delta=delta), "constant"
    if isinstance(node, ast.Attribute) and node.attr == "T":
        yield (lambda n: n.value), "transpose"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield (lambda n: n.operand), "constant"
    if isinstance(node, ast.Name) and node.id in params and isinstance(node.ctx, ast.Load):
        for other in params:
            if other != node.id:
                yield partial(_named, name=other), "name"


def _integer(node: ast.AST) -> int | None:
    """The integer ``node`` writes (``3``, or ``-1`` as Python parses it), else None; the
    ``1`` inside ``-1`` is not one of its own (its edits are the whole number's)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value if not getattr(node, "_negated", False) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) is int:
            return -operand.value
    return None


def _shifted(node: ast.AST, delta: int) -> ast.expr:
    return _number((_integer(node) or 0) + delta)


def _named(node: ast.AST, name: str) -> ast.expr:
    return ast.Name(name, ast.Load())


def _number(value: int) -> ast.expr:
    return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))


def _binop_edits(node: ast.BinOp) -> Iterator[tuple[Replace, str]]:
    for other in SWAPS.get(type(node.op), ()):
        yield partial(_operator, op=other), "operator"
    yield (lambda n: n.left), "dropped"
    if not isinstance(node.op, (ast.Sub, ast.Div, ast.FloorDiv, ast.Pow, ast.Mod)):
        yield (lambda n: n.right), "dropped"
    if not isinstance(node.op, (ast.Add, ast.Mult)):
        yield (lambda n: ast.BinOp(n.right, n.op, n.left)), "swapped"
    if isinstance(node.op, ast.MatMult):
        for side in ("left", "right"):
            yield partial(_transposed, side=side), "transpose"
    yield from _regroupings(node)


def _operator(node: ast.BinOp, op: type) -> ast.BinOp:
    return ast.BinOp(node.left, op(), node.right)


def _transposed(node: ast.BinOp, side: str) -> ast.BinOp:
    operand = getattr(node, side)
    if isinstance(operand, ast.Attribute) and operand.attr == "T":
        return node  # removing it is its own edit
    new = ast.BinOp(node.left, node.op, node.right)
    setattr(new, side, ast.Attribute(operand, "T", ast.Load()))
    return new


def _regroupings(node: ast.BinOp) -> Iterator[tuple[Replace, str]]:
    """a op (b op2 c) read as (a op b) op2 c, and the other way round: a grouping a
    student's missing or extra parentheses give."""
    right, left = node.right, node.left
    if isinstance(right, ast.BinOp) and type(right.op) in PRECEDENCE:
        yield (
            (lambda n: ast.BinOp(ast.BinOp(n.left, n.op, n.right.left), n.right.op, n.right.right)),
            "grouping",
        )
    if isinstance(left, ast.BinOp) and type(left.op) in PRECEDENCE:
        yield (
            (lambda n: ast.BinOp(n.left.left, n.left.op, ast.BinOp(n.left.right, n.op, n.right))),
            "grouping",
        )


def _call_edits(node: ast.Call) -> Iterator[tuple[Replace, str]]:
    for i, keyword in enumerate(node.keywords):
        if keyword.arg is None:
            continue
        slot = f"keyword {keyword.arg}"
        values = KEYWORD_VALUES.get(keyword.arg, ())
        # A value said is clearer than a keyword left out (k=0 rather than no k), but a
        # reduction over everything reads best as the call without its axis.
        for value in [v for v in values if v is not None]:  # its own value is no edit
            yield partial(_keyword_set, index=i, value=value), slot
        yield partial(_keyword_dropped, index=i), slot
        if None in values:
            yield partial(_keyword_set, index=i, value=None), slot
    if len(node.args) >= 2:
        for i in range(len(node.args) - 1):
            for j in range(i + 1, len(node.args)):
                yield partial(_args_swapped, i=i, j=j), "swapped"
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name in TWINS:
        yield (lambda n: _renamed(n, TWINS[name])), "function"
    if name in DROPPABLE and len(node.args) == 1 and not node.keywords:
        yield (lambda n: n.args[0]), "dropped"
    if name in REDUCTIONS and isinstance(node.func, ast.Attribute):
        yield (lambda n: n.func.value), "dropped"  # the reduction left out: a.sum(axis=1) as a
    if name == "transpose" and isinstance(node.func, ast.Attribute) and not node.args:
        yield (lambda n: n.func.value), "transpose"


def _keyword_set(node: ast.Call, index: int, value: Any) -> ast.Call:
    keywords = list(node.keywords)
    keywords[index] = ast.keyword(keywords[index].arg, ast.Constant(value))
    return _with_keywords(node, keywords)


def _keyword_dropped(node: ast.Call, index: int) -> ast.Call:
    return _with_keywords(node, node.keywords[:index] + node.keywords[index + 1 :])


def _args_swapped(node: ast.Call, i: int, j: int) -> ast.Call:
    return _with_args(node, _swap(node.args, i, j))


def _with_keywords(node: ast.Call, keywords: list[ast.keyword]) -> ast.Call:
    return ast.Call(node.func, list(node.args), keywords)


def _with_args(node: ast.Call, args: list[ast.expr]) -> ast.Call:
    return ast.Call(node.func, args, list(node.keywords))


def _swap(items: list[ast.expr], i: int, j: int) -> list[ast.expr]:
    items = list(items)
    items[i], items[j] = items[j], items[i]
    return items


def _renamed(node: ast.Call, name: str) -> ast.Call:
    func = copy.copy(node.func)
    if isinstance(func, ast.Attribute):
        func.attr = name
    else:
        func.id = name  # type: ignore[attr-defined]
    return ast.Call(func, list(node.args), list(node.keywords))


def _as_array(value: Any) -> np.ndarray | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return None
    return array


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Do ``a`` and ``b`` hold the same numbers (nan and inf alike where both have them)?"""
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            if not (np.isnan(a) == np.isnan(b)).all() or not (np.isinf(a) == np.isinf(b)).all():
                return False
            a, b = np.nan_to_num(a), np.nan_to_num(b)
        return bool((np.abs(a - b) <= 1e-8 + 1e-6 * np.abs(b)).all())


def _key(value: Any) -> str:
    """A hash of a probe's arrays and numbers: the same probe, whatever object holds it."""
    digest = hashlib.sha256()

    def add(item: Any) -> None:
        if isinstance(item, (list, tuple)):
            digest.update(f"{type(item).__name__}{len(item)}(".encode())
            for x in item:
                add(x)
            digest.update(b")")
        elif isinstance(item, np.ndarray):
            digest.update(f"a{item.dtype}{item.shape}".encode())
            digest.update(np.ascontiguousarray(item).tobytes())
        else:
            digest.update(repr(item).encode())

    add(value)
    return digest.hexdigest()


_fingerprints: dict[tuple[str, str], list[tuple[Edit, np.ndarray]]] = {}
_made: dict[str, list[Mutant]] = {}
MAX_KEPT = 64  #: references and probes whose fingerprints a process keeps


class Mutants:
    """The single-edit variants of a reference and what each gives on the test's probes.

    references: the test's own function, or several equivalent ones written as
    students write it (``weights @ values`` and ``(weights[:, None] * values).sum(0)``):
    a student's slip is one edit of the form *they* wrote. Each must be a ``def``
    whose source can be read. probes: argument tuples the test calls the answer
    with. Mutants that raise, give no numbers, or give the right values on a
    probe are left out of that probe's fingerprints.
    """

    def __init__(
        self,
        references: Callable[..., Any] | Sequence[Callable[..., Any]],
        probes: Sequence[tuple[Any, ...]],
    ) -> None:
        self.references = [references] if callable(references) else list(references)
        self.probes = [tuple(p) for p in probes]
        expected = [_as_array(_run(self.references[0], probe)) for probe in self.probes]
        self.prints = []
        for reference in self.references:
            try:
                self.prints.append(
                    [_fingerprint(reference, probe, right)
                     for probe, right in zip(self.probes, expected)]
                )  # fmt: skip
            except (OSError, TypeError, SyntaxError, StopIteration):
                # no source to read (a lambda, a function typed at a prompt): it names nothing
                _log.warning(f"cannot read the source of {reference!r}: no diagnosis from it")

    def edits(self, *got: Any) -> list[list[Edit]]:
        """For each reference, the edits whose mutants equal ``got`` (one answer per
        probe) on every probe, one per expression of the reference edited."""
        answers = [_as_array(g) for g in got]
        if len(answers) != len(self.probes) or any(a is None for a in answers):
            return [[] for _ in self.references]
        return [_matching(answers, prints) for prints in self.prints]  # type: ignore[arg-type]

    def cause(self, *got: Any) -> str:
        """The one edit (or two) that gives ``got`` on the probes, in words; "" if none, or
        if more than two edits of one reference give it (no single explanation). The
        first reference that explains it speaks."""
        for found in self.edits(*got):
            if len(found) == 1:
                return found[0].sentence()
            if len(found) == 2:
                return f"{found[0].sentence()}, or with `{found[1].now}` where it needs " \
                       f"`{found[1].was}` (both give these values)"  # fmt: skip
        return ""


def _matching(answers: list[np.ndarray], prints: list[list[tuple[Edit, np.ndarray]]]) -> list[Edit]:
    matching: dict[Edit, int] = {}
    for answer, outputs in zip(answers, prints):
        for edit, output in outputs:
            if same(answer, output):
                matching[edit] = matching.get(edit, 0) + 1
    full = [edit for edit, count in matching.items() if count == len(answers)]
    # Edits of one expression and kind that give the same values are one mistake said
    # several ways (axis=0 and axis=-2 of a table; a - a and b - b, a table against
    # itself): the first made says it. Operands dropped or swapped are each a mistake of
    # its own (3 * n without the 3, or without the n, when n is 3).
    distinct: dict[tuple[str, str], Edit] = {}
    for edit in full:
        merged = edit.kind.startswith(("keyword", "constant", "name"))
        key = (edit.was, edit.kind if merged else edit.now)
        distinct.setdefault(key, edit)
    return list(distinct.values())


def _mutants_of(reference: Callable[..., Any]) -> tuple[str, list[Mutant]]:
    """The reference's source and its mutants, made once per process."""
    source = textwrap.dedent(inspect.getsource(reference))
    made = _made.get(source)
    if made is None:
        made = mutants(reference)
        if len(_made) < MAX_KEPT:
            _made[source] = made
    return source, made


def _fingerprint(
    reference: Callable[..., Any], probe: tuple[Any, ...], expected: np.ndarray | None
) -> list[tuple[Edit, np.ndarray]]:
    """Each mutant's output on ``probe`` that differs from ``expected`` (cached)."""
    source, made = _mutants_of(reference)
    key = (source, _key(probe))
    found = _fingerprints.get(key)
    if found is not None:
        return found
    found = []
    for mutant in made:
        output = _as_array(_run(mutant.function, probe))
        if output is None or output.dtype == object:
            continue
        if expected is not None and same(output, expected):
            continue  # an equivalent edit names nothing
        found.append((mutant.edit, output))
    if len(_fingerprints) < MAX_KEPT:
        _fingerprints[key] = found
    return found


def _run(function: Callable[..., Any], probe: tuple[Any, ...]) -> Any:
    """``function(*probe)`` on copies of the probe; None if it raises."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return function(*copy.deepcopy(probe))
        except Exception:
            return None
