"""CPU time of a whole run, every process it starts included: a cgroup of its own.

``/usr/bin/time`` and ``getrusage(RUSAGE_CHILDREN)`` count only the children a
process waits for; a grader's sandboxes are started by a zygote and reaped
there, and a worker pool's processes by the pool, so most of a run's CPU never
reaches them. A cgroup counts every process in it, and every process those
start joins it at birth. :class:`CpuGroup` makes one (cgroup v1's ``cpuacct``
hierarchy, else cgroup v2 with its ``cpu`` controller), a command joins it
before it runs (``preexec_fn=group.join``), and :meth:`CpuGroup.seconds` reads
what all of them used. Making a cgroup needs root, as the rest of the suite.
"""

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup")


class CpuGroup:
    """A new cgroup whose processes' CPU time is counted; remove it with :meth:`close`."""

    def __init__(self, name: str = "bench") -> None:
        leaf = f"{name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        if (V1 / "cpuacct.usage").exists():
            self.path, self.v1 = V1 / leaf, True
        elif "cpu" in (V2 / "cgroup.controllers").read_text().split():
            self.path, self.v1 = V2 / leaf, False
        else:
            raise RuntimeError("no cgroup counts CPU here: cpuacct (v1) or cpu (v2) is needed")
        self.path.mkdir()
        self.procs = str(self.path / "cgroup.procs")

    def join(self) -> None:
        """Put the calling process in the group (a ``preexec_fn``: the command, then all it
        starts)."""
        with open(self.procs, "w") as procs:
            procs.write(str(os.getpid()))

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """The calling process in the group while the block runs, back where it was after
        (the processes it started meanwhile stay in it)."""
        before = self._own_group()
        self.join()
        try:
            yield
        finally:
            with open(before / "cgroup.procs", "w") as procs:
                procs.write(str(os.getpid()))

    def _own_group(self) -> Path:
        """The folder of the group the calling process is in now, in this group's hierarchy."""
        with open("/proc/self/cgroup") as groups:
            for line in groups:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if (self.v1 and "cpuacct" in controllers.split(",")) or (
                    not self.v1 and controllers == ""
                ):
                    return (V1 if self.v1 else V2) / path.lstrip("/")
        raise RuntimeError("this process's cgroup is not in /proc/self/cgroup")

    def seconds(self) -> float:
        """CPU seconds (user and system) every process that was in the group used."""
        if self.v1:
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
        return int(stat["usage_usec"]) / 1e6

    def close(self, wait: float = 10.0) -> None:
        """Remove the group once the processes in it are gone (a few may still be exiting)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                self.path.rmdir()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __enter__(self) -> "CpuGroup":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
