"""Time stock ``nbgrader autograde`` against ``python -m autograder grade``.

Builds a class of N submissions (default 60) cycling through the answer corpus
(correct styles and realistic mistakes), grades it with plain
``nbgrader autograde`` (one command, as a TA would run it; then split over as
many processes as ours has workers) and with our grader (``--jobs`` workers,
default all cores), checks that every test cell got the same points from all,
and prints for each run its wall time and its CPU time, every process it
started included (each run in a cgroup of its own, ``bench/cpu.py``), per
submission too; then the CPU ratio (against the cheaper of stock's two runs,
each a single run exposed to the machine's slow stretches), the wall ratios at
equal cores and with stock on its one core, and our main process's own CPU per
submission (and, of it, what each submission costs once the process has
started: grading, recording).

That CPU ratio sets our whole job (grades, a feedback page per student, a CSV,
the class report) against stock's grading alone. Stock's split run therefore
goes on, as a TA's would, to the outputs ``grade`` also makes:
``nbgrader generate_feedback`` (the pages) and ``nbgrader export`` (a CSV), their
CPU counted apart; the whole job's CPU ratio is printed beside the first.
Both sides start with the assignment recorded in their gradebook, as a TA's
course does: stock's ``nbgrader generate_assignment`` and our ``ensure_gradebook``
run before the clock starts.

With ``--failures K``, it then grades the same class again with K of its
submissions replaced by the failure cases of ``tests/lab/hostile.py`` (broken
files, runaway loops, crashes, tampered cells, cheats), with our grader only:
stock nbgrader has no memory limit or sandbox to survive them. It checks that
every student got a row with the status the case calls for, and that the
others still score what stock nbgrader gave them.

    python bench/bench.py [--students 60] [--jobs N] [--failures K] [--runaway-timeout S]
                          [--repeat 3]

Ours is timed ``--repeat`` times on the same class, once before stock's run and
the rest after it, each run checked against stock's scores, and the median is
compared with stock's one run: a run of ours lasts under 20 s, short enough for
what else the machine is doing to move it by a third, while stock's 200 s
average that out.

With ``--scale N`` (``make bench-scale``: 1,000), it measures how our grader
scales instead: a class of 60 and a class of N, both with the same share of
failure cases (16 in 60) and a 3 s cell limit, graded with ``--jobs``; for each
it prints wall time, seconds per submission, the peak memory of the main
process and of the largest worker, and the main process's own CPU time; the
difference between the two classes' CPU, per submission, is what recording one
result costs with start-up cancelled out, the rate no number of workers can beat.
The cost per submission and the main process's memory must not grow with the class.

With ``--record FILE`` everything it prints is also written to FILE: ``make
bench`` and ``make bench-scale`` record into ``docs/_generated/``, which the
documentation includes, so every figure there comes from one run.

Run it on an otherwise idle machine; timings on shared machines are noisy,
which is why this is a script and not a test.
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))  # cpu.py, however this file is loaded

from cpu import CpuGroup  # noqa: E402  (bench/cpu.py, beside this file)

from autograder import startup  # noqa: E402
from autograder.pipeline import results  # noqa: E402
from autograder.pipeline.course import notebook  # noqa: E402
from autograder.pipeline.course.assignment import find_assignment  # noqa: E402
from autograder.pipeline.course.gradebook import ensure_gradebook  # noqa: E402
from autograder.pipeline.errors import UserError  # noqa: E402
from autograder.tools import corpus, stock  # noqa: E402
from autograder.tools.nbgrader_cli import scratch_course  # noqa: E402
from tests.lab import hostile, lab  # noqa: E402


def build_class(students, assignment=None):
    """``{student_id: notebook}``: the assignment's corpus cycled to ``students`` submissions.

    Entries graded with a time limit of their own (a function that never
    returns) are left out: they are failure cases, which ``--failures`` mixes
    in on purpose, and one of them would make the honest class a test of
    timeouts (stock pays one per test that calls it, ours one in all).
    """
    assignment = assignment or lab.ASSIGNMENT
    (name,) = assignment.notebooks  # the corpus fills one notebook's answers
    release_nb = notebook.read(assignment.release(name))
    entries = corpus.load_corpus(ROOT / corpus.CORPUS / assignment.id)
    entries = {key: entry for key, entry in entries.items() if entry.timeout is None}
    built = corpus.build(entries, release_nb, notebook.read(assignment.solution(name)))
    names = sorted(built)
    return {f"student{i:03d}": built[names[i % len(names)]] for i in range(students)}


def failure_cases(count):
    """``count`` hostile case names, spread evenly over each kind of failure in turn."""
    kinds = [list(k) for k in (hostile.BROKEN, hostile.RUNAWAY, hostile.TAMPERED, hostile.CHEATS)]
    per_kind = -(-count // len(kinds))
    return [
        kinds[i % len(kinds)][(i // len(kinds)) * len(kinds[i % len(kinds)]) // per_kind]
        for i in range(count)
    ]


def as_files(submissions):
    """``{student_id: bytes}``: the notebooks as students hand them in."""
    return {sid: nbformat.writes(nb).encode() for sid, nb in submissions.items()}


def mix_in_failures(files, count, context):
    """``({student_id: bytes}, {student_id: case name})``: every so often, a failure case."""
    files = dict(files)
    release_nb, solution_nb = (notebook.read(ROOT / p) for p in (lab.RELEASE, lab.SOLUTION))
    ids = sorted(files)
    step = max(1, len(ids) // max(count, 1))
    replaced = {}
    for sid, name in zip(ids[::step], failure_cases(min(count, len(ids)))):
        files[sid] = hostile.FAILURES[name].build(release_nb, solution_nb, context)
        replaced[sid] = name
    return files, replaced


class Timed(NamedTuple):
    """One grading run: wall seconds, CPU seconds of every process it started (a cgroup of
    its own, :mod:`cpu`), its results (``{student_id: row}``, or stock's), and ours' main
    process's own CPU seconds."""

    seconds: float
    cpu: float
    results: dict
    main: float = float("nan")  # ours: the main process's own CPU seconds, as grade prints it
    main_each: float = float("nan")  # ours: its CPU ms per submission once started


def _row(label, run, n):
    """One run's line: wall and CPU seconds, and CPU per submission."""
    return f"{label:28}{run.seconds:7.1f} s{run.cpu:8.1f} s{run.cpu / n * 1000:8.0f} ms"


def time_stock(submissions, assignment=None, jobs=1, whole_job=False):
    """Plain ``nbgrader autograde`` over the class, split over ``jobs`` processes (each a
    scratch course of its own, as ``--student`` would split it): a :class:`Timed`.

    whole_job: then also what a TA runs after it for the outputs ``grade`` makes
    (:class:`~autograder.tools.stock.FollowUp`: feedback pages, a CSV), counted
    apart; returns ``(autograde alone, the whole job)``, two :class:`Timed`.
    """
    with CpuGroup("bench-stock") as group, CpuGroup("bench-stock-then") as after:
        graded_at = []
        then = stock.FollowUp(after.join, lambda: graded_at.append(time.perf_counter()))
        start = time.perf_counter()
        graded = stock.autograde(submissions, jobs=jobs, assignment=assignment, join=group.join,
                                 then=then if whole_job else None)  # fmt: skip
        end = time.perf_counter()
        alone = Timed((graded_at or [end])[0] - start, group.seconds(), graded)
        whole = Timed(end - start, group.seconds() + after.seconds(), graded)
    return (alone, whole) if whole_job else alone


def time_ours(files, jobs, scratch, assignment=None, *extra):
    """``python -m autograder grade`` over ``{student_id: bytes}``: a :class:`Timed`.

    extra: more options for ``grade`` (``--timeout 3``). The command's output is
    kept in ``scratch/grade.out`` (see :func:`peak_memory`).
    """
    assignment = assignment or lab.ASSIGNMENT
    course_dir, folder, out = scratch / "course", scratch / "class", scratch / "out"
    scratch_course(ROOT, course_dir, release=True)
    # Untimed, as stock's `nbgrader generate_assignment` is (stock.prepare_course): a TA's
    # course has its gradebook before anything is graded.
    ensure_gradebook(find_assignment(course_dir, assignment.id))
    for student_id, data in files.items():
        path = folder / assignment.submission_path(student_id, assignment.notebooks[0])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    command = [sys.executable, "-m", "autograder", "grade", str(folder),
               "--course", str(course_dir), "--out", str(out), "--jobs", str(jobs),
               "--assignment", assignment.id, *extra]  # fmt: skip
    with CpuGroup("bench-ours") as group:
        start = time.perf_counter()
        done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT,
                              preexec_fn=group.join)  # fmt: skip
        seconds, cpu = time.perf_counter() - start, group.seconds()
    (scratch / "grade.out").write_text(done.stdout)
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    return Timed(seconds, cpu, rows, main_cpu(done.stdout), main_cpu_each(done.stdout))


