"""The command line: ``python -m autograder {grade,check,generate,corpus} ...``.

A thin layer: each subcommand parses its options and calls a plain function
with keyword arguments (:func:`~autograder.pipeline.grade.grade`,
:func:`~autograder.tools.check.check`, ...), which a test or a notebook can
call the same way. A mistake of the user's ends in one line on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .pipeline import grade
from .pipeline.errors import UserError
from .tools import check, corpus, generate


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--assignment", help="an assignment folder under source/ (default: the only one)"
    )
    parser.add_argument(
        "--course", default=None, help="the nbgrader course folder (default: this repository)"
    )


def _grade_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "grade",
        help="grade a whole class of submissions",
        description="Grade every submission; write grades.csv, feedback pages and the gradebook.",
    )
    parser.add_argument("submissions", help="a folder (nbgrader layout or LMS files) or a .zip")
    _common(parser)
    parser.add_argument("--jobs", type=int, default=None, help="parallel workers (all cores)")
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds per cell (default: course_config.py)"
    )
    parser.add_argument("--wall", type=float, default=300, help="seconds per notebook (300)")
    parser.add_argument("--memory", type=int, default=2048, help="MiB per submission (2048)")
    parser.add_argument("--out", default="grades", help="where grades.csv and feedback/ go")
    parser.add_argument("--force", action="store_true", help="regrade unchanged submissions too")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="grade into --out only; leave the course gradebook and folders alone",
    )
    parser.add_argument("--pattern", help="regex with a (?P<student>...) group, for LMS file names")
    parser.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_false",
        help="run student code without bubblewrap (only for code you trust)",
    )
    parser.set_defaults(run=grade.grade, positional=["submissions"])


def parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    top = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Grade, self-check and regenerate an nbgrader course's assignments.",
    )
    commands = top.add_subparsers(dest="command", required=True)
    _grade_parser(commands)
    checking = commands.add_parser(
        "check",
        help="self-check a notebook before submitting",
        description="Run the visible tests; exit 0 only if every answer is done and passing.",
    )
    checking.add_argument("path", metavar="notebook", help="your notebook")
    _common(checking)
    checking.add_argument("--timeout", type=float, default=30, help="seconds per cell")
    checking.add_argument("--wall", type=float, default=300, help="seconds for the notebook")
    checking.set_defaults(run=check.check, positional=["path"])
    table = commands.add_parser(
        "corpus", help="grade the answer corpus with stock nbgrader and print what it catches"
    )
    _common(table)
    table.add_argument("--jobs", type=int, default=2)
    table.add_argument("--readme", action="store_true", help="also update README.md's table")
    table.set_defaults(run=corpus.main, positional=[])
    regenerate = commands.add_parser(
        "generate", help="regenerate an assignment's release/ and solutions/ (and the samples)"
    )
    _common(regenerate)
    regenerate.set_defaults(run=generate.main, positional=[])
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns the process exit status."""
    args = vars(parser().parse_args(argv))
    run: Callable[..., int] = args.pop("run")
    positional = [args.pop(name) for name in args.pop("positional")]
    args.pop("command")
    try:
        return run(*positional, **args)
    except UserError as error:
        print(f"python -m autograder: error: {error}", file=sys.stderr)
        return 2
