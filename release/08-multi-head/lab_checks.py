"""Checks shared by the lab's test cells.

Nothing here knows an answer: expected values live in the test cells. This
module decides how a failure reads, so that every failing test names the
mistake it saw instead of a bare ``AssertionError``.

Shapes use the lab's legend: ``T`` positions, ``d_model`` the model width,
``d_head`` one head's width.
"""

import contextlib
import copy
import io
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
            raise AssertionError(
                f"{name} crashed on arguments {_describe(args)}: {type(error).__name__}: {error}"
            ) from error


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


def random_arrays(seed, *shapes):
    """Standard-normal arrays of the given shapes from one fixed seed.

    The same seed always gives the same arrays, so a submission always gets
    the same score.
    """
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape) for shape in shapes]


def _as_array(got, what):
    if got is None:
        raise AssertionError(f"{what} returned None: is a `return` missing?")
    try:
        return np.asarray(got, dtype=float)
    except (TypeError, ValueError) as error:
        raise AssertionError(
            f"{what} returned {type(got).__name__}, not an array of numbers ({error})"
        ) from None


def check_shape(got, expected, what, hint=""):
    """Fail unless ``got`` has shape ``expected``; ``hint`` says what went wrong."""
    shape = np.shape(_as_array(got, what))
    expected = tuple(expected)
    if shape != expected:
        reason = f": {hint}" if hint else ""
        raise AssertionError(f"{what}: expected shape {expected}, got {shape}{reason}")


def check_close(got, expected, what, hint="", rtol=1e-6, atol=1e-9):
    """Fail unless ``got`` matches ``expected`` in shape and, within tolerance, values.

    The message gives the largest error, where it is, and the two values.
    """
    expected = np.asarray(expected, dtype=float)
    check_shape(got, expected.shape, what)
    got = _as_array(got, what)
    if np.allclose(got, expected, rtol=rtol, atol=atol):
        return
    error = np.abs(got - expected)
    error = np.where(np.isnan(error), np.inf, error)
    where = np.unravel_index(np.argmax(error), error.shape) if error.ndim else ()
    index = tuple(int(i) for i in where)
    # The diagnosis first: it is what a student needs, and a long message is cut.
    reason = f": {hint[:1].lower()}{hint[1:].rstrip('.')}" if hint else ""
    raise AssertionError(
        f"{what}: wrong values{reason}; the worst is at index {index}, "
        f"got {got[where]:.4g}, expected {expected[where]:.4g}"
    )


def _same(old, new):
    if isinstance(old, (list, tuple)):
        return (
            isinstance(new, (list, tuple))
            and len(old) == len(new)
            and all(_same(a, b) for a, b in zip(old, new))
        )
    return np.array_equal(old, new)


def check_unmodified(fn, *args, what, expected):
    """Call ``fn(*args)`` on the test's own arguments; fail if it changed any in place.

    Arguments are arrays, or lists and tuples of arrays. ``expected`` is the
    right result, computed before the call: a function that leaves its
    arguments alone only passes if it also does its job.
    """
    before = copy.deepcopy(args)
    got = _guarded(fn, args)
    for position, (old, new) in enumerate(zip(before, args)):
        if not _same(old, new):
            raise AssertionError(
                f"{what} changed its argument number {position + 1} in place; "
                "work on a copy or build new arrays instead"
            )
    check_close(got, expected, what)


def glue_hint(shape, parts):
    """Name the axis a wrong glue used, from the ``shape`` it produced.

    ``parts`` are the ``(T, d_i)`` answers that should have been glued
    side by side into ``(T, sum d_i)``.
    """
    rows = sum(np.shape(p)[0] for p in parts)
    width = np.shape(parts[0])[1]
    if tuple(shape) == (rows, width):
        return (
            "you glued along axis 0, the positions; glue along the feature "
            "axis (axis=-1) so each position keeps one row"
        )
    if len(shape) == 3:
        return (
            "you stacked the heads along a new axis; glue them along the "
            "existing feature axis (axis=-1) instead"
        )
    return "glue the answers side by side along the feature axis (axis=-1)"


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
