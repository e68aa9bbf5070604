"""Why the student's code crashed, said with the student's own names and shapes.

numpy's messages name shapes but not which of the student's arrays had them
("matmul: Input operand 1 has a mismatch in its core dimension 0 ...");
Python's name a type but not the name that held it. :func:`explain` reads the
failing operation from the student's own frame, as friendly-traceback does for
Python's errors: the exact expression Python 3.11 points at (its column
positions), the values its operands hold, and the rule they broke, for example::

    q @ k: q is (4, 3), k is (4, 3).
    Why: a matrix product lines up the left's last axis with the right's
    second-to-last: 3 against 4. k.T is (3, 4), which would fit.

It runs in the student's process, after the error, on the student's own
values (friendly-traceback itself is a large library for Python's errors and
knows no array shapes). Operands are only *read*: names, attributes of arrays,
subscripts, arithmetic on arrays and a fixed list of numpy functions that
change nothing (no random draws, no student function is called again). Any
failure to explain gives no explanation, never a second error. numpy is never
imported here: without it in ``sys.modules`` the student's code holds no array.
"""

from __future__ import annotations

import ast
import builtins
import linecache
import sys
import types
from typing import Any

#: numpy functions an explanation may call again to learn an operand's shape: pure, cheap
PURE_NUMPY = frozenset(
    "abs absolute arange array asarray concatenate cos diag dot einsum exp eye full hstack "
    "log matmul max maximum mean min minimum moveaxis ones outer reshape sin sqrt squeeze "
    "stack sum swapaxes tanh transpose tril triu var vstack where zeros zeros_like ones_like "
    "expand_dims column_stack".split()
)
#: methods of an array an explanation may call again
PURE_METHODS = frozenset(
    "reshape transpose swapaxes sum max min mean std var astype copy squeeze".split()
)
#: array attributes safe to read
ARRAY_ATTRIBUTES = frozenset("T shape ndim size dtype real imag".split())
JOINS = {"concatenate", "hstack", "vstack", "stack", "column_stack"}
ELEMENTWISE = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow, ast.Mod)
#: how the student's cells' code is named: IPython's shell (the sandbox's) and, added by
#: the self-check in a student's Jupyter, ipykernel's temporary folder
CELL_FILES: tuple[str, ...] = ("<ipython-input-",)
MAX_ENTRIES = 10_000_000  #: arithmetic is not redone on operands larger than this
UNKNOWN = object()  #: what :meth:`Reader.value` gives for an operand it will not read


def explain(error: BaseException, frames: list[types.TracebackType] | None = None) -> str:
    """The explanation of ``error`` in the student's last frame, or "" when none is sure.

    Lines: the operands of the failing expression and what they hold, then
    ``Why:`` and the rule they broke, when the error is one whose rule is known.
    frames: the part of the traceback that ran the student's code, where the caller
    knows it (a test's own code runs in cells too); by default all of it.
    """
    try:
        return _explain(error, frames)
    except Exception:  # an explanation is a courtesy: never a second error
        return ""


def _explain(error: BaseException, frames: list[types.TracebackType] | None) -> str:
    found = _student_frame(error, frames)
    if found is None:
        return ""
    frame, node = found
    reader = Reader(frame)
    why = _rule(error, node, reader)
    operands = _operands(node, reader)
    lines = [f"{_code(node)}: {operands}." if operands else ""]
    if why:
        lines.append(f"Why: {why}")
    return "\n".join(line for line in lines if line)


def _student_frame(
    error: BaseException, frames: list[types.TracebackType] | None = None
) -> tuple[types.FrameType, ast.AST] | None:
    """The last frame of the student's cells in ``error``'s traceback (or ``frames``), and the
    expression it was running (the smallest node of its statement that covers Python's
    position)."""
    if frames is None:
        frames, tb = [], error.__traceback__
        while tb is not None:
            frames.append(tb)
            tb = tb.tb_next
    last = None
    for tb in frames:
        if tb.tb_frame.f_code.co_filename.startswith(CELL_FILES):
            last = tb
    if last is None:
        return None
    code = last.tb_frame.f_code
    positions = list(code.co_positions())
    index = last.tb_lasti // 2
    if not 0 <= index < len(positions) or None in positions[index]:
        return None
    line, end_line, col, end_col = positions[index]
    source = "".join(linecache.getlines(code.co_filename))
    tree = ast.parse(source)
    best = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or getattr(node, "end_lineno", None) is None:
            continue
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        if start <= (line, col) and (end_line, end_col) <= end:
            if best is None or _span(node) < _span(best):
                best = node
    return (last.tb_frame, best) if best is not None else None