def time_ours_fresh(files, jobs, assignment=None):
    """:func:`time_ours` in a scratch folder of its own, removed after."""
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        return time_ours(files, jobs, Path(scratch), assignment)


def differing(stock_results, rows, students):
    """The students among ``students`` whose points differ from stock's in any test cell."""
    return [
        s for s in students
        if any(float(rows[s][test]) != points for test, points in stock_results[s].points.items())
    ]  # fmt: skip


def _unused_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _context(scratch):
    """Where a hostile case built for ``scratch`` aims: the run's course, output and class."""
    return {
        "course": scratch / "course", "out": scratch / "out",
        "submissions": scratch / "class", "port": _unused_port(),
    }  # fmt: skip


def run_failures(files, count, jobs, stock_results):
    """Grade the class with ``count`` failure cases mixed in; prints, returns the problems."""
    with tempfile.TemporaryDirectory(prefix="bench-failures-") as scratch:
        scratch = Path(scratch)
        files, replaced = mix_in_failures(files, count, _context(scratch))
        seconds, _, rows, *_ = time_ours(files, jobs, scratch)
        main_mib, worker_mib = peak_memory((scratch / "grade.out").read_text())
    problems = [f"{s}: no row" for s in files if s not in rows]
    for sid, name in replaced.items():
        wanted = hostile.FAILURES[name].status
        got = rows.get(sid, {}).get("status")
        if wanted != "any" and got != wanted:
            problems.append(f"{sid} ({name}): status {got}, expected {wanted}")
    honest = [s for s in files if s not in replaced and s in rows]
    problems += [f"{s}: points differ from stock" for s in differing(stock_results, rows, honest)]
    statuses = Counter(row["status"] for row in rows.values())
    n = len(files)
    print(f"\nthe same class with {len(replaced)} failure cases mixed in:")
    print("  " + ", ".join(replaced.values()))
    print(f"python -m autograder     : {seconds:7.1f} s  ({seconds / n:.2f} s each)")
    print(f"rows                     : {len(rows)} of {n}; " + ", ".join(
        f"{status} {number}" for status, number in statuses.most_common()
    ))  # fmt: skip
    print(f"statuses and scores      : {'as expected' if not problems else problems}")
    print(f"peak memory              : main {main_mib} MiB, largest worker {worker_mib} MiB")
    return problems


