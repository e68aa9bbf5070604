"""What a wrong shape is, said in the lesson's names for its sizes.

A test that expects ``(T, d_model)`` and gets ``(T * n_heads, d_head)`` can
say more than "expected (5, 8), got (20, 2)": the answer's pieces were joined
along the wrong axis. :func:`shape_reason` describes what the shape *is*
(flattened, transposed, an axis lost or added, joined on the wrong axis, one
size where another is expected), which is true whatever mistake made it, so
it never names a cause another mistake could share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def _named(shape: Sequence[int], sizes: Mapping[str, int]) -> str:
    """``(T, d_head)`` when every size has exactly one name in ``sizes``, else ``(5, 2)``."""
    names = []
    for n in shape:
        found = [name for name, size in sizes.items() if size == n]
        if len(found) != 1:
            return str(tuple(shape))
        names.append(found[0])
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def _size(n: int, sizes: Mapping[str, int]) -> str:
    found = [name for name, size in sizes.items() if size == n]
    return f"{n} ({found[0]})" if len(found) == 1 else str(n)


def shape_reason(
    got: Sequence[int], expected: Sequence[int], sizes: Mapping[str, int] | None = None
) -> str:
    """What the shape ``got`` is, beside ``expected``; "" when they are equal.

    sizes: the lesson's names for sizes, ``{"T": 5, "d_model": 8}``; a size two
    names share is said as a number.
    """
    got, expected, sizes = tuple(got), tuple(expected), dict(sizes or {})
    if got == expected:
        return ""
    said = f"your answer is {_named(got, sizes)} where {_named(expected, sizes)} is expected"
    entries_got, entries_expected = math.prod(got), math.prod(expected)
    if len(got) == len(expected) == 2 and got == expected[::-1]:
        return f"{said}: it is transposed, its rows are the expected columns"
    if entries_got == entries_expected and len(got) == 1 and len(expected) > 1:
        return f"{said}: it is flattened, the right {entries_got} entries on one axis"
    if entries_got == entries_expected and len(got) == len(expected):
        if sorted(got) == sorted(expected):
            return (f"{said}: the same axes in another order (an axis moved, or a "
                    f"transpose missing or extra)")  # fmt: skip
        joined = _joined_on(got, expected)
        if joined is not None:
            wrong, right = joined
            return (f"{said}: the pieces are joined along axis {wrong} where they belong "
                    f"side by side along axis {right}")  # fmt: skip
        return f"{said}: the same {entries_got} entries arranged otherwise"
    if len(got) == len(expected) - 1:
        lost = [a for a in range(len(expected)) if expected[:a] + expected[a + 1 :] == got]
        if lost:
            which = f"axis {lost[0]}" if len(lost) == 1 else "an axis"
            return (f"{said}: {which} (size {_size(expected[lost[0]], sizes)}) is "
                    f"missing; a reduction over it, or an index that picks one of "
                    f"it, drops it (keepdims=True, or a slice, keeps it)")  # fmt: skip
    if len(got) == len(expected) + 1:
        extra_axes = [a for a in range(len(got)) if got[:a] + got[a + 1 :] == expected]
        if extra_axes:
            axis = extra_axes[0]
            extra = _size(got[axis], sizes)
            how = ("np.stack adds an axis where np.concatenate joins along one, and a "
                   "missing reduction leaves one" if got[axis] > 1
                   else "a kept or added axis of size 1")  # fmt: skip
            which = f" {axis}" if len(extra_axes) == 1 else ""  # (T, T) for (T,): either
            return f"{said}: it has an extra axis{which} of size {extra} ({how})"
    if len(got) == len(expected):
        differ = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
        if len(differ) == 1:
            axis = differ[0]
            return (f"{said}: axis {axis} is {_size(got[axis], sizes)} long where it should "
                    f"be {_size(expected[axis], sizes)}")  # fmt: skip
    return said


def _joined_on(got: tuple[int, ...], expected: tuple[int, ...]) -> tuple[int, int] | None:
    """(the axis the pieces were joined along, the axis they belong along), when ``got`` is
    ``expected`` with one axis divided by a factor and another multiplied by it."""
    differ = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
    if len(differ) != 2:
        return None
    i, j = differ
    if got[i] > expected[i] and got[i] % expected[i] == 0 and expected[j] % got[j] == 0:
        if got[i] // expected[i] == expected[j] // got[j]:
            return i, j
    if got[j] > expected[j] and got[j] % expected[j] == 0 and expected[i] % got[i] == 0:
        if got[j] // expected[j] == expected[i] // got[i]:
            return j, i
    return None
