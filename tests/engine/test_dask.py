"""Does a class grade through a Dask scheduler and two workers as it grades locally?

The cluster is started the way a TA starts one (README, "On a cluster"): a
``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, the
scheduler retrying a task whose worker died once. The workers preload
tests/engine/dask_faults.py, which kills a worker on cue. The class is the
engine's hostile class (tests/engine/hostile.py), graded locally once.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.pipeline import results

from . import hostile, processes
from .command_line import interruptible, run_command_line

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

DASK = str(Path(sys.executable).with_name("dask"))
FAULTS = str(Path(__file__).with_name("dask_faults.py"))  #: the workers' preload


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``{"address", "faults"}`` of a scheduler and two workers running on 127.0.0.1."""
    yield from _cluster(tmp_path_factory.mktemp("dask"), workers=2, threads=1)


def _cluster(folder, workers, threads):
    """Start a scheduler and ``workers`` workers of ``threads`` threads; yield, then stop."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1",
        "AUTOGRADER_FAULTS": str(folder),
    }
    scheduler_file = folder / "scheduler.json"
    names = ["scheduler", *(f"worker{n}" for n in range(workers))]
    logs = [(folder / f"{name}.log").open("w") for name in names]
    log = logs[0]
    processes = [
        subprocess.Popen(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(scheduler_file)],
            env=env, stdout=log, stderr=log, start_new_session=True,
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        for number in range(workers):
            worker_log = logs[number + 1]
            processes.append(
                subprocess.Popen(
                    [DASK, "worker", address, "--nworkers", "1", "--nthreads", str(threads),
                     "--no-dashboard", "--name", f"w{number}",
                     "--preload", FAULTS],
                    env=env, stdout=worker_log, stderr=worker_log, start_new_session=True,
                )
            )  # fmt: skip
        _wait_for_workers(address, workers)
        yield {"address": address, "folder": folder}
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        for handle in logs:
            handle.close()


def _wait_for_workers(address, count):
    from distributed import Client

    with Client(address, timeout=30) as client:
        client.wait_for_workers(count, timeout=60)


def _copy_students(graded, ids, into):
    for student_id in ids:
        shutil.copytree(graded["submissions"] / student_id, into / student_id)


def grade(submissions, course_dir, out, *extra):
    """``python -m autograder grade`` as a TA types it, on one local worker unless asked."""
    argv = ["grade", str(submissions), "--course", str(course_dir), "--out", str(out),
            "--jobs", "1", *extra]  # fmt: skip
    return run_command_line(argv, timeout=900)


def test_class_through_dask_equals_local(cluster, hostile_class, tmp_path):
    """The hostile class through the cluster: the same rows as the local run, every column?"""
    ids = hostile_class["ids"]
    subs, out = tmp_path / "subs", tmp_path / "out"
    _copy_students(hostile_class, ids, subs)
    done = grade(
        subs, hostile_class["course"], out, "--timeout", hostile.CELL_TIMEOUT, "--dry-run",
        "--scheduler", cluster["address"],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["student_id"]: r for r in results.read_csv(out / "grades.csv")}
    assert set(rows) == set(ids)
    local = hostile_class["rows"]
    unchecked = {name for name, case in hostile.CASES.items() if case.status == "any"}
    differ = [s for s in ids if s not in unchecked and rows[s] != local[s]]
    assert differ == [], [(s, rows[s]["status"], local[s]["status"]) for s in differ]
    for sid in ("honest", "victim"):
        assert (out / "feedback" / f"{sid}.html").read_text().count("test_") > 10
    assert _one_scratch_each_in_dask_folder(cluster["address"]) == 2  # both workers graded


@pytest.mark.parametrize("faulty", ["die_once", "die_always"])
def test_a_dying_worker_is_retried_once(cluster, hostile_class, tmp_path, faulty):
    """A worker dies grading a student: retried once elsewhere, then a grader_error row.

    Each alone in its run: Dask counts a death against every task the worker
    held, so a student queued beside a killer could be blamed too.
    """
    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(hostile_class["submissions"] / "honest", subs / faulty)
    done = grade(subs, hostile_class["course"], out, "--dry-run", "--scheduler", cluster["address"])
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = results.read_csv(out / "grades.csv")
    if faulty == "die_once":  # the second worker grades it as a local run does
        honest = {k: v for k, v in hostile_class["rows"]["honest"].items() if k != "student_id"}
        assert {k: v for k, v in row.items() if k != "student_id"} == honest
    else:
        assert row["status"] == "grader_error"
        assert "died" in (out / "feedback" / f"{faulty}.html").read_text()
    _wait_for_workers(cluster["address"], 2)  # the nannies restart what died
    # the worker that lived graded the class before, with other settings
    _one_scratch_each_in_dask_folder(cluster["address"])


def _scratch_folders(address):
    """{worker: [its autograder scratch folders]}, and whether each is in Dask's own folder."""
    from distributed import Client

    def look(dask_worker):
        mine = Path(dask_worker.local_directory)
        return [str(p) for p in mine.glob("autograder-*")], str(mine)

    with Client(address, timeout=30) as client:
        return client.run(look)


