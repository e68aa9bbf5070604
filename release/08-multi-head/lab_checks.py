"""Checks shared by the lab's test cells.

Nothing here knows an answer: expected values live in the test cells. This
module decides how a failure reads, so that every failing test names the
mistake it saw instead of a bare ``AssertionError``.

Shapes use the lab's legend: ``T`` positions, ``d_model`` the model width,
``d_head`` one head's width. Two helpers are not checks: :func:`show_heatmaps` puts
the lesson's pictures on the page, drawn by :func:`heatmaps_svg`.
"""

import contextlib
import copy
import html
import io
import os
import re
import sys
import sysconfig
import traceback
import types
import warnings

import numpy as np


def _describe(args):
    """The arguments of a call, as shapes: ``(5, 3), [(4, 1), (4, 3)]``."""

    def one(arg):
        if isinstance(arg, (list, tuple)):
            return "[" + ", ".join(one(a) for a in arg) + "]"
        if np.ndim(arg):
            return str(np.shape(arg))
        return repr(arg)

    return ", ".join(one(arg) for arg in args)


def _guarded(fn, args, expect=()):
    """Call ``fn(*args)`` with numpy warnings and stderr swallowed; see :func:`quietly`."""
    with (
        warnings.catch_warnings(),
        np.errstate(all="ignore"),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except expect:
            raise
        except NotImplementedError:
            name = getattr(fn, "__name__", "your function")
            raise AssertionError(
                f"{name}: not attempted yet; replace `raise NotImplementedError()` "
                "in its answer cell with your code"
            ) from None
        except Exception as error:
            name = getattr(fn, "__name__", "your function")
            kind = type(error).__name__
            if kind == NotExpected.__name__:  # a stand-in refused the call: the test's finding
                raise AssertionError(f"{name} on arguments {_describe(args)}: {error}") from None
            did = "raised" if _own_raise(error) else "crashed with"
            why = _crash_reason(error)
            raise AssertionError(
                f"{name} on arguments {_describe(args)}: your code {did} {kind}: {error}"
                + (f"\n{why}" if why else "")
            ) from error


def _crash_reason(error):
    """What the crash's operands held and the rule they broke ("" if no rule is sure).

    Where the grader ran the student's code in its sandbox, the sandbox explained it
    (the end of ``student_traceback``); in a kernel (stock nbgrader, the student's
    Jupyter), the same explainer reads the error here: the grader's own module where
    the engine is installed, else the copy the release puts beside the notebook.
    """
    shown = getattr(error, "student_traceback", None)
    if shown is not None:
        found = [block.strip() for block in shown if "\nWhy: " in block]
        return found[-1] if found else ""
    reasons = _crash_reasons()
    why = reasons.explain(error, _student_frames(error)) if reasons is not None else ""
    return why if "\nWhy: " in why else ""


def _student_frames(error):
    """The frames of ``error`` that ran the student's code: after this module called it, up
    to where it called back into trusted code (a stand-in :func:`served`, or this module).
    A crash in a test's own reference is no student's line to explain."""
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    here = os.path.abspath(__file__)
    starts = [i for i, t in enumerate(frames) if t.tb_frame.f_code is _guarded.__code__]
    student = []
    for t in frames[starts[-1] + 1 if starts else 0 :]:
        code = t.tb_frame.f_code
        if code in _serving or os.path.abspath(code.co_filename) == here:
            break
        student.append(t)
    return student


def _crash_reasons():
    """The crash explainer, told how this kernel names its cells; None if there is none."""
    try:
        from autograder.sandbox import crash_reasons
    except ImportError:
        try:
            import crash_reasons
        except ImportError:
            return None
    try:
        from ipykernel.compiler import get_tmp_directory
    except ImportError:
        return crash_reasons
    cells = get_tmp_directory()
    if cells not in crash_reasons.CELL_FILES:
        crash_reasons.CELL_FILES = (*crash_reasons.CELL_FILES, cells)
    return crash_reasons


def _own_raise(error):
    """Did a ``raise`` statement of the student's end the call (not a library's error)?

    The last frame of the traceback is looked at: in a kernel, the error's own;
    where the grader ran the student's code elsewhere, the student's frames as
    text (``student_traceback``), which are only ever the student's.
    """
    shown = getattr(error, "student_traceback", None)
    if shown is not None:
        lines = "".join(shown).splitlines()
        # a frame is a header ("  Cell In[4], line 3, in f") and its code, indented further
        frames = [n for n, line in enumerate(lines) if re.match(r"  \S.*, line \d+", line)]
        last = lines[frames[-1] + 1] if frames and frames[-1] + 1 < len(lines) else ""
        return last.strip().startswith("raise")
    frames = traceback.extract_tb(error.__traceback__)
    if not frames or _in_library(frames[-1].filename):
        return False  # the error came from numpy or Python itself
    return (frames[-1].line or "").startswith("raise")


def _in_library(filename):
    """Is ``filename`` Python's, an installed package's, or this module's (not a cell's)?"""
    roots = {sys.prefix, sys.base_prefix, *sysconfig.get_paths().values()}
    path = os.path.abspath(filename)
    return path == os.path.abspath(__file__) or any(
        path.startswith(os.path.join(os.path.abspath(root), "")) for root in roots if root
    )


def quietly(fn, *args, expect=()):
    """Call ``fn`` on copies of ``args``, with numpy warnings and stderr swallowed.

    nbgrader gives a test cell zero points as soon as anything reaches stderr,
    so a correct answer that trips a harmless warning (``np.log(0)`` while
    building a ``-inf`` mask) would otherwise lose its marks.

    The arguments are deep copies: a function that changes its arguments in
    place cannot change the arrays a test computes its expected values from
    (:func:`check_unmodified` checks for such changes on its own).

    If ``fn`` crashes, the failure says which function crashed on what inputs
    (the original error stays attached, with its traceback). Exceptions listed
    in ``expect`` pass through unchanged, for tests that want one.
    """
    return _guarded(fn, copy.deepcopy(args), expect)


#: arrays :func:`random_arrays` drew, by seed and shapes: at most this many draws are kept
MAX_DRAWN = 256
_drawn = {}


def random_arrays(seed, *shapes):
    """Standard-normal arrays of the given shapes from one fixed seed.

    The same seed always gives the same arrays, so a submission always gets
    the same score. Each seed and shapes are drawn once in a process (making
    the generator costs more than drawing), and every call gets copies of its
    own, so a test that changes them in place changes nothing for the next.
    """
    try:
        drawn = _drawn.get((seed, shapes))
    except TypeError:  # a shape given as a list: not a key, drawn afresh
        drawn = None
    if drawn is None:
        rng = np.random.default_rng(seed)
        drawn = [rng.normal(size=shape) for shape in shapes]
        try:
            if len(_drawn) < MAX_DRAWN:
                _drawn[(seed, shapes)] = drawn
        except TypeError:
            pass
    return [array.copy() for array in drawn]


#: answers :func:`remembered` keeps: at most this many, each of at most
#: ``MAX_REMEMBERED_BYTES`` and for arguments of at most as many in all (the lab's arrays
#: hold a few hundred bytes), so what a class's calls keep stays under 4 MiB
MAX_REMEMBERED = 256
MAX_REMEMBERED_BYTES = 8192
_remembered = {}


def remembered(reference):
    """``reference``, answering from memory when it is called again with the same arrays.

    For a test's reference computation, which every submission calls on the
    same seeded arrays: a function of its array arguments alone (it reads no
    global that changes, has no closure, and any defaults are plain values). The
    answer is computed once per process, and every call gets a copy of its own,
    so a caller that changes it in place changes nothing for the next. A call
    with anything but plain arrays of numbers, with large ones or with a
    keyword, is computed afresh, and so is an answer that is not such an array
    or is large: a student's code, served this reference, can make it compute
    but not grow.
    """
    if reference.__closure__:
        raise TypeError(f"{reference.__name__} reads a closure: its answers cannot be kept")
    made = (
        reference.__code__,
        reference.__defaults__,
        *sorted((reference.__kwdefaults__ or {}).items()),
    )
    try:
        hash(made)
    except TypeError:
        raise TypeError(f"{reference.__name__} has defaults that are not plain values") from None

    def call(*args, **named):
        key = None if named else _arrays_key(made, args)
        kept = None if key is None else _remembered.get(key)
        if kept is None:
            kept = reference(*args, **named)
            if key is None or not _plain(kept) or kept.nbytes > MAX_REMEMBERED_BYTES:
                return kept
            if len(_remembered) < MAX_REMEMBERED:
                _remembered[key] = kept
        return kept.copy()

    call.__name__, call.__qualname__ = reference.__name__, reference.__qualname__
    call.__doc__, call.__wrapped__ = reference.__doc__, reference
    return call


def _plain(value):
    """Is ``value`` a numpy array of numbers (no objects, no subclass)?"""
    return type(value) is np.ndarray and value.dtype.kind in "biufc"


def _arrays_key(made, args):
    """What identifies a call of the function ``made`` (its code and defaults) on ``args``:
    every array's dtype, shape and bytes; None unless all are plain numeric arrays
    (:func:`_plain`) of at most ``MAX_REMEMBERED_BYTES`` in all."""
    if not all(_plain(a) for a in args) or sum(a.nbytes for a in args) > MAX_REMEMBERED_BYTES:
        return None
    return (made, *((a.dtype.str, a.shape, a.tobytes()) for a in args))


def _as_array(got, what):
    if got is None:
        raise AssertionError(f"{what} returned None: is a `return` missing?")
    try:
        return np.asarray(got, dtype=float)
    except (TypeError, ValueError) as error:
        raise AssertionError(
            f"{what} returned {type(got).__name__}, not an array of numbers ({error})"
        ) from None


def _said(hint):
    """The hint's words: ``hint`` itself, or what it returns when it is a function.

    A function is called only when a check fails: naming the cause of a mistake
    (a family of variants to compare with) is work a right answer never needs.
    """
    return (hint() if callable(hint) else hint) or ""


def check_shape(got, expected, what, hint=""):
    """Fail unless ``got`` has shape ``expected``; ``hint`` says what went wrong (words, or a
    function that returns them, called only on failure)."""
    shape = np.shape(_as_array(got, what))
    expected = tuple(expected)
    if shape != expected:
        said = _said(hint)
        reason = f": {said}" if said else ""
        raise AssertionError(f"{what}: expected shape {expected}, got {shape}{reason}")


def check_close(got, expected, what, hint="", rtol=1e-6, atol=1e-9):
    """Fail unless ``got`` matches ``expected`` in shape and, within tolerance, values.

    The message gives the largest error, where it is, and the two values.
    ``hint`` names the cause, for a wrong shape or wrong values alike: give one
    only when the test knows it (the result equals a known mistake's); a
    function that finds it is called only if the check fails.
    """
    expected = np.asarray(expected, dtype=float)
    check_shape(got, expected.shape, what, hint)
    got = _as_array(got, what)
    if np.isfinite(got).all() and _allclose(got, expected, rtol, atol):
        return  # nan and inf are never right: np.allclose takes inf as equal to inf
    error = np.abs(got - expected)
    error = np.where(np.isnan(error), np.inf, error)
    # The first of the largest errors: two equal errors (a row of two shares, one too
    # big and one too small) differ only in their last bits, which numpy's vector
    # loops round one way or the other by where the array lies in memory.
    first = np.argmax(error >= error.max() * (1 - 1e-9))
    where = np.unravel_index(first, error.shape) if error.ndim else ()
    index = tuple(int(i) for i in where)
    # The diagnosis first: it is what a student needs, and a long message is cut.
    said = _said(hint)
    reason = f": {said[:1].lower()}{said[1:].rstrip('.')}" if said else ""
    raise AssertionError(
        f"{what}: wrong values{reason}; the worst is at index {index}, "
        f"got {got[where]:.4g}, expected {expected[where]:.4g}"
    )


def _allclose(a, b, rtol, atol):
    """``np.allclose(a, b, rtol=rtol, atol=atol)`` for float arrays of one shape.

    Where both are finite, numpy's own test (``|a - b| <= atol + rtol * |b|``)
    without its broadcasting and special cases: a tenth of the time, and the
    tests check a hundred arrays a notebook.
    """
    if np.isfinite(a).all() and np.isfinite(b).all():
        with np.errstate(over="ignore", invalid="ignore"):
            return bool((np.abs(a - b) <= atol + rtol * np.abs(b)).all())
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _same(old, new):
    if isinstance(old, (list, tuple)):
        return (
            isinstance(new, (list, tuple))
            and len(old) == len(new)
            and all(_same(a, b) for a, b in zip(old, new))
        )
    return np.array_equal(old, new)


#: each answer's parameters, as its docstring names them (the grader calls the
#: student's function through a stand-in that has no signature of its own)
PARAMETERS = {
    "attention_weights": ("x", "W_q", "W_k"),
    "head": ("x", "W_q", "W_k", "W_v"),
    "blend": ("weights", "values"),
    "disagreement": ("shares_a", "shares_b"),
    "concat_heads": ("answers",),
    "multi_head": ("x", "heads"),
    "batched_heads": ("x", "W_q", "W_k", "W_v", "n_heads"),
}


def check_unmodified(fn, *args, what, expected):
    """Call ``fn(*args)`` on the test's own arguments; fail if it changed any in place.

    Arguments are arrays, or lists and tuples of arrays. ``expected`` is the
    right result, computed before the call: a function that leaves its
    arguments alone only passes if it also does its job. With ``expected``
    None only the arguments are checked, and what ``fn`` returned is returned.
    """
    before = copy.deepcopy(args)
    got = _guarded(fn, args)
    names = PARAMETERS.get(getattr(fn, "__name__", ""), ())
    for position, (old, new) in enumerate(zip(before, args)):
        if not _same(old, new):
            name = f"{names[position]} " if position < len(names) else ""
            raise AssertionError(
                f"{what} changed its argument {name}(number {position + 1}) in place; "
                "work on a copy or build new arrays instead: the caller uses it again"
            )
    if expected is None:
        return got
    check_close(got, expected, what)


def glue_hint(shape, parts):
    """Name the axis a wrong glue used, from the ``shape`` it produced; "" if unsure.

    ``parts`` are the ``(T, d_i)`` answers that should have been glued
    side by side into ``(T, sum d_i)``. Only a shape that gluing on another
    axis gives is blamed on the axis: a hint that names the wrong cause costs
    a student more than no hint.
    """
    rows = sum(np.shape(p)[0] for p in parts)
    widths = {np.shape(p)[1] for p in parts}
    if len(widths) == 1 and tuple(shape) == (rows, *widths):
        return (
            "you glued along axis 0, the positions; glue along the feature "
            "axis (axis=-1) so each position keeps one row"
        )
    if (
        len(shape) == 3
        and len(widths) == 1
        and sorted(shape) == sorted((np.shape(parts[0])[0], *widths, len(parts)))
    ):
        return (
            "you stacked the heads along a new axis; glue them along the "
            "existing feature axis (axis=-1) instead"
        )
    return ""


_ABSENT = object()
_serving = set()  # the code of the stand-ins now served: trusted, never the student's


def _code_of(function):
    """The code a stand-in runs (a wrapped one's own: :func:`remembered` keeps it)."""
    return getattr(getattr(function, "__wrapped__", function), "__code__", None)


@contextlib.contextmanager
def served(namespace, **stand_ins):
    """While the block runs, the student's functions named here answer as ``stand_ins`` do.

    A test of one answer serves every other answer it may call by a trusted
    version, so the points of the answer under test depend on its own code
    alone: a mistake elsewhere can neither cost it points nor earn it any.
    ``namespace`` is the test cell's ``globals()``. In a Jupyter kernel the
    student's functions look their helpers up there, so the names are rebound
    for the block. A grader that runs the student's code in another process
    gives its namespace a ``serving`` method: the student's process then asks
    the grader to answer each such call, and sees only the answers.
    """
    saved = {name: namespace.get(name, _ABSENT) for name in stand_ins}
    namespace.update(stand_ins)
    serving = getattr(namespace, "serving", None)
    codes = {_code_of(f) for f in stand_ins.values()} - {None} - _serving
    _serving.update(codes)
    try:
        with serving(stand_ins) if serving is not None else contextlib.nullcontext():
            yield
    finally:
        _serving.difference_update(codes)
        for name, value in saved.items():
            if value is _ABSENT:
                namespace.pop(name, None)
            else:
                namespace[name] = value


def _matches(given, known):
    """Are ``given`` and ``known`` the same arguments: equal numbers (no nan), same nesting?"""
    if isinstance(known, (list, tuple)):
        return (
            isinstance(given, (list, tuple))
            and len(given) == len(known)
            and all(_matches(g, k) for g, k in zip(given, known))
        )
    try:
        given, known = np.asarray(given, dtype=float), np.asarray(known, dtype=float)
    except (TypeError, ValueError):
        return False
    return given.shape == known.shape and _allclose(given, known, 1e-9, 1e-12)


class NotExpected(AssertionError):
    """A stand-in was called with arguments its test does not give: the test's finding."""


def _differences(given, known, names):
    """How the arguments ``given`` differ from ``known``, argument by argument, in words.

    names: the parameters' names (the answer's docstring's); a given argument
    equal to another position's known one is named as swapped.
    """
    if len(given) != len(known):
        return [f"{len(given)} arguments where it takes {len(known)}"]

    def called(i):
        return names[i] if i < len(names) else f"argument {i + 1}"

    found = []
    for i, (g, k) in enumerate(zip(given, known)):
        if _matches(g, k):
            continue
        elsewhere = [j for j, other in enumerate(known) if j != i and _matches(g, other)]
        if elsewhere:
            found.append(f"{called(elsewhere[0])} where {called(i)} goes")
        elif np.shape(g) != np.shape(k) and not isinstance(k, (list, tuple)):
            found.append(f"a {np.shape(g)} {called(i)} where the test gives a {np.shape(k)} one")
        else:
            found.append(f"another {called(i)} than the one the test gives")
    return found


def stand_in(name, calls=(), unknown=""):
    """A stand-in for the student's function ``name`` that knows only the calls listed.

    calls: ``(args, result)`` pairs, the answers written out: a call with
    those arguments returns a copy of ``result``. Any other call fails with
    :class:`NotExpected`: ``unknown``, or which argument differs from the
    nearest known call, by value (a swapped pair named as such). Visible tests
    use it with :func:`served` to check one answer on a worked example without
    running the student's other answers, and without giving any of them away.
    """

    def answer(*args):
        for known, result in calls:
            if _matches(args, known):
                return copy.deepcopy(result)
        if unknown or not calls:
            raise NotExpected(unknown or f"it called {name}, which this test does not serve")
        names = PARAMETERS.get(name, ())
        nearest = min((_differences(args, k, names) for k, _ in calls), key=len)
        raise NotExpected(
            f"it called {name} with {' and '.join(nearest)} "
            f"(this test gives {name} {' or '.join('(' + _describe(k) + ')' for k, _ in calls)})"
        )

    answer.__name__ = name
    return answer


def _heads_held(got, answers):
    """Which answer (1-based) each equal-width block of ``got``'s columns holds; None if none."""
    width = np.shape(answers[0])[1]
    held = []
    for start in range(0, got.shape[1], width):
        block = got[:, start : start + width]
        match = [i + 1 for i, a in enumerate(answers) if block.shape == np.shape(a)]
        match = [i for i in match if np.allclose(block, answers[i - 1])]
        held.append(match[0] if match else None)
    return held


def _heads_cause(held, count):
    """Why blocks holding the answers ``held`` (1-based) are not heads 1..count, when certain."""
    wanted = list(range(1, count + 1))
    missing = [h for h in wanted if h not in held]
    repeated = sorted({h for h in held if held.count(h) > 1})
    if len(held) == count > 1 and len(set(held)) == 1:
        return f"every block is head {held[0]}'s answer: run each head with its own W_q, W_k, W_v"
    if sorted(held) == wanted:
        return "the heads are out of order: keep them in the order they are given"
    if missing and not repeated:
        return f"the answer of head {', '.join(map(str, missing))} is missing: run every head"
    if repeated and not missing:
        return f"head {', '.join(map(str, repeated))} appears twice: run every head once"
    gone, twice = ", ".join(map(str, missing)), ", ".join(map(str, repeated))
    return f"head {gone} is missing and head {twice} appears twice: run every head once"


def check_heads(got, answers, what):
    """Fail unless ``got`` holds ``answers`` side by side, in order; say which head differs.

    answers: the heads' answers, answer i of shape ``(T, d_i)``, in order.
    got: should be ``(T, d_1 + ... + d_h)``, answer 1 in the first columns.
    """
    answers = [np.asarray(a, dtype=float) for a in answers]
    T, widths = answers[0].shape[0], [a.shape[1] for a in answers]
    expected = (T, sum(widths))
    got = _as_array(got, what)
    starts = np.cumsum([0, *widths])
    finite = bool(np.all(np.isfinite(got)))  # nan and inf are never an answer
    if (
        finite
        and got.shape == expected
        and all(np.allclose(got[:, s : s + a.shape[1]], a) for s, a in zip(starts, answers))
    ):
        return
    if got.shape == answers[0].shape and len(answers) > 1:
        for verb, combined in [("adds", sum(answers)), ("averages", sum(answers) / len(answers))]:
            if np.allclose(got, combined):
                raise AssertionError(
                    f"{what}: expected shape {expected}, got {got.shape}: it {verb} the heads' "
                    "answers, which shreds them; glue them side by side instead"
                )
    if got.ndim != 2 or got.shape[0] != T:
        check_shape(got, expected, what, hint=glue_hint(got.shape, answers))
    if len(set(widths)) == 1 and got.shape[1] % widths[0] == 0:
        held = _heads_held(got, answers)
        if None not in held:
            raise AssertionError(
                f"{what}: its columns hold the answers of heads {', '.join(map(str, held))}, "
                f"where heads {', '.join(map(str, range(1, len(answers) + 1)))} belong: "
                f"{_heads_cause(held, len(answers))}"
            )
    check_shape(got, expected, what)
    if len(answers) > 1 and np.allclose(got, np.hstack(answers[::-1])):
        raise AssertionError(
            f"{what}: the heads' answers are in reverse order: keep them in the order given"
        )
    for number, (start, answer) in enumerate(zip(starts, answers), start=1):
        end = start + answer.shape[1]
        part = f"{what}, columns {start} to {end - 1} (head {number})"
        check_close(got[:, start:end], answer, part)


def _without_own_frames(tb):
    """The traceback ``tb`` without this module's frames (rebuilt, last frame first)."""
    kept = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename != __file__:
            kept.append(tb)
        tb = tb.tb_next
    chain = None
    for frame in reversed(kept):
        chain = types.TracebackType(chain, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return chain


def _short_traceback(shell, etype, value, tb, tb_offset=None):
    """Show a failed check from the test cell's own line, not from inside this module.

    A student reads the test cell and the message; the frames of the helper
    that raised it only push the message down. The student's own frames, in
    an error their code raised, stay.
    """
    seen = value
    while seen is not None:
        seen.__traceback__ = _without_own_frames(seen.__traceback__)
        seen = seen.__cause__ or seen.__context__
    shell.showtraceback((etype, value, value.__traceback__), tb_offset=tb_offset)


def _install_short_tracebacks():
    """In Jupyter, show failed checks (AssertionError) with :func:`_short_traceback`."""
    try:
        shell = get_ipython()  # noqa: F821 (a builtin inside IPython only)
    except NameError:
        return
    if hasattr(shell, "set_custom_exc"):
        shell.set_custom_exc((AssertionError,), _short_traceback)


_install_short_tracebacks()


#: matplotlib's "Blues" as ColorBrewer gives it: nine steps from a share of 0 to 1
BLUES = ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6",
         "#4292c6", "#2171b5", "#08519c", "#08306b"]  # fmt: skip


def _rgb(hex_colour):
    return [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]


def blue(share):
    """The colour of a share in ``[0, 1]`` on the Blues scale, as ``#rrggbb``."""
    place = min(max(float(share), 0.0), 1.0) * (len(BLUES) - 1)
    low = min(int(place), len(BLUES) - 2)
    a, b = _rgb(BLUES[low]), _rgb(BLUES[low + 1])
    mixed = [round(x + (y - x) * (place - low)) for x, y in zip(a, b)]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def _luminance(hex_colour):
    """WCAG 2.1's relative luminance of a colour."""
    linear = [c / 255 for c in _rgb(hex_colour)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in linear]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def ink(background):
    """Black or white, whichever is the more legible on ``background``: at least 4.5:1."""
    light = _luminance(background)
    return "#000000" if (light + 0.05) / 0.05 >= 1.05 / (light + 0.05) else "#ffffff"


def heatmaps_svg(tables, titles, labels, alt, causal=False):
    """Square tables of shares side by side, as one SVG: a cell's colour and its number.

    tables: ``(T, T)`` arrays of shares in ``[0, 1]``, row ``i`` the position
    reading, column ``j`` the position read; titles: one per table; labels:
    ``T`` names for the positions; alt: the picture in words, its SVG title;
    causal: leave the cells right of the diagonal (the masked future) blank.
    Drawn as text, not rendered by a plotting library: it costs a millisecond,
    and its numbers stay text that a screen reader or a TA can read.
    """
    size = len(labels)
    cell = 40 if size <= 4 else 34
    left, top, gap, key = 58, 30, 46, 70
    panel = cell * size
    width = left + len(tables) * panel + (len(tables) - 1) * gap + key
    height = top + panel + 46
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{html.escape(alt)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="DejaVu Sans, Arial, sans-serif" font-size="12">',
        f"<title>{html.escape(alt)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for number, (table, title) in enumerate(zip(tables, titles)):
        x0 = left + number * (panel + gap)
        parts.append(
            f'<text x="{x0 + panel / 2}" y="{top - 10}" text-anchor="middle" '
            f'font-size="14">{html.escape(title)}</text>'
        )
        for i in range(size):
            for j in range(size):
                x, y = x0 + j * cell, top + i * cell
                if causal and j > i:
                    parts.append(
                        f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                        'fill="#ffffff" stroke="#dddddd"/>'
                    )
                    continue
                fill = blue(table[i][j])
                parts.append(
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}"/>'
                    f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" '
                    f'font-size="11" fill="{ink(fill)}">{float(table[i][j]):.2f}</text>'
                )
        for k, name in enumerate(labels):
            parts.append(
                f'<text x="{x0 + k * cell + cell / 2}" y="{top + panel + 16}" '
                f'text-anchor="middle">{html.escape(name)}</text>'
            )
            if number == 0:
                parts.append(
                    f'<text x="{x0 - 8}" y="{top + k * cell + cell / 2 + 4}" '
                    f'text-anchor="end">{html.escape(name)}</text>'
                )
        parts.append(
            f'<text x="{x0 + panel / 2}" y="{top + panel + 36}" '
            'text-anchor="middle">position read</text>'
        )
    parts.append(
        f'<text transform="translate(16 {top + panel / 2}) rotate(-90)" '
        'text-anchor="middle">position reading</text>'
    )
    # The key: the scale from 0 to 1, top to bottom as 1 to 0.
    kx, steps = width - key + 22, 10
    for step in range(steps):
        share = 1 - (step + 0.5) / steps
        parts.append(
            f'<rect x="{kx}" y="{top + step * panel / steps:.1f}" width="14" '
            f'height="{panel / steps + 0.5:.1f}" fill="{blue(share)}"/>'
        )
    for share in (1, 0.5, 0):
        parts.append(
            f'<text x="{kx + 20}" y="{top + (1 - share) * panel + 4:.1f}">{share:g}</text>'
        )
    parts.append(
        f'<text x="{kx + 7}" y="{top + panel + 16}" text-anchor="middle">share</text></svg>'
    )
    return "".join(parts)


def show_heatmaps(tables, titles, labels, alt, causal=False):
    """Display :func:`heatmaps_svg` of the tables, with ``alt`` as its text alternative.

    ``alt`` says in words what the picture shows, for a screen reader and the
    feedback page, where the picture is an image.
    """
    from IPython.display import display

    svg = heatmaps_svg(tables, titles, labels, alt, causal)
    bundle = {"image/svg+xml": svg, "text/plain": alt}
    display(bundle, raw=True, metadata={"image/svg+xml": {"alt": alt}})
