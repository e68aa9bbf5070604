"""One submission graded in Gradescope's container: what ``run_autograder`` runs."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import multiprocessing
import os
import shutil
import stat
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from autograder import startup
from autograder.pipeline import grade as grading
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.files import write_atomic
from autograder.pipeline.results import ClassFolder
from autograder.pipeline.settings import GradingLimits
from autograder.sandbox.clean_up import after_run, kill_user, run_uid
from autograder.tools.gradescope.courses import visible_course
from autograder.tools.gradescope.results_json import failure, results_for

_log = logging.getLogger(__name__)

GRADESCOPE_ROOT = "/autograder"
STUDENT = "student"  #: the one student a Gradescope run grades


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
                visible = visible_course(chosen, scratch_path)
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
