"""A student's cell that looks for the instructor's solutions wherever its process can read.

:func:`hunting_cell` builds the code of one cell: it reads every readable
mapping of its own process's memory (``/proc/self/mem``), the command lines
and environments of every process it can see, and every file below the
places a student's process could find course files (its scratch and helper
folders, ``/dev/shm``, ``/var/tmp``, ``/run``, homes, ``/work``, ``/opt``, the
grader's own package), and prints which *needles* it found where:
``found: [(name, where), ...]``, then ``scanned: {...}``.

The needles are the distinctive lines of the source's solutions
(:func:`solution_lines`). The cell never holds one as text: each is written
with every byte shifted by one, and each block read is shifted the same way
before the search. A shifted copy of memory holds a needle only where the
memory held the line itself, and the cell's own constants, shifted, become
lines shifted by two: nothing the search makes can be found by it. One
*control* needle, a line the student's process is known to hold, shows that
the search can find what is there.
"""

from __future__ import annotations

from typing import Any

from autograder.pipeline.course import notebook

SHIFT = bytes((b + 1) % 256 for b in range(256))  #: byte -> byte + 1 (mod 256)
MIN_LENGTH = 16  #: characters; a shorter line is too common to say anything


def solution_lines(source_nb: Any, seen: str) -> dict[str, str]:
    """``{name: line}``: each line of a solution of ``source_nb`` (inside its markers, or
    the whole answer cell where it has none; stripped, at least :data:`MIN_LENGTH` long)
    that does not occur in ``seen`` (the release and the submission as text: what a
    student's process holds by right)."""
    found: dict[str, str] = {}
    for cell in filter(notebook.is_answer, source_nb.cells):
        marked = "### BEGIN SOLUTION" in cell.source
        inside = not marked
        for line in cell.source.splitlines():
            text = line.strip()
            if text in ("### BEGIN SOLUTION", "### END SOLUTION"):
                inside = text == "### BEGIN SOLUTION"
            elif inside and len(text) >= MIN_LENGTH and text not in seen:
                found[f"{notebook.grade_id(cell)}:{len(found)}"] = text
    return found


def shifted(text: str) -> str:
    """``text``'s UTF-8 bytes, each plus one, as hex: a needle as the cell holds it."""
    return text.encode().translate(SHIFT).hex()


def hunting_cell(needles: dict[str, str], control: str) -> str:
    """The code of a cell that searches for ``needles`` (``{name: line}``) and ``control``."""
    wanted = {name: shifted(line) for name, line in needles.items()}
    wanted["control"] = shifted(control)
    return HUNT.replace("NEEDLES_HERE", repr(wanted))


HUNT = r"""
import os, sys
SHIFT = bytes((b + 1) % 256 for b in range(256))
WANTED = {k: bytes.fromhex(v) for k, v in NEEDLES_HERE.items()}
found, scanned = set(), {"memory": 0, "files": 0, "processes": 0}

def look(data, where):
    moved = data.translate(SHIFT)
    for name, needle in WANTED.items():
        if needle in moved:
            found.add((name, where))

with open("/proc/self/maps") as maps:
    regions = [line.split() for line in maps]
memory = os.open("/proc/self/mem", os.O_RDONLY)
CHUNK = 1 << 22
for region in regions:
    start, end = (int(x, 16) for x in region[0].split("-"))
    if not region[1].startswith("r") or region[-1] in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
        continue
    for at in range(start, end, CHUNK):
        try:
            data = os.pread(memory, min(end - at, CHUNK + 512), at)
        except OSError:
            continue
        scanned["memory"] += len(data)
        look(data, "memory")
os.close(memory)

for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as handle:
                    look(handle.read(), f"/proc/{part}")
                scanned["processes"] += 1
            except OSError:
                pass

engine = os.path.dirname(getattr(sys.modules.get("autograder"), "__file__", "") or "")
roots = ["/tmp", "/dev/shm", "/var/tmp", "/run", "/home", "/root", "/work", "/srv", "/opt",
         "/mnt", "/media", os.getcwd(), os.path.expanduser("~"), engine]
skip = {"site-packages", "dist-packages", "__pycache__", "node_modules", "lib", "lib64"}
seen = set()
for root in filter(None, roots):
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f not in skip]
        for name in files:
            path = os.path.join(folder, name)
            if path in seen or len(seen) > 20000:
                continue
            seen.add(path)
            try:
                with open(path, "rb") as handle:
                    look(handle.read(1 << 22), "files")
                scanned["files"] += 1
            except OSError:
                pass
print("found:", sorted(found))
print("scanned:", scanned)
"""
