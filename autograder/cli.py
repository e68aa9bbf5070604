"""The command line: ``python -m autograder COMMAND``, one subcommand per task.

A thin layer: each subcommand parses its options and calls a plain function
with keyword arguments (:func:`~autograder.pipeline.grade.grade`,
:func:`~autograder.tools.check.check`, ...), which a test or a notebook can
call the same way. An option's default is read from that function's
signature (:func:`default`), so it is declared once. A mistake of the user's
ends in one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

from traitlets import Bool, Float, Integer

from autograder import __version__, startup
from autograder.pipeline import grade
from autograder.pipeline.errors import UserError
from autograder.pipeline.lms import canvas, moodle
from autograder.pipeline.settings import Autograder
from autograder.serve import service
from autograder.tools import (
    check,
    engine_dist,
    extend,
    generate,
    golden,
    remove,
    status,
)
from autograder.tools.gradescope import bundle

_log = logging.getLogger(__name__)


def default(function: Callable[..., Any], name: str) -> Any:
    """The default of ``function``'s keyword ``name``: what its option defaults to."""
    return inspect.signature(function).parameters[name].default


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--assignment", help="an assignment folder under source/ (default: the only one)"
    )
    parser.add_argument(
        "--course",
        default=None,
        help="the nbgrader course folder (default: the one the working folder is in)",
    )


def _grade_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "grade",
        help="grade a whole class of submissions",
        description="Grade every submission; write grades.csv, feedback pages and the gradebook.",
    )
    parser.add_argument("submissions", help="a folder (nbgrader layout or LMS files) or a .zip")
    _common(parser)
    run = grade.grade
    _limits(parser)
    _setting(parser, "out")
    parser.add_argument("--force", action="store_true", help="regrade unchanged submissions too")
    parser.add_argument(
        "--student",
        action="append",
        metavar="ID",
        help="grade only this student of SUBMISSIONS (repeatable); every other row stays",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="grade into --out only; leave the course gradebook and folders alone",
    )
    _setting(parser, "pattern")
    parser.add_argument(
        "--times",
        metavar="FILE",
        help="hand-in times for an LMS download: Moodle's grading worksheet, or a CSV of "
        "student_id,handed_in",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a running Dask scheduler (tcp://HOST:8786) whose workers grade instead",
    )
    parser.set_defaults(run=run, positional=["submissions"])


#: the course settings (c.Autograder) a grading run's options override, in --help's order
LIMITS = ("jobs", "timeout", "wall", "memory", "sandbox")


def _setting(parser: argparse.ArgumentParser, name: str, flag: str | None = None) -> None:
    """``--NAME``, overriding ``c.Autograder.NAME``: its help, type and default said once,
    by the setting (pipeline/settings.py); a true/false one is ``--no-NAME``."""
    trait = Autograder.class_traits()[name]
    default = trait.default_value
    said = trait.help.rstrip(".").replace("%", "%%")
    fallback = f", else {default:g}" if isinstance(default, float) else f", else {default}"
    where = f"c.Autograder.{name}{fallback if default not in (None, 0) else ''}"
    if isinstance(trait, Bool):
        parser.add_argument(
            flag or f"--no-{name}", dest=name, action="store_const", const=not default,
            help=f"{said} (--no-{name} turns it off for this run; {where})",
        )  # fmt: skip
        return
    kind = {Float: float, Integer: int}.get(type(trait), str)
    parser.add_argument(flag or f"--{name}", dest=name, type=kind, help=f"{said} ({where})")


def _limits(parser: argparse.ArgumentParser) -> None:
    """The workers and the limits on student code, ``grade``'s and ``serve``'s; each left out
    is the course's (c.Autograder in its config, pipeline/settings.py)."""
    for name in LIMITS:
        _setting(parser, name)


def _serve_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "serve",
        help="grade each hand-in as it arrives in nbgrader's exchange; return its page there",
        description="Watch the exchange's inbound folder: grade each `nbgrader submit` in the "
        "sandbox, record it in the gradebook as `grade` does, and release its feedback page "
        "for `nbgrader fetch_feedback`. Runs until Ctrl-C or SIGTERM.",
    )
    _common(parser)
    run = service.serve
    _limits(parser)
    _setting(parser, "out")
    parser.add_argument(
        "--once",
        action="store_true",
        help="stop once every hand-in waiting at the start is graded (a cron job's run)",
    )
    parser.set_defaults(run=run, positional=[])