def _span(node: Any) -> tuple[int, int]:
    return (node.end_lineno - node.lineno, node.end_col_offset - node.col_offset)


def _code(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


def _numpy() -> Any:
    return sys.modules.get("numpy")


def _is_array(value: Any) -> bool:
    np = _numpy()
    return np is not None and isinstance(value, np.ndarray)


def describe(value: Any) -> str:
    """What ``value`` is, as a student would say it: "(4, 3) floats", "None", "the int 3"."""
    np = _numpy()
    if _is_array(value):
        kind = {"f": "floats", "i": "ints", "u": "ints", "b": "booleans", "c": "complex"}.get(
            value.dtype.kind, str(value.dtype)
        )
        return f"a {value.shape} array of {kind}" if value.ndim else f"a 0-d array ({value!r})"
    if value is None:
        return "None"
    if np is not None and isinstance(value, np.generic):
        return f"the number {value!r}"
    if isinstance(value, bool):
        return f"{value}"
    if isinstance(value, (int, float)):
        return f"the {type(value).__name__} {value!r}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)}: [{inner}]"
    if isinstance(value, types.FunctionType):
        return f"the function {value.__name__} (not its result: call it)"
    if _is_method(value):
        return f"the method .{value.__name__} (not its result: call it, with ())"
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:6]) + (", ..." if len(value) > 6 else "")
        return f"a dict with the keys {keys}" if value else "an empty dict"
    if isinstance(value, types.ModuleType):
        return f"the module {value.__name__}"
    return f"a {type(value).__name__}"


class Reader:
    """Reads an expression's value in a frame without changing anything."""

    def __init__(self, frame: types.FrameType) -> None:
        self.frame = frame

    def value(self, node: ast.AST) -> Any:
        """The value of ``node`` in the frame, or ``UNKNOWN`` if reading it could change
        something, or fails."""
        try:
            return self._value(node)
        except Exception:
            return UNKNOWN

    def _value(self, node: ast.AST) -> Any:  # noqa: C901 -- one case per kind of node
        np = _numpy()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            for space in (self.frame.f_locals, self.frame.f_globals, vars(builtins)):
                if node.id in space:
                    return space[node.id]
            return UNKNOWN
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self._value(e) for e in node.elts]
            if any(item is UNKNOWN for item in items):
                return UNKNOWN
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = self._value(node.operand)
            return -operand if _small(operand) else UNKNOWN
        if isinstance(node, ast.Attribute):
            base = self._value(node.value)
            if isinstance(base, types.ModuleType) or (
                _is_array(base) and node.attr in ARRAY_ATTRIBUTES | PURE_METHODS
            ):
                return getattr(base, node.attr)  # a method is read, never called
            return UNKNOWN
        if isinstance(node, ast.Dict):
            keys = [self._value(k) if k is not None else UNKNOWN for k in node.keys]
            values = [self._value(v) for v in node.values]
            if any(item is UNKNOWN for item in [*keys, *values]):
                return UNKNOWN
            return dict(zip(keys, values))
        if isinstance(node, ast.Slice):
            parts = [self._value(p) if p is not None else None for p in
                     (node.lower, node.upper, node.step)]  # fmt: skip
            return UNKNOWN if any(p is UNKNOWN for p in parts) else slice(*parts)
        if isinstance(node, ast.Subscript):
            base, index = self._value(node.value), self._value(node.slice)
            if index is UNKNOWN or not (_is_array(base) or type(base) in (list, tuple, dict)):
                return UNKNOWN
            return base[index]
        if isinstance(node, ast.BinOp):
            left, right = self._value(node.left), self._value(node.right)
            if not (_small(left) and _small(right)):
                return UNKNOWN
            with np.errstate(all="ignore") if np is not None else _nothing():
                return _apply(node.op, left, right)
        if isinstance(node, ast.Call):
            return self._call(node)
        return UNKNOWN

    def _call(self, node: ast.Call) -> Any:
        np = _numpy()
        func = node.func
        if np is None or not isinstance(func, ast.Attribute):
            return UNKNOWN
        owner = self._value(func.value)
        allowed = (owner is np and func.attr in PURE_NUMPY) or (
            _is_array(owner) and func.attr in PURE_METHODS
        )
        if not allowed:
            return UNKNOWN
        args = [self._value(a) for a in node.args]
        kwargs = {k.arg: self._value(k.value) for k in node.keywords if k.arg}
        known = [*args, *kwargs.values()]
        if any(v is UNKNOWN for v in known) or len(kwargs) < len(node.keywords):
            return UNKNOWN
        if not all(_small(a) or isinstance(a, (list, tuple)) for a in args):
            return UNKNOWN
        with np.errstate(all="ignore"):
            return getattr(owner, func.attr)(*args, **kwargs)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _small(value: Any) -> bool:
    """A number, or an array small enough to compute with again."""
    if _is_array(value):
        return value.size <= MAX_ENTRIES
    return (
        isinstance(value, (int, float, complex))
        and not isinstance(value, bool)
        or (_numpy() is not None and isinstance(value, _numpy().generic))
    )