def _one_scratch_each_in_dask_folder(address):
    """Does each worker hold at most one scratch gradebook, in the folder Dask removes?"""
    found = _scratch_folders(address)
    for folders, dask_folder in found.values():
        assert len(folders) <= 1, found  # a run of other settings removed the one before
        assert all(f.startswith(dask_folder + os.sep) for f in folders), found
    return sum(len(folders) for folders, _ in found.values())


def test_unreachable_scheduler_is_one_line(tmp_path, hostile_class):
    """Does a scheduler nobody runs give one line and exit 2, not a traceback?"""
    subs = tmp_path / "subs"
    _copy_students(hostile_class, ["honest"], subs)
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(subs), "--course",
         str(hostile_class["course"]), "--out", str(tmp_path / "out"), "--dry-run",
         "--scheduler", "tcp://127.0.0.1:9"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert "cannot reach the Dask scheduler" in done.stderr and "Traceback" not in done.stderr


def test_ctrl_c_stops_the_cluster_too(cluster, hostile_class, tmp_path):
    """Ctrl-C during a cluster run: out in seconds, the workers' student processes gone?"""
    subs, out = tmp_path / "subs", tmp_path / "out"
    _copy_students(hostile_class, ["honest", "loop_at_top"], subs)
    running = interruptible(
        [sys.executable, "-m", "autograder", "grade", str(subs), "--course",
         str(hostile_class["course"]), "--out", str(out), "--timeout", "20", "--dry-run",
         "--scheduler", cluster["address"]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    finished = out / ".state" / "honest.json"
    deadline = time.monotonic() + 120
    while not finished.exists() and running.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert finished.exists(), running.communicate()[1][-2000:]
    time.sleep(1)  # into the looping student's twenty seconds
    assert processes.left_running(running.pid), "the workers' sandboxes are not to be found"
    os.killpg(running.pid, signal.SIGINT)
    stopped_at = time.monotonic()
    _, stderr = running.communicate(timeout=60)
    assert running.returncode == 130, stderr
    assert time.monotonic() - stopped_at < 15
    assert processes.gone_within(running.pid, 10), processes.describe(
        processes.left_running(running.pid)
    )
    _one_scratch_each_in_dask_folder(cluster["address"])


def test_a_worker_of_several_threads_is_refused(hostile_class, tmp_path):
    """Workers started with --nthreads 2 would mix students' outputs: one line, exit 2?"""
    subs = tmp_path / "subs"
    _copy_students(hostile_class, ["honest"], subs)
    threaded = _cluster(tmp_path / "threaded", workers=1, threads=2)
    address = next(threaded)["address"]
    try:
        done = grade(
            subs, hostile_class["course"], tmp_path / "out", "--dry-run", "--scheduler", address
        )
    finally:
        threaded.close()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "run several threads: start every worker with --nthreads 1" in done.stderr