def _class_folder(parser: argparse.ArgumentParser, export: Callable[..., int]) -> None:
    """``--grades DIR``: the class an export writes (the grade run's ``--out``)."""
    parser.add_argument(
        "--grades",
        metavar="DIR",
        default=default(export, "grades"),
        help="the class folder whose students are the class exported (the grade run's --out: "
        "c.Autograder.out, else grades)",
    )


def _export_parsers(commands: Any) -> None:
    top = commands.add_parser(
        "export",
        help="fill an LMS's grade file with this assignment's totals",
        description="Fill a file exported from Canvas or Moodle with the gradebook's totals.",
    )
    kinds = top.add_subparsers(dest="lms", required=True)
    to_canvas = kinds.add_parser(
        "canvas",
        help="fill a Canvas gradebook export",
        description="Fill a gradebook exported from Canvas with this assignment's totals.",
    )
    to_canvas.add_argument("--template", required=True, help="the gradebook CSV Canvas exported")
    to_canvas.add_argument(
        "--column",
        help="the assignment's column (default: the one filled last time, the only one, or "
        "the one naming the assignment)",
    )
    to_canvas.add_argument("--out", help="the CSV to import (canvas.csv in the --grades folder)")
    _class_folder(to_canvas, canvas.export)
    to_canvas.add_argument(
        "--final",
        action="store_true",
        help="write nothing while a grade is not final (a written answer for a TA, a row not ok)",
    )
    _common(to_canvas)
    to_canvas.set_defaults(run=canvas.export, positional=[], drop=["lms"])
    to_moodle = kinds.add_parser(
        "moodle",
        help="fill a Moodle grading worksheet",
        description="Fill Moodle's offline grading worksheet; zip the feedback pages for upload.",
    )
    to_moodle.add_argument("--worksheet", required=True, help="the worksheet Moodle exported")
    to_moodle.add_argument("--out", help="the CSV to upload (moodle.csv in the --grades folder)")
    _class_folder(to_moodle, moodle.export)
    to_moodle.add_argument(
        "--feedback", help="the feedback pages (default: the class's own, DIR/feedback)"
    )
    to_moodle.add_argument(
        "--match-names",
        action="store_true",
        help="also match rows by full name or e-mail (each such match is listed)",
    )
    to_moodle.add_argument(
        "--final",
        action="store_true",
        help="write nothing while a grade is not final (a written answer for a TA, a row not ok)",
    )
    _common(to_moodle)
    to_moodle.set_defaults(run=moodle.export, positional=[], drop=["lms"])


def parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    top = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Grade, self-check and regenerate an nbgrader course's assignments.",
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    _grade_parser(commands)
    _serve_parser(commands)
    checking = commands.add_parser(
        "check",
        help="self-check a notebook before submitting",
        description="Run the visible tests; exit 0 only if every answer is done and passing.",
    )
    checking.add_argument("path", metavar="notebook", help="your notebook")
    _common(checking)
    timeout = default(check.check, "timeout")
    checking.add_argument(
        "--timeout", type=float, default=timeout, help=f"seconds per cell ({timeout:g})"
    )
    checking.set_defaults(run=check.check, positional=["path"])
    recording = commands.add_parser(
        "corpus",
        help="grade the answer corpus with stock nbgrader: the golden file, and what it catches",
        description="Grade every corpus entry, the source and the release with stock nbgrader; "
        "record corpus/ASSIGNMENT/stock.json and print the table of caught mistakes.",
    )
    _common(recording)
    jobs = default(golden.main, "jobs")
    recording.add_argument(
        "--jobs", type=int, default=jobs, help=f"stock nbgrader processes ({jobs})"
    )
    recording.add_argument(
        "--table", metavar="PAGE", help="also rewrite the corpus table in this Markdown page"
    )
    recording.set_defaults(run=golden.main, positional=[])
    _export_parsers(commands)
    extending = commands.add_parser(
        "extend",
        help="grant a student more time on an assignment (extensions.toml)",
        description="Grant a student an extension: kept in the course's extensions.toml, "
        "written into the gradebook with the late penalty assigned again.",
    )
    extending.add_argument("student", help="the student's id, as in grades.csv")
    extending.add_argument("--days", type=float, help="days added to the assignment's due date")
    extending.add_argument("--hours", type=float, help="hours added to the assignment's due date")
    extending.add_argument("--until", metavar="WHEN", help="the student's own due date (UTC)")
    extending.add_argument(
        "--why", default=default(extend.extend, "why"), help="a note kept with it"
    )
    extending.add_argument("--remove", action="store_true", help="take the extension back")
    extending.add_argument(
        "--new", action="store_true", help="a student the course does not know yet (not graded)"
    )
    extending.add_argument(
        "--dry-run", action="store_true", help="show what would change; write nothing"
    )
    _common(extending)
    extending.set_defaults(run=extend.extend, positional=["student"])
    removing = commands.add_parser(
        "remove",
        help="take a student out of an assignment: gradebook, records, folders (kept aside)",
        description="Remove a student's submission from the gradebook and the grader's records; "
        "move their folders into removed/, so no later run grades them again.",
    )
    removing.add_argument("student", help="the student's id, as in grades.csv")
    _setting(removing, "out")
    removing.add_argument(
        "--undo", action="store_true", help="bring a removed student back: later runs grade them"
    )
    removing.add_argument(
        "--dry-run", action="store_true", help="say what would go; change nothing"
    )
    _common(removing)
    removing.set_defaults(run=remove.remove, positional=["student"])
    checking_all = commands.add_parser(
        "status",
        help="one row per student: where the gradebook, CSV, pages, exchange and LMS disagree",
        description="Hold every place a grade is kept against the gradebook; say what is not "
        "final, and the removals, extensions and hand-in times. Exit 0 when all agree.",
    )
    checking_all.add_argument("student", nargs="*", metavar="STUDENT", help="only these students")
    _setting(checking_all, "out")
    _common(checking_all)
    checking_all.set_defaults(run=status.status, positional=["student"])
    packing = commands.add_parser(
        "gradescope",
        help="build autograder.zip for Gradescope",
        description="Write DIR/autograder.zip: setup.sh, run_autograder and the course files.",
    )
    _common(packing)
    out = default(bundle.build, "out")
    packing.add_argument("--out", default=out, help=f"where autograder.zip goes ({out})")
    packing.set_defaults(run=bundle.build, positional=[])
    regenerate = commands.add_parser(
        "generate", help="regenerate an assignment's release/ and solutions/ (and the samples)"
    )
    _common(regenerate)
    regenerate.set_defaults(run=generate.main, positional=[])
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns the process exit status."""
    startup.start()
    args = vars(parser().parse_args(argv))
    run: Callable[..., int] = args.pop("run")
    positional = [args.pop(name) for name in args.pop("positional")]
    for name in ["command", *args.pop("drop", [])]:
        args.pop(name)
    absent = engine_dist.missing()
    if absent:
        _log.error(
            f"python -m autograder: error: the engine needs {', '.join(absent)}, not installed "
            f"in this Python: pip install {' '.join(absent)}"
        )
        return 2
    try:
        return run(*positional, **args)
    except UserError as error:
        _log.error(f"python -m autograder: error: {error}")
        return 2
