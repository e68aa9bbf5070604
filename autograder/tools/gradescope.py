"""The grader on Gradescope: ``python -m autograder gradescope [--out DIR]``.

:func:`build` writes ``DIR/autograder.zip``, the file an instructor uploads as
a Gradescope programming assignment's autograder:

- ``setup.sh``: run once by Gradescope (as root, on its Ubuntu image): installs
  Python 3.11+ and bubblewrap, then the course's pinned packages into
  ``/autograder/venv``;
- ``run_autograder``: run for every submission: grades the notebook in
  ``$GRADESCOPE_ROOT/submission/`` (default root ``/autograder``) with this
  grader, sandbox included, and writes ``$GRADESCOPE_ROOT/results/results.json``;
- ``course/``: the course's configuration, source and release folders (and
  its ``requirements.txt``, if it has one), and the grader as it is installed
  where the zip was built (the ``autograder`` package with a ``pyproject.toml``
  and ``constraints.txt`` written from the installed distribution:
  :mod:`.engine_dist`). Never the solutions, the sample class or the tests.
  Its gradebook, and ``visible-course/`` (the same course with the visible
  tests alone), come with the assignment recorded: a run copies them instead
  of recording it twice for every submission.

:func:`run` (what ``run_autograder`` calls) writes Gradescope's results: one
test per graded cell (its ``grade_id`` and what it checks, points, the failure
message, ``visible`` for visible tests and ``after_published`` for hidden
ones), the written answer noted for manual grading, a summary as the top-level
output, and an instructor-only test with the grader's log (and a note when the
container forbids the sandbox). A ``results.json`` is written whatever
happens: an unreadable notebook, a missing one, or a grader that fails.
"""

from __future__ import annotations

if __name__ == "__main__":  # run_autograder: started before the imports below bring in nbformat
    from autograder import startup

    startup.start()

import argparse
import contextlib
import io
import json
import logging
import multiprocessing
import os
import shutil
import stat
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path
from typing import Any

import nbformat

from autograder import startup
from autograder.pipeline import grade as grading
from autograder.pipeline.course import dependencies, notebook
from autograder.pipeline.course.assignment import Assignment, config_files, find_assignment
from autograder.pipeline.course.gradebook import ensure_gradebook, sources_hash, sqlite_url
from autograder.pipeline.files import write_atomic
from autograder.pipeline.results import ClassFolder
from autograder.pipeline.settings import GradingLimits
from autograder.sandbox.clean_up import after_run, kill_user, run_uid
from autograder.tools import engine_dist

_log = logging.getLogger(__name__)

GRADESCOPE_ROOT = "/autograder"
STUDENT = "student"  #: the one student a Gradescope run grades
#: a course's own packages beyond the engine's (pandas for a data course), if it lists any
COURSE_REQUIREMENTS = "requirements.txt"
VISIBLE = "visible-course"  #: the course's twin whose tests are the visible ones alone
BUILT_FROM = ".built-from"  #: in :data:`VISIBLE`: the hash of the sources it was made from

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq bubblewrap python3 python3-venv python3-pip >/dev/null
PYTHON=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    # Gradescope's Ubuntu 22.04 image has Python 3.10; the grader needs 3.11 or newer.
    apt-get install -y -qq software-properties-common >/dev/null
    add-apt-repository -y ppa:deadsnakes/ppa
    apt-get update -qq
    apt-get install -y -qq python3.11 python3.11-venv >/dev/null
    PYTHON=python3.11
fi
"$PYTHON" -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet --upgrade pip
/autograder/venv/bin/pip install --quiet --constraint course/constraints.txt --editable ./course
if [ -f course/requirements.txt ]; then  # the course's own packages
    /autograder/venv/bin/pip install --quiet --constraint course/constraints.txt \
        --requirement course/requirements.txt
