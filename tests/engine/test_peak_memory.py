"""Does the grader report its own peak memory, and keep its footprint from creeping up?"""

import subprocess
import sys
from pathlib import Path

import pytest

from autograder.pipeline.grading import worker

LAUNCHER_MIB = 300  # far above what importing the worker module needs


@pytest.mark.slow  # starts a Python process
def test_peak_memory_is_the_programs_own():
    """Started from a process holding 300 MiB (as the benchmark holds a class), is that left out?

    getrusage's ru_maxrss keeps the launcher's peak across exec: the benchmark
    once reported 194 MiB for a grader that used 143.
    """
    held = bytearray(LAUNCHER_MIB * 2**20)
    held[::4096] = b"\1" * len(held[::4096])  # touch every page, so it is resident
    probe = "from autograder.pipeline.grading.worker import peak_memory_kib as p; print(p())"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert 10_000 < int(done.stdout) < (LAUNCHER_MIB - 50) * 1024, done.stdout
    assert held[0] == 1


def _resident_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_memory_freed_between_students_goes_back_to_the_system():
    """After a big submission's buffers are freed, does the worker's footprint shrink again?

    Blocks of 2 KiB come from the C library's heap; keeping every hundredth
    scatters what is freed through it, where glibc would otherwise keep it.
    """
    blocks = [bytes(2048) + bytes([n % 256]) for n in range(30_000)]  # about 60 MiB
    kept = blocks[::100]
    del blocks
    before = _resident_kib()
    worker.give_back_memory()
    after = _resident_kib()
    assert before - after > 30 * 1024, f"{before} KiB -> {after} KiB"
    assert len(kept) == 300
