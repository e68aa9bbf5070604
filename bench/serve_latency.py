"""How long a student waits for their page from ``python -m autograder serve``.

A scratch copy of the course is released through an exchange of its own and
the service is started in it, as an instructor starts it (``--jobs``, default
every core). Then a class hands in within one minute, each hand-in made as
``nbgrader submit`` makes it (the notebook copied into the inbound folder,
``timestamp.txt``, ``submission_secret.txt``, the folder opened last):

- ``--students`` honest students (the answer corpus cycled, as ``bench.py``
  builds its class), each at a random moment of the minute (seeded);
- one runaway notebook at the very start (a loop that swallows interrupts,
  ``stubborn_loop`` of ``tests/lab/hostile.py``), which holds a worker until
  its wall limit (``--wall``);
- one student who hands in five times, every ten seconds.

It waits until every hand-in has its page in the exchange and prints, from
each hand-in's time stamp to its page: the honest students' median, 90th
percentile and worst; the runaway's; the resubmitter's. The targets: every
page within 60 s, the median within 15 s, and no one held up by the runaway
beyond its own limits.

    python bench/serve_latency.py [--students 30] [--within 60] [--jobs N] [--wall 90]
                                  [--record FILE]

Run it on an otherwise idle machine; it measures, it asserts nothing but that
every hand-in got its page.
"""

import argparse
import os
import random
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import startup  # noqa: E402
from autograder.pipeline.course import notebook  # noqa: E402
from autograder.pipeline.course.assignment import find_assignment, tool_environment  # noqa: E402
from autograder.tools.nbgrader_cli import scratch_course  # noqa: E402
from bench import Record, build_class  # noqa: E402  (bench.py, beside this file)
from tests.lab import hostile, lab  # noqa: E402

RUNAWAY = "stubborn_loop"  #: the runaway case of tests/lab/hostile.py
RESUBMITTER = "again"  #: the student who hands in five times


def hand_in(inbound: Path, student: str, assignment_id: str, name: str, data: bytes) -> str:
    """Hand in ``data`` as ``nbgrader submit`` does; the hand-in's key (its folder's name)."""
    stamp = f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S.%f} UTC"
    key = f"{student}+{assignment_id}+{stamp}+{secrets.token_urlsafe(9)}"
    folder = inbound / key
    folder.mkdir(mode=0o755)
    (folder / name).write_bytes(data)
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text(secrets.token_hex(64))
    folder.chmod(0o777)  # submit's last step
    return key


def journal(course: Path, assignment_id: str) -> dict[str, dict]:
    """``{hand-in key: its journal row}``."""
    path = course / ".autograder" / f"serve-{assignment_id}" / "journal.sqlite"
    if not path.exists():
        return {}
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return {r["key"]: dict(r) for r in db.execute("select * from hand_ins")}


def seconds_to_page(row: dict) -> float:
    handed = datetime.fromisoformat(row["handed_in"])
    return (datetime.fromisoformat(row["released"]) - handed).total_seconds()


def main() -> int:
    startup.start()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--within", type=float, default=60.0, help="seconds to hand in over")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--wall", type=float, default=90.0, help="seconds per notebook")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--record", type=Path, help="also write what it prints to this file")
    args = parser.parse_args()
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        sys.stdout = Record(sys.stdout, args.record)
    a = lab.ASSIGNMENT
    (name,) = a.notebooks
    honest = {sid: nbformat.writes(nb).encode() for sid, nb in build_class(args.students).items()}
    release_nb, solution_nb = (notebook.read(ROOT / p) for p in (lab.RELEASE, lab.SOLUTION))
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as scratch:
        scratch = Path(scratch)
        course, exchange = scratch / "course", scratch / "exchange"
        scratch_course(ROOT, course, release=True)
        exchange.mkdir(mode=0o777)
        env = {**tool_environment(), "NBGRADER_EXCHANGE": str(exchange)}
        course_id = find_assignment(course).config.CourseDirectory.course_id
        subprocess.run([sys.executable, "-m", "nbgrader", "release_assignment", a.id],
                       cwd=course, env=env, check=True, capture_output=True)  # fmt: skip
        roster = scratch / "roster.csv"  # the class enrolled: the service grades no other id
        roster.write_text("id\n" + "".join(f"{s}\n" for s in [*honest, "runaway", RESUBMITTER]))
        subprocess.run([sys.executable, "-m", "nbgrader", "db", "student", "import", str(roster)],
                       cwd=course, env=env, check=True, capture_output=True)  # fmt: skip
        inbound = exchange / course_id / "inbound"
        runaway = hostile.FAILURES[RUNAWAY].build(release_nb, solution_nb, {"course": course})
        log = (scratch / "serve.log").open("w")
        service = subprocess.Popen(
            [sys.executable, "-m", "autograder", "serve", "--jobs", str(args.jobs),
             "--wall", str(args.wall)],
            cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        while "serving " not in (scratch / "serve.log").read_text():
            if service.poll() is not None:
                sys.exit((scratch / "serve.log").read_text())
            time.sleep(0.2)
        chance = random.Random(args.seed)
        plan = sorted(
            [(chance.uniform(0, args.within), sid, data) for sid, data in honest.items()]
            + [(0.0, "runaway", runaway)]
            + [(10.0 * k, RESUBMITTER, honest[min(honest)]) for k in range(5)]
        )
        kinds: dict[str, str] = {}
        start = time.monotonic()
        for at, sid, data in plan:
            time.sleep(max(0.0, at - (time.monotonic() - start)))
            kinds[hand_in(inbound, sid, a.id, name, data)] = sid
        deadline = time.monotonic() + 600
        while True:
            rows = journal(course, a.id)
            done = [k for k in kinds if k in rows and rows[k]["released"]]
            if len(done) == len(kinds) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        service.terminate()
        service.wait(timeout=60)
        log.close()
        missing = [kinds[k] for k in kinds if k not in done]
        latency = {kinds[k]: seconds_to_page(rows[k]) for k in done if kinds[k] in honest}
        again = [seconds_to_page(rows[k]) for k in done if kinds[k] == RESUBMITTER]
        runaway_row = next((rows[k] for k in done if kinds[k] == "runaway"), None)
        ordered = sorted(latency.values())
        print(f"graded on submit: {len(honest)} students handing in within {args.within:g} s, "
              f"one runaway notebook at the start (--wall {args.wall:g}), one student handing "
              f"in 5 times; {args.jobs} workers, {os.cpu_count()} cores")  # fmt: skip
        if ordered:
            p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
            print(f"seconds from hand-in to page, honest students: median "
                  f"{statistics.median(ordered):.1f}, 90th percentile {p90:.1f}, "
                  f"worst {ordered[-1]:.1f}")  # fmt: skip
        if again:
            print(f"the student handing in 5 times: {', '.join(f'{s:.1f}' for s in again)}")
        if runaway_row:
            print(f"the runaway ({runaway_row['status']}): {seconds_to_page(runaway_row):.1f}")
        states = {rows[k]["state"] for k in done if kinds[k] == RESUBMITTER}
        print(f"the resubmitter's hand-ins: {', '.join(sorted(states))}")
        if missing:
            print(f"NO PAGE for {', '.join(sorted(set(missing)))}")
            shutil.copy(scratch / "serve.log", ROOT / "serve-latency.log")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