fi
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission; it writes results/results.json.
# Gradescope unpacks autograder.zip into $ROOT/source/, copies this script to
# $ROOT/run_autograder and runs it from $ROOT: the course is in source/course/.
# GRADESCOPE_ROOT (default /autograder) and AUTOGRADER_PYTHON let a test run it elsewhere.
ROOT="${GRADESCOPE_ROOT:-/autograder}"
COURSE="$ROOT/source/course"
PYTHON="${AUTOGRADER_PYTHON:-/autograder/venv/bin/python}"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"  # only what this run's grader writes counts
cd "$COURSE" && "$PYTHON" -m autograder.tools.gradescope --root "$ROOT" --course "$COURSE"
status=$?
if [ "$status" != 0 ] || [ ! -s "$ROOT/results/results.json" ]; then
    # The grader could not even start: still tell the student, and the instructor, why.
    why="The autograder could not finish (exit status $status). Please tell your instructor."
    printf '{"score": 0, "output": "%s", "stdout_visibility": "hidden", "tests": []}\\n' \\
        "$why" > "$ROOT/results/results.json"
fi
exit 0
"""


def build(
    *,
    out: Path | str = "gradescope",
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Write ``out/autograder.zip`` for ``assignment``; prints where it is."""
    chosen = find_assignment(course, assignment)
    target = Path(out) / "autograder.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gradescope-build-") as staging:
        staged = _staged_course(chosen, Path(staging) / "course")
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable, as Gradescope runs them
                archive.writestr(info, text)
            for path in sorted(staged.rglob("*")):
                if path.is_file():
                    archive.write(path, f"course/{path.relative_to(staged)}")
    _log.info(f"wrote {target}: upload it as the autograder of a Gradescope programming assignment")
    return 0


def _staged_course(chosen: Assignment, into: Path) -> Path:
    """``into``: the zip's ``course/``, its gradebooks recorded once here, not on every run.

    The config, the grader's package, the source as grading needs it (no
    solution) and the release; ``gradebook.db`` with the assignment recorded, and
    :data:`VISIBLE`, the visible-tests twin a run also grades in, recorded too.
    Each gradebook is stamped with what it recorded (a run that finds a stamp
    that does not match records again).
    """
    extra = (COURSE_REQUIREMENTS,) if (chosen.root / COURSE_REQUIREMENTS).is_file() else ()
    _copy_course(chosen, into, extra)
    engine_dist.write(into)  # the engine as installed here, pinned: for any course
    for name in chosen.notebooks:
        grading = grading_copy(
            notebook.read(chosen.source(name)), notebook.read(chosen.release(name))
        )
        (into / chosen.source(name).relative_to(chosen.root)).write_text(nbformat.writes(grading))
    course = find_assignment(into, chosen.id)
    ensure_gradebook(course, sqlite_url(into / "gradebook.db"))
    visible = visible_only(course, into)
    ensure_gradebook(visible, sqlite_url(visible.root / "gradebook.db"))
    write_atomic(visible.root / BUILT_FROM, sources_hash(course))
    return into


def _copy_course(chosen: Assignment, into: Path, extra: tuple[str, ...] = ()) -> None:
    """Copy ``chosen``'s config files, ``extra`` files of its root, and its source and
    release folders (no ``__pycache__``) into ``into``, at the same relative paths."""
    root = chosen.root
    for name in (*config_files(root), *extra, *chosen.named_by_config()):
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / name, into / name)
    for folder in (chosen.source_dir, chosen.release_dir):
        shutil.copytree(
            folder, into / folder.relative_to(root), ignore=shutil.ignore_patterns("__pycache__")
        )


def grading_copy(source_nb: Any, release_nb: Any) -> Any:
    """The source as grading needs it: its tests (hidden ones too), no solution.

    Each answer cell holds the release's stub instead of the instructor's
    answer, so a student who reads the bundle in Gradescope's container finds
    no solution to copy; a name the answer binds and the stub does not is bound
    to None after it, since the grader takes from the student exactly the names
    the source's answers bind (:func:`~autograder.pipeline.grading.execute.student_names`).
    """
    stubs = notebook.answers(release_nb)
    copy = nbformat.from_dict(source_nb)
    for cell in copy.cells:
        if not (notebook.is_answer(cell) and notebook.grade_id(cell) in stubs):
            continue
        stub = stubs[notebook.grade_id(cell)]
        if cell.cell_type == "code":
            missing = sorted(dependencies.binds(cell.source) - dependencies.binds(stub))
            stub += "".join(f"\n{name} = None  # the answer binds it" for name in missing)
        cell.source = stub
    return copy