RECORD_SECONDS = 0.012  # main-process CPU per result, when not measured (make bench-scale)
PAPER_CLASS = 10_000  # the class the estimate is for
PAPER_WORKERS = (2, 4, 8, 16, 64)


def paper_estimate(seconds_each, jobs, record_seconds=RECORD_SECONDS):
    """Lines estimating a class of PAPER_CLASS on N worker cores, from a measured rate.

    seconds_each: wall seconds per submission with ``jobs`` workers, so each costs
    ``seconds_each * jobs`` worker-seconds; the main process records at most
    one result per ``record_seconds`` (its CPU per submission) whatever N is, a
    floor more workers cannot lower.
    """
    worker_seconds = seconds_each * jobs
    floor = PAPER_CLASS * record_seconds / 60
    lines = [
        f"on paper, {PAPER_CLASS:,} submissions at {worker_seconds:.2f} worker-s each, "
        f"recording {record_seconds * 1000:.0f} ms each:"
    ]
    for workers in PAPER_WORKERS:
        minutes = max(PAPER_CLASS * worker_seconds / workers / 60, floor)
        bound = "recording" if minutes == floor else "workers"
        lines.append(f"{workers:9d} workers: {minutes:6.0f} min ({bound})")
    return lines


class Record:
    """Standard output, also written to a file: what the docs include."""

    def __init__(self, stream, path):
        self.stream, self.file = stream, open(path, "w")

    def write(self, text):
        self.file.write(text)
        return self.stream.write(text)

    def flush(self):
        self.file.flush()
        self.stream.flush()


def peak_memory(output):
    """``(main MiB, largest worker MiB)`` from the summary ``grade`` prints."""
    found = re.search(r"grader peak memory: main (\d+) MiB, largest worker (\d+) MiB", output)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def main_cpu(output):
    """The main process's own CPU seconds (user + system) from the summary ``grade`` prints."""
    found = re.search(r"grader main process CPU: ([\d.]+) s", output)
    return float(found.group(1)) if found else float("nan")