def _apply(op: ast.operator, left: Any, right: Any) -> Any:
    import operator

    table = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow,
             ast.Mod: operator.mod, ast.MatMult: operator.matmul}  # fmt: skip
    return table[type(op)](left, right)


def _operands(node: ast.AST, reader: Reader) -> str:
    """ "q is (4, 3) floats, k is ..." for the names and simple parts of ``node``."""
    parts = []
    for part in _parts(node):
        value = reader.value(part)
        if (
            isinstance(part, ast.Constant)
            or value is UNKNOWN
            or isinstance(value, types.ModuleType)
        ):
            continue
        text = f"{_code(part)} is {describe(value)}"
        if text not in parts:
            parts.append(text)
    return "; ".join(parts[:6])


def _parts(node: ast.AST) -> list[ast.AST]:
    """The operands of ``node`` a student would name: each side of an operator, a call's
    receiver and arguments, a subscript's array (each down to a name or a call)."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Subscript):
        return [node.value]
    if isinstance(node, ast.Call):
        found: list[ast.AST] = []
        if isinstance(node.func, ast.Attribute) and not _is_module_name(node.func.value):
            found.append(node.func.value)
        for arg in node.args:
            found += list(arg.elts) if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
        return found
    return [n for n in ast.walk(node) if isinstance(n, ast.Name)]


def _is_module_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in {"np", "numpy", "math"}


def _shape(value: Any) -> tuple[int, ...] | None:
    if _is_array(value):
        return tuple(value.shape)
    if _small(value):
        return ()
    return None


def _rule(error: BaseException, node: ast.AST, reader: Reader) -> str:
    """The rule the failing expression broke, said with its operands' shapes; "" if unsure."""
    message = str(error)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return _matmul(node.left, node.right, reader)
    if isinstance(node, ast.Call) and _called(node) in {"dot", "matmul"} and len(node.args) == 2:
        return _matmul(node.args[0], node.args[1], reader)
    if "broadcast" in message and isinstance(node, ast.BinOp):
        return _broadcast(node.left, node.right, reader)
    if "broadcast" in message and isinstance(node, ast.Call):
        return _broadcast_all(node, reader)
    if isinstance(node, ast.Call) and _called(node) in JOINS:
        return _join(node, reader)
    if isinstance(node, ast.Call) and _called(node) == "reshape" and "reshape" in message:
        return _reshape(node, reader, message)
    if "axis" in message and "out of bounds" in message and isinstance(node, ast.Call):
        return _axis(node, reader, message)
    if isinstance(node, ast.Subscript) and isinstance(error, KeyError):
        return _missing_key(node, reader, error)
    if isinstance(node, ast.Subscript) and isinstance(error, IndexError):
        return _index(node, reader, message)
    if isinstance(error, TypeError) and "integer" in message:
        return _not_an_int(node, reader)
    if isinstance(error, TypeError):
        return _wrong_kind(node, reader)
    return ""