# ------------------------------------------------------------------ results.json


class Refused(Exception):
    """A submitted file that is not a plain file (a link, a device): never read."""


def _plain(path: Path, folder: Path) -> bool:
    """Is ``path``, and every folder between it and ``folder``, plain (no link, no device)?"""
    here = path
    while here != folder:
        mode = os.lstat(here).st_mode
        if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return False
        here = here.parent
    return True


def _submitted(folder: Path, chosen: Assignment) -> dict[str, Path]:
    """``{assignment notebook: the submitted file}`` found in Gradescope's submission folder.

    A notebook that is a link (or behind one) or not a regular file is
    :class:`Refused`, as the batch grader refuses it: it could point at the
    course's own files.
    """
    candidates = sorted(
        p
        for p in folder.rglob("*.ipynb")
        if not any(part.startswith((".", "__MACOSX")) for part in p.relative_to(folder).parts)
    )
    refused = [p for p in candidates if not _plain(p, folder)]
    if any(p.name in chosen.notebooks for p in refused):
        names = ", ".join(str(p.relative_to(folder)) for p in refused)
        raise Refused(f"{names} is a link or a special file, not a notebook: upload the file")
    found = [p for p in candidates if p not in refused]
    chosen_files: dict[str, Path] = {}
    for name in chosen.notebooks:
        exact = [p for p in found if p.name == name]
        named = [p for p in found if Path(name).stem in p.name]
        only = found if len(chosen.notebooks) == 1 and len(found) == 1 else []
        for candidates in (exact, named, only):
            if candidates:
                chosen_files[name] = candidates[0]
                break
    return chosen_files