def main_cpu_each(output):
    """The main process's CPU ms per submission once started (grading, recording, the class's
    files), from the summary ``grade`` prints."""
    found = re.search(r"then (\d+) ms per submission graded", output)
    return float(found.group(1)) if found else float("nan")


def run_scale(sizes, jobs, timeout=3):
    """Grade classes of each size with the failure mix; print time and memory per size."""
    print(f"scale: classes with {SCALE_SHARE[0]} failure cases in {SCALE_SHARE[1]}, "
          f"--jobs {jobs}, --timeout {timeout:g}")  # fmt: skip
    print(f"{'students':>9} {'wall s':>8} {'s each':>7} {'main MiB':>9} {'worker MiB':>11} "
          f"{'main CPU s':>11}")  # fmt: skip
    measured = []
    for size in sizes:
        files = as_files(build_class(size))
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
            scratch = Path(scratch)
            count = round(size * SCALE_SHARE[0] / SCALE_SHARE[1])
            files, _ = mix_in_failures(files, count, _context(scratch))
            run = time_ours(files, jobs, scratch, None, "--timeout", f"{timeout:g}")
            seconds, rows = run.seconds, run.results
            output = (scratch / "grade.out").read_text()
            main_mib, worker_mib = peak_memory(output)
            cpu = main_cpu(output)
        assert len(rows) == size, f"{size - len(rows)} submissions got no row"
        print(f"{size:9d} {seconds:8.1f} {seconds / size:7.2f} {main_mib:9d} {worker_mib:11d} "
              f"{cpu:11.1f}")  # fmt: skip
        measured.append((size, seconds, main_mib, cpu))
    record_seconds = RECORD_SECONDS
    if len(measured) > 1:  # start-up cancels out of the difference between two classes
        (small, _, _, cpu_small), (big, _, _, cpu_big) = measured[0], measured[-1]
        record_seconds = (cpu_big - cpu_small) / (big - small)
        rate = 1 / record_seconds if record_seconds > 0 else float("inf")
        print(f"main process CPU per submission: {record_seconds * 1000:.0f} ms "
              f"(at most {rate:.0f} a second, whatever the workers)")  # fmt: skip
    size, seconds, _, _ = measured[-1]
    print("\n".join(paper_estimate(seconds / size, jobs, record_seconds)))
    return measured


SCALE_SHARE = (16, 60)  # failure cases per students, as in `make bench`


def run_runaway(files, jobs, without_seconds, timeout=None):
    """Grade the class with one student swapped for a function that loops; print both times.

    timeout: the cell limit for this run (default: the course's).
    """
    files = dict(files)
    release_nb, solution_nb = (notebook.read(ROOT / p) for p in (lab.RELEASE, lab.SOLUTION))
    first = sorted(files)[0]
    files[first] = hostile.FAILURES["runaway_attention"].build(release_nb, solution_nb, {})
    extra = ["--timeout", f"{timeout:g}"] if timeout else []
    with tempfile.TemporaryDirectory(prefix="bench-runaway-") as scratch:
        seconds, _, rows, *_ = time_ours(files, jobs, Path(scratch), None, *extra)
    timeout = timeout or float(lab.ASSIGNMENT.config.Execute.get("timeout", 30))
    print("\nthe same class with one student's attention_weights looping forever:")
    print(f"python -m autograder     : {seconds:7.1f} s  (without it: {without_seconds:.1f} s)")
    print(
        f"difference               : {seconds - without_seconds:7.1f} s  "
        f"(one cell timeout is {timeout:g} s); its row: {rows[first]['status']}"
    )
    return [] if rows[first]["status"] == "timeout" else [f"{first}: not a timeout row"]


def start_keeping_environment():
    """``startup.start()`` for this process, its environment left as it was given.

    Each grader starts from the environment a TA's shell gives it: ours sets its
    one BLAS thread itself (``startup.ONE_THREAD``), and stock must not inherit
    that from this process (it took 50 ms off each of stock's notebooks).
    """
    given = dict(os.environ)
    startup.start()
    os.environ.clear()
    os.environ.update(given)


