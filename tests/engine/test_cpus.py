"""Do local workers take the CPUs in turn, one each, with what they start on the same one?"""

import multiprocessing
import os
import subprocess
import sys

from autograder.sandbox import cpus


def _take(numbers: cpus.WorkerNumbers, answers: multiprocessing.SimpleQueue) -> None:
    """In a forked process, as ``worker.start`` does: keep to a CPU; say where it and a
    process it then starts may run."""
    cpu = cpus.keep_to_one_cpu(numbers.take())
    started = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    answers.put((cpu, sorted(os.sched_getaffinity(0)), started.strip()))


def test_workers_take_the_cpus_in_turn():
    allowed = sorted(os.sched_getaffinity(0))
    fork = multiprocessing.get_context("fork")
    numbers, answers = cpus.WorkerNumbers(fork), fork.SimpleQueue()
    count = len(allowed) + 1  # once round, and one more
    for _ in range(count):  # one after the other: each takes the next number
        process = fork.Process(target=_take, args=(numbers, answers))
        process.start()
        process.join(60)
        assert process.exitcode == 0
    got = [answers.get() for _ in range(count)]
    if len(allowed) < 2:  # nothing to choose between: nothing is bound
        assert got == [(None, allowed, str(allowed))] * count
        return
    expected = [allowed[n % len(allowed)] for n in range(count)]
    assert [cpu for cpu, _, _ in got] == expected
    assert [(mine, started) for _, mine, started in got] == [([c], str([c])) for c in expected]
    assert sorted(os.sched_getaffinity(0)) == allowed  # the process that forks them is free
