"""Time stock ``nbgrader autograde`` against ``python -m autograder grade``.

Builds a class of N submissions (default 60) cycling through the answer corpus
(correct styles and realistic mistakes), grades it once with plain
``nbgrader autograde`` (one command, as a TA would run it) and once with our
grader (``--jobs`` workers, default all cores), checks that every test cell got
the same points from both, and prints seconds per submission and the ratio.

    python bench/bench.py [--students 60] [--jobs N]

Run it on an otherwise idle machine; timings on shared machines are noisy,
which is why this is a script and not a test.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import corpus, course, notebook, report, stock  # noqa: E402
from autograder.generate import scratch_course  # noqa: E402


def build_class(students):
    """``{student_id: notebook}``: the corpus cycled to ``students`` submissions."""
    release_nb = notebook.read(ROOT / course.RELEASE)
    entries = corpus.load_corpus(ROOT / course.CORPUS)
    built = corpus.build(entries, release_nb, notebook.read(ROOT / course.SOLUTION))
    names = sorted(built)
    return {f"student{i:03d}": built[names[i % len(names)]] for i in range(students)}


def time_stock(submissions):
    """Seconds for one plain ``nbgrader autograde`` over the class, and its results."""
    start = time.perf_counter()
    results = stock.autograde(submissions, jobs=1)
    return time.perf_counter() - start, results


def time_ours(submissions, jobs, scratch):
    """Seconds for ``python -m autograder grade`` over the class, and its rows."""
    course_dir, folder, out = scratch / "course", scratch / "class", scratch / "out"
    scratch_course(ROOT, course_dir, release=True)
    for student_id, nb in submissions.items():
        notebook.write(nb, folder / course.submission_path(student_id))
    command = [sys.executable, "-m", "autograder", "grade", str(folder),
               "--course", str(course_dir), "--out", str(out), "--jobs", str(jobs)]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    return seconds, {r["student_id"]: r for r in report.read_csv(out / "grades.csv")}


def main():
    """Run both graders on the same class; print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    submissions = build_class(args.students)
    cores = os.cpu_count()
    print(f"class of {len(submissions)} submissions; {cores} cores; ours with --jobs {args.jobs}")
    stock_seconds, stock_results = time_stock(submissions)
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        our_seconds, rows = time_ours(submissions, args.jobs, Path(scratch))
    differ = [
        s for s, result in stock_results.items()
        if any(float(rows[s][test]) != points for test, points in result.points.items())
    ]  # fmt: skip
    n = len(submissions)
    print(f"stock nbgrader autograde : {stock_seconds:7.1f} s  ({stock_seconds / n:.2f} s each)")
    print(f"python -m autograder     : {our_seconds:7.1f} s  ({our_seconds / n:.2f} s each)")
    print(f"ratio                    : {stock_seconds / our_seconds:.1f}x faster")
    print(f"scores                   : {'identical' if not differ else f'DIFFER for {differ}'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