def main():
    """Run both graders on the same class; print the comparison."""
    start_keeping_environment()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--failures", type=int, default=0, help="failure cases to mix in, then")
    parser.add_argument("--assignment", help="an assignment under source/ (default: the only one)")
    parser.add_argument(
        "--runaway-timeout", type=float, help="cell limit for the runaway run (course's)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="time ours this many times; the median counts (3)"
    )
    parser.add_argument("--scale", type=int, help="measure classes of 60 and of this size instead")
    parser.add_argument("--record", type=Path, help="also write what it prints to this file")
    args = parser.parse_args()
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        sys.stdout = Record(sys.stdout, args.record)
    if args.scale:
        run_scale(sorted({60, args.scale}), args.jobs)
        return 0
    try:
        assignment = find_assignment(ROOT, args.assignment)
    except UserError as error:
        parser.error(str(error))
    if args.failures and assignment != lab.ASSIGNMENT:
        parser.error(f"--failures: tests/lab/hostile.py is written for {lab.ASSIGNMENT.id} only")
    submissions = build_class(args.students, assignment)
    cores = os.cpu_count()
    print(f"class of {len(submissions)} submissions; {cores} cores; ours with --jobs {args.jobs}")
    files = as_files(submissions)
    # Ours once before stock's run and the rest after it; the median counts (see above).
    first = time_ours_fresh(files, args.jobs, assignment)
    stock_run = time_stock(submissions, assignment)
    runs = [first, *(time_ours_fresh(files, args.jobs, assignment) for _ in range(args.repeat - 1))]
    stock_results = stock_run.results
    # stock split over as many processes as ours has workers: wall time at equal cores
    stock_split, stock_whole = time_stock(submissions, assignment, jobs=args.jobs, whole_job=True)
    differ = sorted(
        {s for run in runs for s in differing(stock_results, run.results, stock_results)}
    )
    differ += [s for s in stock_results if stock_split.results[s].points != stock_results[s].points]
    ours = Timed(
        statistics.median(r.seconds for r in runs), statistics.median(r.cpu for r in runs), {}
    )
    n = len(submissions)
    each = ", ".join(f"{r.seconds:.1f} s / {r.cpu:.1f} s" for r in runs)
    main = statistics.median(r.main for r in runs)
    print("CPU counts every process a run starts (a cgroup of its own per run); wall time")
    print("is compared at equal cores, and, as a TA sees it, stock on the one core it uses.")
    print(f"{'':28}{'wall':>9}{'CPU':>10}{'CPU each':>11}")
    print(_row("stock, 1 process", stock_run, n))
    print(_row(f"stock, {args.jobs} processes", stock_split, n))
    print(_row("stock, the whole job", stock_whole, n)
          + f"  ({args.jobs} processes: autograde, generate_feedback, export)")  # fmt: skip
    print(_row(f"ours, {args.jobs} workers", ours, n) + f"  (median of {len(runs)} runs: {each})")
    # Stock's cheaper run: the machine's speed moves by a fifth within minutes, and one
    # slow stretch during a single stock run would flatter us by as much.
    cheaper = min(stock_run.cpu, stock_split.cpu)
    print(f"{'CPU ratio, stock / ours':28}: {cheaper / ours.cpu:.1f}x  "
          f"(stock's cheaper run, {cheaper / n * 1000:.0f} ms each)")  # fmt: skip
    print(f"{'CPU ratio, the whole job':28}: {stock_whole.cpu / ours.cpu:.1f}x  "
          "(grades, a page per student and a CSV on both sides)")  # fmt: skip
    print(f"{f'wall ratio, {args.jobs} cores each':28}: {stock_split.seconds / ours.seconds:.1f}x")
    print(f"{'wall ratio, stock on 1 core':28}: {stock_run.seconds / ours.seconds:.1f}x")
    main_each = statistics.median(r.main_each for r in runs)
    print(f"{'ours, main process CPU':28}: {main / n * 1000:.0f} ms per submission, of which "
          f"{main_each:.0f} ms once started (imports and set-up: the rest)")  # fmt: skip
    print(f"{'scores':28}: {'identical' if not differ else f'DIFFER for {differ}'}")
    our_seconds = ours.seconds
    problems = run_failures(files, args.failures, args.jobs, stock_results) if args.failures else []
    if args.failures:
        problems += run_runaway(files, args.jobs, our_seconds, args.runaway_timeout)
    return 1 if differ or problems else 0


if __name__ == "__main__":
    sys.exit(main())