def _not_an_int(node: ast.AST, reader: Reader) -> str:
    """A size or an index given as a float: ``d_model / n_heads`` is 2.0, never 2."""
    np = _numpy()
    for part in _parts(node):
        value = reader.value(part)
        floating = isinstance(value, float) or (np is not None and isinstance(value, np.floating))
        if floating:
            return (f"{_code(part)} holds the float {value!r}, where a size or an index must "
                    f"be an int: / always gives a float, // divides whole numbers")  # fmt: skip
    return ""


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _matmul(left_node: ast.AST, right_node: ast.AST, reader: Reader) -> str:
    left, right = reader.value(left_node), reader.value(right_node)
    a, b = _shape(left), _shape(right)
    if a is None or b is None:
        return _wrong_kind_of(left_node, right_node, reader=reader)
    names = _code(left_node), _code(right_node)
    if not a or not b:
        number = names[0] if not a else names[1]
        return (f"a matrix product needs arrays with at least one axis; {number} is a "
                f"single number: multiply by it with *")  # fmt: skip
    inner_left, inner_right = a[-1], b[-2] if len(b) > 1 else b[0]
    if inner_left != inner_right:
        why = (
            f"a matrix product lines up the left's last axis with the right's "
            f"{'second-to-last' if len(b) > 1 else 'only'} axis: {inner_left} against "
            f"{inner_right}."
        )
        if len(b) == 2 and b[1] == inner_left:
            why += f" {names[1]}.T is {b[::-1]}, which would fit."
        elif len(a) == 2 and len(b) == 2 and a[0] == inner_right:
            why += f" {names[0]}.T is {a[::-1]}, which would fit."
        if len(a) > 2 or len(b) > 2:
            why += (" With more than two axes, @ treats every axis but the last two as a "
                    "stack of matrices, multiplied pair by pair.")  # fmt: skip
        return why
    stack_a, stack_b = a[:-2], b[:-2]
    if stack_a and stack_b and _clash(stack_a, stack_b):
        return (f"with more than two axes, @ multiplies stacks of matrices pair by pair: the "
                f"stack axes {stack_a} and {stack_b} must match or be 1")  # fmt: skip
    return ""


