"""Naming the cause of a wrong answer: plausible variants of the right computation.

When an answer's values are wrong, a hidden test builds a family of variants of
its own reference computation for the same call and names the one variant the
answer equals: the arguments swapped, a square matrix transposed, one setting
of the computation changed (the scale, the mask, the axis of a reduction), or
the answer of the previous call returned again. An answer that equals no
variant, or more than one, is named by no cause: "wrong values" and the worst
index, as before.

Nothing here computes any answer of the lab: every variant is the test's own
reference, called differently. ``Variants`` holds the family for one call::

    family = Variants(_reference, (x, W_q, W_k), ("x", "W_q", "W_k"))
    family.swapped()
    family.changed({"the scores are not divided by sqrt(d_head)": {"scale": 1.0}})
    family.carried_over(previous_answer)
    hint = family.cause(got)
"""

import itertools

import numpy as np


def _same(a, b):
    """Do ``a`` and ``b`` hold the same numbers (nan and inf alike where both have them)?"""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            a, b = np.nan_to_num(a), np.nan_to_num(b)
        # np.allclose(a, b, rtol=1e-6, atol=1e-8) for finite arrays of one shape, without
        # its checks and broadcasting: a diagnosis compares a few hundred pairs.
        return bool((np.abs(a - b) <= 1e-8 + 1e-6 * np.abs(b)).all())


class Variants:
    """The variants of ``reference(*args)`` that a wrong answer to the same call may equal.

    reference: the test's own computation; names: the arguments' names, as the
    docstring calls them. Each variant is kept with the sentence that names
    its cause; variants whose output is the right answer are dropped (they
    name nothing).
    """

    def __init__(self, reference, args, names):
        self.reference, self.args, self.names = reference, tuple(args), tuple(names)
        self.expected = np.asarray(reference(*args), dtype=float)
        self.outputs = {}  # cause -> the output a call with that mistake gives

    def add(self, cause, output):
        """Keep ``output`` as what the mistake ``cause`` gives, unless it is right or a cause
        added before gives it too (the first, most particular sentence names it)."""
        try:
            output = np.asarray(output, dtype=float)
        except (TypeError, ValueError):
            return self
        if _same(output, self.expected) or any(_same(output, o) for o in self.outputs.values()):
            return self
        self.outputs[cause] = output
        return self

    def _call(self, *args, **settings):
        with np.errstate(all="ignore"):
            try:
                return self.reference(*args, **settings)
            except (ValueError, IndexError, ZeroDivisionError):
                return None  # a variant the shapes do not allow names nothing

    def swapped(self):
        """Each two arguments of one shape given in each other's place."""
        for i, j in itertools.combinations(range(len(self.args)), 2):
            a, b = self.args[i], self.args[j]
            if np.shape(a) != np.shape(b) or _same(a, b):
                continue
            args = list(self.args)
            args[i], args[j] = b, a
            first, second = self.names[i], self.names[j]
            output = self._call(*args)
            if output is not None:
                self.add(f"it uses {second} where {first} goes and {first} where {second} goes",
                         output)  # fmt: skip
        return self

    def transposed(self):
        """Each square matrix among the arguments used transposed."""
        for i, a in enumerate(self.args):
            square = np.ndim(a) == 2 and np.shape(a)[0] == np.shape(a)[1]
            if square and not _same(a, np.transpose(a)):
                args = list(self.args)
                args[i] = np.transpose(a)
                output = self._call(*args)
                if output is not None:
                    self.add(f"it uses {self.names[i]} transposed ({self.names[i]}.T)", output)
        return self

    def changed(self, settings):
        """``{cause: {setting: value}}``: the reference with one setting changed, per cause."""
        for cause, changes in settings.items():
            output = self._call(*self.args, **changes)
            if output is not None:
                self.add(cause, output)
        return self

    def carried_over(self, previous):
        """The answer of the previous call (``previous``; None: there was none) returned again."""
        if previous is not None:
            self.add(
                "it returned its answer to the previous call again: it keeps something between "
                "calls; compute each answer from its arguments alone",
                previous,
            )
        return self

    def cause(self, got):
        """The cause whose variant ``got`` equals, if exactly one does; else ""."""
        try:
            got = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return ""
        found = [cause for cause, output in self.outputs.items() if _same(got, output)]
        return found[0] if len(found) == 1 else ""