def _tests(
    chosen: Assignment,
    row: dict[str, Any],
    columns: notebook.Columns,
    shown: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One Gradescope test per graded cell, in notebook order.

    shown: ``{column: message}`` visible tests show (:func:`visible_only`'s run);
    None shows the graded run's own messages.
    """
    tests = []
    for name in chosen.notebooks:
        source = notebook.read(chosen.source(name))
        for cell in source.cells:
            if not notebook.is_graded(cell):
                continue
            column = columns.of[(name, notebook.grade_id(cell))]
            possible = columns.possible[column]
            earned = row["points"].get(column)
            if not notebook.is_test(cell):
                tests.append(
                    {
                        "name": f"{column}: graded by hand",
                        "score": 0,
                        "max_score": 0,
                        "output": f"A TA grades this written answer by hand ({possible:g} points).",
                        "visibility": "visible",
                    }
                )
                continue
            hidden = chosen.hidden_tests in cell.source
            checks = notebook.what_it_checks(cell.source)
            said = row.get("messages", {}) if hidden or shown is None else shown
            tests.append(
                {
                    "name": f"{column}: {checks}" if checks else column,
                    "score": float(earned or 0),
                    "max_score": possible,
                    "output": str(said.get(column, "")),
                    "visibility": "after_published" if hidden else "visible",
                }
            )
    return tests


def results_for(
    chosen: Assignment,
    row: dict[str, Any],
    log: str,
    said: dict[str, str] | None = None,
    unprotected: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Gradescope's ``results.json`` for one graded outcome.

    row: an :class:`~autograder.pipeline.results.Outcome`, as a dict; said:
    what visible tests say, from a run without hidden tests (:func:`visible_only`);
    unprotected: the protections the run went without (its
    :class:`~autograder.pipeline.grade.ClassGrades`), told to instructors only.
    """
    columns = notebook.Columns({n: notebook.read(chosen.source(n)) for n in chosen.notebooks})
    tests = _tests(chosen, row, columns, said)
    autograded = [t for t in tests if t["max_score"]]
    score = sum(t["score"] for t in autograded)
    out_of = sum(t["max_score"] for t in autograded)
    shown = [t for t in autograded if t["visibility"] == "visible"]
    failing = [t["name"].split(":")[0] for t in shown if t["score"] < t["max_score"]]
    seen = sum(t["score"] for t in shown)
    lines = [f"Visible tests: {seen:g} / {sum(t['max_score'] for t in shown):g} points."]
    if row.get("status", "ok") != "ok":
        lines.append(f"Grading was incomplete ({row['status']}): {row.get('detail', '')}.")
    lines.append(
        f"Failing visible tests: {', '.join(failing)}." if failing else "Every visible test passes."
    )
    hidden = len(autograded) - len(shown)
    lines.append(
        f"{hidden} hidden tests ({out_of - sum(t['max_score'] for t in shown):g} points) ran "
        "too: their results appear when grades are published, and until then any total "
        f"you see is provisional (the autograded total is out of {out_of:g})."
    )
    log = plain_log(log)
    instructor = ["Grader log:", log.strip() or "(nothing)"]
    if unprotected:
        instructor.insert(
            0,
            "The submission was graded with less protection than the batch grader's, "
            "still in its own process as nobody with time and memory limits, because: "
            + "; ".join(unprotected),
        )
    tests.append(
        {
            "name": "Grader log (instructors only)",
            "score": 0,
            "max_score": 0,
            "output": "\n".join(instructor)[-50_000:],
            "visibility": "hidden",
        }
    )
    return {
        "score": score,
        "output": " ".join(lines),
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def plain_log(log: str) -> str:
    """The log as a person reads it: a progress bar's redrawn lines (``\\r``) kept last only."""
    return "\n".join(line.rsplit("\r", 1)[-1] for line in log.splitlines())


def failure(why: str, log: str = "") -> dict[str, Any]:
    """``results.json`` for a submission that could not be graded at all."""
    return {
        "score": 0,
        "output": f"Your submission could not be graded: {why}",
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": "Grader log (instructors only)",
                "score": 0,
                "max_score": 0,
                "output": log[-50_000:] or why,
                "visibility": "hidden",
            }
        ],
    }


OPEN = ("venv",)  #: what stays readable under Gradescope's root: the Python student code runs on


def lock_down(root: Path) -> None:
    """As root: everything under Gradescope's root but :data:`OPEN` for root's eyes only.

    Student code then runs as an unprivileged uid (in bubblewrap, or without it
    where the container forbids namespaces) and can read neither the course
    (hidden tests), nor the submission folder, nor Gradescope's
    ``submission_metadata.json`` (earlier results, hidden tests included), and
    cannot touch the results. It gets its notebook from the grader, never a file.
    """
    if os.geteuid() != 0:
        return
    for entry in root.iterdir():
        if entry.name in OPEN or entry.is_symlink():
            continue
        runs = entry.is_dir() or os.access(entry, os.X_OK)
        os.chown(entry, 0, 0)
        os.chmod(entry, 0o700 if runs else 0o600)


def visible_only(chosen: Assignment, scratch: Path) -> Assignment:
    """A copy of the course in ``scratch`` whose tests are the visible ones alone.

    Its source notebooks hold the release's test cells (hidden tests cleared, as
    nbgrader clears them), so grading there runs the student's code on nothing
    a hidden test knows.
    """
    root = scratch / VISIBLE
    _copy_course(chosen, root)
    for name in chosen.notebooks:
        released = {
            notebook.grade_id(c): c.source for c in notebook.read(chosen.release(name)).cells
        }
        source = notebook.read(chosen.source(name))
        for cell in source.cells:
            if notebook.is_test(cell) and notebook.grade_id(cell) in released:
                cell.source = released[notebook.grade_id(cell)]
        notebook.write(source, root / chosen.source(name).relative_to(chosen.root))
    return find_assignment(root, chosen.id)


def _visible_course(chosen: Assignment, scratch: Path) -> Assignment:
    """The zip's :data:`VISIBLE` if it was made from the course's sources as they are, else
    one made now in ``scratch`` (:func:`visible_only`)."""
    built = chosen.root / VISIBLE
    try:
        current = (built / BUILT_FROM).read_text() == sources_hash(chosen)
    except OSError:
        current = False
    return find_assignment(built, chosen.id) if current else visible_only(chosen, scratch)


class VisibleRun:
    """A grading run in a process of its own, beside the graded one: what visible tests say.

    Used as a context manager; :meth:`messages` waits for ``{column: message}``
    (empty if that run failed: the graded run's score stands either way).
    """

    def __init__(self, request: grading.Request) -> None:
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_grade_visible, args=(request, send))

    @property
    def pid(self) -> int:
        """Its pid: its students run as :func:`~autograder.sandbox.clean_up.run_uid` of it."""
        assert self._process.pid is not None
        return self._process.pid

    def __enter__(self) -> VisibleRun:
        self._process.start()
        return self

    def messages(self, timeout: float = 600) -> dict[str, str]:
        if not self._receive.poll(timeout):
            return {}
        try:
            return dict(self._receive.recv())
        except (EOFError, OSError):
            return {}

    def __exit__(self, *exc: object) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join()