def _clash(a: tuple[int, ...], b: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """The axes (counted from the right, -1 first) where ``a`` and ``b`` do not broadcast."""
    return [
        (-i, x, y)
        for i, (x, y) in enumerate(zip(reversed(a), reversed(b)), start=1)
        if x != y and 1 not in (x, y)
    ]


def _broadcast(left_node: ast.AST, right_node: ast.AST, reader: Reader) -> str:
    a, b = _shape(reader.value(left_node)), _shape(reader.value(right_node))
    if not a or not b:
        return ""
    clashes = _clash(a, b)
    if not clashes:
        return ""
    said = ", ".join(f"axis {axis}: {x} against {y}" for axis, x, y in clashes)
    why = (f"numpy lines two shapes up from the right, and each pair of sizes must be equal "
           f"or one of them 1; {a} and {b} differ at {said}.")  # fmt: skip
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    if len(longer) == len(shorter) + 1:
        for axis in range(len(longer)):
            if longer[:axis] + longer[axis + 1 :] == shorter:
                kept = longer[:axis] + (1,) + longer[axis + 1 :]
                why += (f" The {shorter} side looks like a reduction that dropped axis {axis}: "
                        f"keepdims=True keeps it as size 1, {kept}, which lines up.")  # fmt: skip
                break
    if len(a) == len(b) == 2 and a == b[::-1]:
        why += " One side is the other transposed."
    return why


def _broadcast_all(node: ast.Call, reader: Reader) -> str:
    """A call that broadcasts its arguments together (``np.where(mask, -np.inf, s)``): the
    first two arrays among them that do not line up."""
    arrays = [(part, _shape(reader.value(part))) for part in node.args]
    arrays = [(part, shape) for part, shape in arrays if shape]
    for i, (left, a) in enumerate(arrays):
        for right, b in arrays[i + 1 :]:
            if _clash(a, b):  # type: ignore[arg-type]
                why = _broadcast(left, right, reader)
                return f"{ast.unparse(node.func)} lines up {_code(left)} with {_code(right)}: {why}"
    return ""


def _join(node: ast.Call, reader: Reader) -> str:
    if not node.args:
        return ""
    pieces = reader.value(node.args[0])
    if not isinstance(pieces, (list, tuple)) or not pieces:
        return ""
    found = [_shape(p) for p in pieces]
    shapes = [s for s in found if s is not None]
    if len(shapes) < len(found):
        return ""
    kind = _called(node)
    axis = next((reader.value(k.value) for k in node.keywords if k.arg == "axis"), 0)
    if kind == "hstack":
        axis = 0 if all(len(s) == 1 for s in shapes) else 1
    if kind == "vstack":
        shapes = [s if len(s) > 1 else (1, *s) for s in shapes]
        axis = 0
    listed = ", ".join(str(s) for s in shapes)
    if kind == "stack":
        return f"np.stack needs pieces of one shape (it adds a new axis): {listed}"
    if len({len(s) for s in shapes}) > 1:
        return (f"the pieces joined must have the same number of axes: {listed}; "
                f"joining adds them up along one axis that exists in each")  # fmt: skip
    if not isinstance(axis, int):
        return ""
    n = len(shapes[0])
    if not -n <= axis < n:
        return f"the pieces have {n} axes, so there is no axis {axis} to join along: {listed}"
    axis %= n
    differ = [i for i in range(n) if i != axis and len({s[i] for s in shapes}) > 1]
    if not differ:
        return ""
    where = " and ".join(f"axis {i}" for i in differ)
    return (f"joining along axis {axis} needs every other axis to agree, and {listed} differ "
            f"on {where}")  # fmt: skip


def _reshape(node: ast.Call, reader: Reader, message: str) -> str:
    if not isinstance(node.func, ast.Attribute):
        return ""
    receiver = node.func.value
    array: Any = reader.value(receiver)
    if not _is_array(array):
        return ""
    return (f"a reshape keeps every entry: {_code(receiver)} is {array.shape}, "
            f"{array.size} entries, and {message.split('into shape')[-1].strip()} holds "
            f"a different number")  # fmt: skip


def _axis(node: ast.Call, reader: Reader, message: str) -> str:
    for part in _parts(node):
        value = reader.value(part)
        if _is_array(value):
            n = value.ndim
            axes = ", ".join(str(i) for i in range(n)) if n else "none"
            return (f"{_code(part)} has {n} ax{'is' if n == 1 else 'es'} ({axes}; or -1 for "
                    f"the last): {message}")  # fmt: skip
    return ""


def _index(node: ast.Subscript, reader: Reader, message: str) -> str:
    value = reader.value(node.value)
    if not _is_array(value) and not isinstance(value, (list, tuple)):
        return ""
    what = _code(node.value)
    if _is_array(value):
        sizes = ", ".join(f"axis {i} has {n}" for i, n in enumerate(value.shape))
        return f"{what} is {value.shape} ({sizes or 'no axes'}); indices start at 0: {message}"
    return f"{what} holds {len(value)} items, indexed 0 to {len(value) - 1}: {message}"


def _is_method(value: Any) -> bool:
    return isinstance(value, (types.MethodType, types.BuiltinMethodType)) and not isinstance(
        getattr(value, "__self__", None), types.ModuleType
    )


def _missing_key(node: ast.Subscript, reader: Reader, error: KeyError) -> str:
    """A dict looked up with a key it does not have: the keys it has, near misses first."""
    import difflib

    table = reader.value(node.value)
    if not isinstance(table, dict) or not error.args:
        return ""
    key = error.args[0]
    close = difflib.get_close_matches(str(key), [str(k) for k in table], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"{_code(node.value)} has no key {key!r}{hint}: a key must be written exactly as "
            f"it was stored")  # fmt: skip


def _wrong_kind(node: ast.AST, reader: Reader) -> str:
    parts = _parts(node)
    return _wrong_kind_of(*parts, reader=reader) if parts else ""


def _wrong_kind_of(*nodes: ast.AST, reader: Reader) -> str:
    for part in nodes:
        value = reader.value(part)
        if value is None:
            return (f"{_code(part)} holds None: a function that ends without `return` gives "
                    f"None, and so does a method that changes its array in place")  # fmt: skip
        if isinstance(value, types.FunctionType):
            return f"{_code(part)} is a function: call it with its arguments to get its result"
        if _is_method(value):
            return (f"{_code(part)} is the method itself, not what it computes: call it, "
                    f"{_code(part)}(), with any arguments it needs")  # fmt: skip
    return ""
