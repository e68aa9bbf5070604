"""Where one submission's CPU goes: the grading pipeline's steps, each in ms per submission.

``bench.py`` says how much CPU a run costs against stock nbgrader; this says
where ours goes, so the next change can aim at the largest share. It grades the
benchmark's class (``bench.build_class``) with one worker in this process,
started and warmed as a pool's worker is (:func:`.worker.prepare`), inside a
cgroup of its own (``bench/cpu.py``): what this process spends is the worker's
(split by step, each step's CPU counted while it runs), and everything else
the group counts is the student processes' (the zygote's children: their
start, their cells, their answers to the tests, their exit).

Printed, per submission: the worker's steps (reading the file, inspecting and
sanitising it, starting the student's process, the student's cells, the test
cells, and of those the requests they make to the student's process with the
calls it has the grader serve, the feedback page, the notebook written out),
the rest of the worker's time, the student processes' time and the total;
then what a worker pays once (its set-up, the release page rendered to warm
the caches, its sandbox's start with the instructor's figures learned); last,
what one turn with the student's process (a request and its reply) costs,
measured by adding turns (:func:`_marginal_turn`), and how many a submission
makes. It keeps to one CPU while it measures, with its sandbox and students,
as a pool's worker does (:mod:`autograder.sandbox.cpus`).

    python bench/where.py [--students 60] [--record FILE]

A step that never ran is an error, never a zero: the script names the function
it wraps, and a refactor that moves one must move this too. Timings on a shared
machine vary by a fifth from run to run; compare runs made one after another.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))

from cpu import CpuGroup  # noqa: E402

import bench  # noqa: E402  (bench/bench.py, beside this file)
from autograder import startup  # noqa: E402
from autograder.pipeline.course.assignment import find_assignment  # noqa: E402
from autograder.pipeline.course.gradebook import ensure_gradebook  # noqa: E402
from autograder.pipeline.course.notebook_text import NotebookText  # noqa: E402
from autograder.pipeline.grading import execute, sanitize, worker  # noqa: E402
from autograder.pipeline.reports import feedback_page  # noqa: E402
from autograder.pipeline.settings import GradingLimits  # noqa: E402
from autograder.pipeline.submissions.submission import Submission  # noqa: E402
from autograder.sandbox import cpus, launcher  # noqa: E402
from autograder.tools.nbgrader_cli import scratch_course  # noqa: E402
from tests.lab import lab  # noqa: E402

#: the step during which the student processes' CPU is counted too: their start
STARTING = "start the student's process"
#: (label, owner, attribute): the steps timed, in the order a submission meets them;
#: a label starting with two spaces is part of the step above it
STEPS = (
    ("read the file", sanitize, "read"),
    ("inspect it against the release", sanitize, "inspect"),
    ("sanitise it (nbgrader's steps)", sanitize, "sanitize"),
    (STARTING, launcher.Sandbox, "spawn"),
    ("the student's cells", execute, "run_student_cell"),
    ("the test cells", execute, "run_trusted_cell"),
    ("  requests to the student", launcher.Student, "request"),
    ("the feedback page", feedback_page.Renderer, "render"),
    ("the notebook written out", NotebookText, "writes"),
)


class Steps:
    """CPU seconds of this process spent in each step, and how often each ran.

    elsewhere: CPU seconds so far of the other processes counted with this one (a
    cgroup's): during :data:`STARTING` those are counted too, in :attr:`starting`.
    Only there: reading a cgroup around every call would cost more than many calls.
    """

    def __init__(self, elsewhere: Callable[[], float] = lambda: 0.0) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.elsewhere, self.starting = elsewhere, 0.0

    def timed(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, counting its CPU under ``label`` (an inner step's counts too)."""
        others = label == STARTING

        def step(*args: Any, **kwargs: Any) -> Any:
            there = self.elsewhere() if others else 0.0
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[label] += time.process_time() - started
                self.calls[label] += 1
                if others:
                    self.starting += self.elsewhere() - there

        return step

    def never_ran(self) -> list[str]:
        """The steps of :data:`STEPS` not called once (a function moved, or renamed)."""
        return [label.strip() for label, _, _ in STEPS if not self.calls[label]]

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """While the block runs, every step of :data:`STEPS` is timed."""
        originals = [(owner, name, getattr(owner, name)) for _, owner, name in STEPS]
        for (label, owner, name), (_, _, original) in zip(STEPS, originals):
            setattr(owner, name, self.timed(label, original))
        try:
            yield
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)


@contextlib.contextmanager
def _one_cpu() -> Iterator[None]:
    """While the block runs, this process (and what it starts) keeps to one CPU, as a
    pool's worker does (``worker.start``); the CPUs it had are given back after, for a
    caller (a test) that goes on."""
    allowed = os.sched_getaffinity(0)
    cpus.keep_to_one_cpu(0)
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def _milliseconds(seconds: float, students: int) -> str:
    return f"{seconds / students * 1000:7.1f} ms"