def _grade_visible(request: grading.Request, send: Any) -> None:
    """In :class:`VisibleRun`'s process: grade, send the messages, quietly."""
    messages: dict[str, str] = {}
    try:
        with open(os.devnull, "w") as quiet:
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                outcome = grading.run(request).outcome(STUDENT)
        messages = dict(outcome.as_dict()["messages"]) if outcome is not None else {}
    except Exception:
        pass  # then the visible tests say nothing: never the graded run's words
    send.send(messages)
    send.close()


def run(root: Path | str = GRADESCOPE_ROOT, course: Path | str | None = None) -> dict[str, Any]:
    """Grade the notebook in ``root/submission/``; write and return ``results/results.json``.

    Every process the student started is gone before the results are written,
    and only this process writes them.
    """
    started = time.monotonic()
    helpers: list[int] = []  # processes that graded too: whose students must be gone
    root = Path(root)
    results_path = root / "results" / "results.json"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    lock_down(root)
    log = io.StringIO()
    try:
        chosen = find_assignment(course)
        files = _submitted(root / "submission", chosen)
        if not files:
            wanted = " and ".join(chosen.notebooks)
            results = failure(f"no {wanted} in your submission; upload the notebook itself.")
        else:
            with tempfile.TemporaryDirectory(prefix="gradescope-") as scratch:
                scratch_path = Path(scratch)
                subs, out = scratch_path / "submissions", ClassFolder(scratch_path / "grades")
                for name, path in files.items():
                    target = subs / chosen.submission_path(STUDENT, name)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
                limits = GradingLimits.for_course(chosen)
                # Gradescope shows the outcome alone: neither run renders feedback pages.
                request = grading.Request(subs, chosen, out, 1, limits, dry_run=True, pages=False)
                # What visible tests show comes from a run with no hidden test in it, beside
                # the graded one: before grades are published, nothing a hidden test knows
                # can show.
                visible = _visible_course(chosen, scratch_path)
                shown = grading.Request(
                    subs, visible, ClassFolder(scratch_path / "shown"), 1, limits,
                    dry_run=True, pages=False,
                )  # fmt: skip
                with VisibleRun(shown) as seen:
                    helpers.append(seen.pid)
                    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                        graded = grading.run(request)
                    messages = seen.messages()
                outcome = graded.outcome(STUDENT)
                if outcome is None:
                    results = failure("the grader gave no result; your instructor has been told.")
                else:
                    row, text = outcome.as_dict(), log.getvalue()
                    results = results_for(chosen, row, text, messages, graded.unprotected)
    except Refused as why:
        results = failure(f"{why}.")
    except Exception:
        results = failure(
            "the grader failed; your instructor has been told.",
            log.getvalue() + traceback.format_exc(),
        )
    if os.geteuid() == 0:  # this run's students (both runs'), no one else
        lingering = [p for owner in (os.getpid(), *helpers) for p in kill_user(run_uid(owner))]
        if lingering:
            note = f"killed {len(lingering)} process(es) the submission left running"
            results["tests"][-1]["output"] += f"\n{note}"
    for owner in (os.getpid(), *helpers):
        after_run(owner)
    results["execution_time"] = round(time.monotonic() - started)
    write_atomic(results_path, json.dumps(results, indent=2))
    return results


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.tools.gradescope [--root DIR] [--course DIR]``, for run_autograder."""
    parser = argparse.ArgumentParser(prog="python -m autograder.tools.gradescope")
    parser.add_argument("--root", default=os.environ.get("GRADESCOPE_ROOT", GRADESCOPE_ROOT))
    parser.add_argument("--course", default=None)
    args = parser.parse_args(argv)
    startup.start()
    results = run(args.root, args.course)
    _log.info(results["output"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
