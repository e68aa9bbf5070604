"""Does the grader report its own peak memory, not the peak of the process that started it?"""

import subprocess
import sys

import pytest

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