def measure(students: int) -> list[str]:
    """Grade a class of ``students`` with one worker here; the report's lines."""
    assignment = lab.ASSIGNMENT
    files = bench.as_files(bench.build_class(students, assignment))
    lines = [f"where one submission's CPU goes: a class of {students}, one worker, no pool"]
    with tempfile.TemporaryDirectory(prefix="where-") as scratch:
        course = scratch_course(ROOT, Path(scratch) / "course", release=True)
        chosen = find_assignment(course, assignment.id)
        db_url = ensure_gradebook(chosen, f"sqlite:///{scratch}/gradebook.db")
        settings = worker.WorkerSettings(
            str(course), chosen.id, db_url, GradingLimits.for_course(chosen), os.getpid(), True
        )
        (name,) = chosen.notebooks
        arrived = datetime.now(UTC)
        todo = [Submission(sid, {name: data}, "", arrived) for sid, data in files.items()]
        with CpuGroup("where") as group, group.inside(), _one_cpu():

            def elsewhere() -> float:  # CPU seconds of the group's other processes
                return group.seconds() - time.process_time()

            def cost(action: Callable[[], Any]) -> tuple[Any, float]:
                """``action()``'s result and the CPU seconds it cost, its processes' too."""
                here, there = time.process_time(), elsewhere()
                done = action()
                return done, time.process_time() - here + elsewhere() - there

            one, set_up = cost(lambda: worker.Worker(settings))
            warmed = cost(lambda: one.fill_caches(True))[1]
            frozen_before = gc.get_freeze_count()
            gc.freeze()  # as a pool's worker does once started (worker.start)
            once = [
                ("set up a worker", set_up),
                ("render the release (warm caches)", warmed),
                ("start its sandbox, learn the figures", cost(one.learn_figures)[1]),
            ]
            steps = Steps(elsewhere)
            here, there = time.process_time(), elsewhere()
            with steps.watching():
                for submission in todo:
                    one.grade(submission)
            mine = time.process_time() - here
            time.sleep(0.2)  # the last student's exit is counted
            theirs = elsewhere() - there
            turn, turns = _marginal_turn(todo, one.grade, cost)
            if not frozen_before:  # a process that froze nothing keeps nothing frozen
                gc.unfreeze()
            one.close()
    missing = steps.never_ran()
    if missing:
        raise SystemExit(f"where.py: never ran: {', '.join(missing)} (out of date with the code?)")
    lines.append(f"{'the worker process':40}{_milliseconds(mine, students)}")
    counted = 0.0
    for label, _, _ in STEPS:
        calls = steps.calls[label] / students
        spent = _milliseconds(steps.seconds[label], students)
        lines.append(f"  {label:38}{spent}  ({calls:.0f} a submission)")
        if not label.startswith(" "):
            counted += steps.seconds[label]
    lines.append(f"  {'the rest':38}{_milliseconds(mine - counted, students)}")
    lines.append(f"{'the student processes':40}{_milliseconds(theirs, students)}")
    lines.append(
        f"  {'their start, while the worker waits':38}{_milliseconds(steps.starting, students)}"
    )
    rest = theirs - steps.starting
    lines.append(f"  {'their cells, answers to tests, exit':38}{_milliseconds(rest, students)}")
    lines.append(f"{'in all':40}{_milliseconds(mine + theirs, students)}")
    lines.append("once per worker: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in once))
    lines.append(
        f"a turn (a request to the student's process and its reply), marginal: "
        f"{turn * 1e6:.0f} us; {turns:.0f} a submission, {turn * turns * 1000:.1f} ms of it"
    )
    return lines


#: no-op requests sent before each real one to find what a turn costs (:func:`_marginal_turn`)
EXTRA_TURNS = 2


def _marginal_turn(
    todo: list[Submission],
    grade: Callable[[Submission], Any],
    cost: Callable[[Callable[[], Any]], tuple[Any, float]],
) -> tuple[float, float]:
    """``(CPU seconds one more turn costs, turns a submission)``, both processes counted.

    A turn is a request from the worker to the student's process and its reply.
    Where the worker and its student share a CPU, the kernel's split of their
    time between the two is not what each spent (a process can be charged more
    CPU than the wall time it took), so this is measured by the difference: the
    class graded again as it is, then with :data:`EXTRA_TURNS` no-op requests
    before each real one, the whole cgroup counted both times.
    """
    original = launcher.Student.request
    sent = [0]

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent[0] += 1
        return original(self, *args, **kwargs)

    def doubled(self: Any, message: dict[str, Any], timeout: float, *rest: Any) -> Any:
        for _ in range(EXTRA_TURNS):  # a name no student binds: the reply says "missing"
            original(self, {"op": "lookup", "name": "__where_no_such_name__"}, timeout)
        return original(self, message, timeout, *rest)

    student: Any = launcher.Student  # its request replaced for the two passes
    try:
        student.request = counted
        plain = cost(lambda: [grade(s) for s in todo])[1]
        student.request = doubled
        more = cost(lambda: [grade(s) for s in todo])[1]
    finally:
        student.request = original
    return (more - plain) / (sent[0] * EXTRA_TURNS), sent[0] / len(todo)


def main(argv: list[str] | None = None) -> int:
    startup.start()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--record", type=Path, help="also write what it prints to this file")
    args = parser.parse_args(argv)
    if args.students < 1:
        parser.error("--students: at least 1")
    text = "\n".join(measure(args.students)) + "\n"
    print(text, end="")
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
