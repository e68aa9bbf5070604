"""Keeping each local worker, and the students it runs, on one CPU of its own.

A worker and its student's process take turns: the worker sends a request and
waits, the student's code runs and answers, and waits for the next one. A
notebook is some 160 of these turns. When the two sit on different CPUs, every
turn wakes the other CPU from idle (an inter-processor interrupt; on a virtual
machine, an exit to the hypervisor), and that cost about a third of each
turn's CPU time on a two-core machine: a call into the student's code took
70 us of CPU, 48 us with both on one CPU. So a local worker keeps to one CPU,
and its sandbox's zygote and every student forked from it inherit that CPU;
the workers take the CPUs this process may use in turn (:class:`WorkerNumbers`).

Nothing else is bound: the main process runs where the kernel puts it, and a
Dask worker, a process the cluster runs rather than the grader, is left as it is.
One worker grading the class of 60 alone spent a median 134 ms of CPU a
notebook bound, 167 unbound (five runs each, in turn). Where every CPU has a
worker grading, the gain is a few percent at most: the CPUs are seldom idle
then, and the kernel already wakes a process where its partner ran.
"""

from __future__ import annotations

import os
from multiprocessing.context import BaseContext


class WorkerNumbers:
    """A counter the workers of one pool share: each :meth:`take` gives the next number.

    Made in the process that forks the pool and inherited by every worker (a
    ``multiprocessing.Value`` in shared memory), so the workers need no other
    way to tell themselves apart.
    """

    def __init__(self, context: BaseContext) -> None:
        self._next = context.Value("i", 0)

    def take(self) -> int:
        """This worker's number: 0 for the first to ask, then 1, 2, ..."""
        with self._next.get_lock():
            number = int(self._next.value)
            self._next.value = number + 1
        return number


def keep_to_one_cpu(number: int) -> int | None:
    """Bind this process, and all it starts from now on, to one CPU; which one, or None.

    number: the worker's :meth:`WorkerNumbers.take`; worker ``n`` gets the ``n``-th of
    the CPUs this process may run on, round again past the last. None (and
    nothing changed) where only one CPU is allowed anyway or the system cannot
    bind a process (not Linux, or a container that forbids it).
    """
    try:
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            return None
        cpu = allowed[number % len(allowed)]
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError):
        return None
    return cpu
