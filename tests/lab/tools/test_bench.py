"""Does the benchmark still run, and does it mix in the failure cases it promises?

Timings are not asserted (the machines are noisy); this only keeps
``bench/bench.py`` from rotting, on the smallest class it can build.
"""

import importlib.util
import os
import re
import subprocess
import sys
import time

import nbformat
import pytest

from autograder.pipeline.course import notebook

from .. import hostile, lab

pytestmark = [pytest.mark.slow, pytest.mark.stock]


def _bench():
    spec = importlib.util.spec_from_file_location("bench", lab.ROOT / "bench" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_failure_cases_cover_every_kind():
    picked = _bench().failure_cases(16)
    assert len(picked) == len(set(picked)) == 16
    for kind in (hostile.BROKEN, hostile.RUNAWAY, hostile.TAMPERED, hostile.CHEATS):
        assert len(set(picked) & set(kind)) == 4


def test_mixing_in_replaces_only_the_chosen_students(tmp_path):
    bench = _bench()
    submissions = bench.as_files(bench.build_class(12))
    context = {"course": tmp_path, "out": tmp_path, "submissions": tmp_path, "port": 1}
    files, replaced = bench.mix_in_failures(submissions, 4, context)
    assert sorted(files) == sorted(submissions)
    assert sorted(replaced.values()) == sorted(bench.failure_cases(4))
    plain, _ = bench.mix_in_failures(submissions, 0, context)
    assert [s for s in files if files[s] != plain[s]] == sorted(replaced)


def test_benchmark_runs_end_to_end(tmp_path):
    """Does the benchmark run, agree with stock, and record exactly what it prints?"""
    record = tmp_path / "figures" / "bench.txt"
    done = subprocess.run(
        [sys.executable, str(lab.ROOT / "bench" / "bench.py"), "--students", "1",
         "--failures", "1", "--jobs", "2", "--runaway-timeout", "2", "--repeat", "2",
         "--record", str(record)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert record.read_text() == done.stdout  # what the docs include is what it printed
    assert re.search(r"\nscores +: identical", done.stdout)
    assert re.search(r"median of 2 runs: [\d.]+ s / [\d.]+ s, [\d.]+ s / [\d.]+ s\)", done.stdout)
    for line in (r"stock, 1 process", r"stock, 2 processes", r"ours, 2 workers"):
        assert re.search(line + r" +[\d.]+ s +[\d.]+ s +\d+ ms", done.stdout), line
    ratio = re.search(
        r"CPU ratio, stock / ours +: ([\d.]+)x +\(stock's cheaper run, (\d+) ms each\)", done.stdout
    )
    assert ratio, done.stdout
    each = [
        int(m)
        for m in re.findall(r"stock, \d+ process(?:es)? +[\d.]+ s +[\d.]+ s +(\d+) ms", done.stdout)
    ]
    assert len(each) == 2 and abs(int(ratio[2]) - min(each)) <= 1, (ratio[0], each)
    # Stock's whole job (its split run, then its pages and CSV) costs more than its grading.
    whole = re.search(
        r"stock, the whole job +[\d.]+ s +([\d.]+) s +(\d+) ms +"
        r"\(2 processes: autograde, generate_feedback, export\)",
        done.stdout,
    )
    split = re.search(r"stock, 2 processes +[\d.]+ s +([\d.]+) s", done.stdout)
    assert whole and split and float(whole[1]) > float(split[1]), done.stdout
    ours = re.search(r"ours, 2 workers +[\d.]+ s +[\d.]+ s +(\d+) ms", done.stdout)
    whole_ratio = re.search(r"CPU ratio, the whole job +: ([\d.]+)x +\(grades, a page", done.stdout)
    assert ours and whole_ratio, done.stdout
    # From the millisecond column: the seconds, rounded to 0.1 s, are too coarse for one student.
    exact = int(whole[2]) / int(ours[1])
    assert abs(float(whole_ratio[1]) - exact) <= 0.05 + exact / int(ours[1]), done.stdout
    assert re.search(r"wall ratio, 2 cores each +: [\d.]+x", done.stdout)
    assert re.search(
        r"ours, main process CPU +: \d+ ms per submission, of which \d+ ms once started",
        done.stdout,
    )
    assert "rows                     : 1 of 1; " in done.stdout
    assert "statuses and scores      : as expected" in done.stdout
    assert re.search(r"peak memory +: main \d+ MiB, largest worker [1-9]\d* MiB", done.stdout)


def test_stock_runs_in_the_environment_the_benchmark_was_given(monkeypatch):
    """Ours sets one BLAS thread in its own processes; the benchmark must not hand that to
    stock's (it ran stock's kernels cheaper than a TA's shell does)."""
    from autograder.pipeline.course.assignment import tool_environment
    from autograder.startup import ONE_THREAD

    for name in ONE_THREAD:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BENCH_GIVEN", "kept")
    _bench().start_keeping_environment()
    stocks = tool_environment()  # what stock's nbgrader commands are started with
    assert not set(ONE_THREAD) & set(stocks) and stocks["BENCH_GIVEN"] == "kept"


def test_main_process_cpu_is_read_from_what_grade_prints(graded_samples):
    """Does ``grade`` print its main process's CPU, and the bench read it?"""
    printed = graded_samples["done"].stdout + graded_samples["done"].stderr
    assert 0 < _bench().main_cpu(printed) < float("inf"), printed[-500:]
    assert 0 <= _bench().main_cpu_each(printed) < _bench().main_cpu(printed) * 1000, printed[-500:]


def test_paper_estimate_has_a_recording_floor():
    """Do more workers shorten the estimate until the main process's recording bounds it?"""
    bench = _bench()
    lines = bench.paper_estimate(0.6, 2, record_seconds=0.06)
    minutes = [float(line.split(":")[1].split()[0]) for line in lines[1:]]
    assert minutes[0] == 2 * minutes[1] and minutes == sorted(minutes, reverse=True)
    assert lines[-1].endswith("(recording)") and lines[1].endswith("(workers)")
    assert minutes[-1] == round(bench.PAPER_CLASS * 0.06 / 60)


def test_docs_show_the_recorded_figures():
    """Does the performance page include the figures the benchmark recorded, not a copy?"""
    page = (lab.ROOT / "docs" / "performance.md").read_text()
    for name in ("bench.txt", "scale.txt", "where.txt"):
        assert f"```{{literalinclude}} _generated/{name}" in page
        assert (lab.ROOT / "docs" / "_generated" / name).read_text().strip()
    scale = (lab.ROOT / "docs" / "_generated" / "scale.txt").read_text()
    assert "workers:" in scale and "x faster" not in page


def test_the_honest_class_has_no_runaway():
    """Is no corpus entry with a time limit of its own (a runaway) in the class the bench times?"""
    from autograder.tools import corpus

    bench = _bench()
    timed = {name for name, e in corpus.load_corpus(lab.ROOT / lab.CORPUS).items() if e.timeout}
    assert timed, "the corpus has a runaway entry, so this test can fail"
    built = bench.build_class(len(corpus.load_corpus(lab.ROOT / lab.CORPUS)))
    sources = {nbformat.writes(nb) for nb in built.values()}
    entries = corpus.load_corpus(lab.ROOT / lab.CORPUS)
    release_nb, solution_nb = (notebook.read(lab.ROOT / p) for p in (lab.RELEASE, lab.SOLUTION))
    for name in timed:
        runaway = corpus.build({name: entries[name]}, release_nb, solution_nb)[name]
        assert nbformat.writes(runaway) not in sources, name


def test_cpu_counts_every_process_a_run_starts():
    """A process the run's command started and never waited for (reaped by init, as a
    zygote's students are by the zygote) is counted: getrusage's children are not."""
    import resource

    sys.path.insert(0, str(lab.ROOT / "bench"))
    from cpu import CpuGroup

    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"
    orphan = (  # forks a child that burns CPU after its parent has exited, then exits
        f"import os, sys\nif os.fork() == 0:\n    os.setsid()\n    exec({burn!r})\n    os._exit(0)"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with CpuGroup("test") as group:
        subprocess.run([sys.executable, "-c", orphan], preexec_fn=group.join, check=True)
        deadline = time.monotonic() + 60
        while (group.path / "cgroup.procs").read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        counted = group.seconds()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    waited = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert counted >= 0.6 > waited


def _where():
    spec = importlib.util.spec_from_file_location("where", lab.ROOT / "bench" / "where.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_where_the_cpu_goes_adds_up(tmp_path, capsys):
    """Does ``bench/where.py`` time every step, once per submission where it runs once, and
    do the worker's steps fit in its total (the rest is never negative)?"""
    record = tmp_path / "where.txt"
    allowed = os.sched_getaffinity(0)
    assert _where().main(["--students", "2", "--record", str(record)]) == 0
    assert os.sched_getaffinity(0) == allowed  # it keeps to one CPU while it measures only
    printed = capsys.readouterr().out
    assert record.read_text() == printed
    ms = {}
    for line in printed.splitlines()[1:-2]:
        found = re.fullmatch(r" *(.+?) +(-?[\d.]+) ms(?:  \((\d+) a submission\))?", line)
        assert found, line
        ms[found[1]] = float(found[2])
        if found[1] in ("read the file", "sanitise it (nbgrader's steps)", "the feedback page"):
            assert found[3] == "1", line
    steps = ["read the file", "inspect it against the release", "sanitise it (nbgrader's steps)",
             "start the student's process", "the student's cells", "the test cells",
             "the feedback page", "the notebook written out", "the rest"]  # fmt: skip
    assert all(ms[step] >= 0 for step in steps), ms
    assert sum(ms[step] for step in steps) == pytest.approx(ms["the worker process"], abs=0.5)
    assert 0 < ms["requests to the student"] < ms["the test cells"]
    assert ms["their start, while the worker waits"] > 0
    assert ms["their cells, answers to tests, exit"] > 0
    assert ms["the student processes"] == pytest.approx(
        ms["their start, while the worker waits"] + ms["their cells, answers to tests, exit"],
        abs=0.2,
    )
    assert ms["in all"] == pytest.approx(
        ms["the worker process"] + ms["the student processes"], abs=0.2
    )
    assert re.fullmatch(
        r"once per worker: set up a worker \d+ ms, .+ \d+ ms", printed.splitlines()[-2]
    )
    # A turn's cost is measured by adding turns: as many as the requests counted above.
    turn = re.fullmatch(
        r"a turn \(a request to the student's process and its reply\), marginal: (-?\d+) us; "
        r"(\d+) a submission, (-?[\d.]+) ms of it",
        printed.splitlines()[-1],
    )
    requests = re.search(r"requests to the student +[\d.]+ ms +\((\d+) a submission\)", printed)
    assert turn and requests and turn[2] == requests[1], printed
    assert float(turn[3]) == pytest.approx(int(turn[1]) * int(turn[2]) / 1000, abs=0.2)


def test_where_names_a_step_that_never_ran():
    """A step the pipeline no longer calls is named, never reported as zero; a step that
    ran is counted (a failing call too), and the code is as it was once timing ends."""
    where = _where()
    original = where.sanitize.read
    steps = where.Steps()
    assert steps.never_ran() == [label.strip() for label, _, _ in where.STEPS]
    with steps.watching():
        assert where.sanitize.read is not original
        with pytest.raises(where.sanitize.Unreadable):
            where.sanitize.read(b"")
    assert where.sanitize.read is original
    assert steps.calls["read the file"] == 1
    assert "read the file" not in steps.never_ran()
    assert "inspect it against the release" in steps.never_ran()
