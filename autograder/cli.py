"""The command line: ``python -m autograder {grade,check,generate,corpus} ...``."""

import argparse

from . import check, corpus, course, generate
from . import grade as grading


def _grade_parser(commands):
    grade = commands.add_parser(
        "grade",
        help="grade a whole class of submissions",
        description="Grade every submission; write grades.csv, feedback pages and the gradebook.",
    )
    grade.add_argument("submissions", help="a folder (nbgrader layout or LMS files) or a .zip")
    grade.add_argument("--jobs", type=int, default=grading.default_jobs(), help="parallel workers")
    grade.add_argument(
        "--timeout", type=float, default=None, help="seconds per cell (default: course_config.py)"
    )
    grade.add_argument("--wall", type=float, default=300, help="seconds per notebook (300)")
    grade.add_argument("--memory", type=int, default=2048, help="MiB per submission (2048)")
    grade.add_argument("--out", default="grades", help="where grades.csv and feedback/ go")
    grade.add_argument("--force", action="store_true", help="regrade unchanged submissions too")
    grade.add_argument("--pattern", help="regex with a (?P<student>...) group, for LMS file names")
    grade.add_argument(
        "--course", default=str(course.ROOT), help="the nbgrader course folder (this repository)"
    )
    grade.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run student code without bubblewrap (only for code you trust)",
    )
    grade.set_defaults(run=grading.run)


def parser():
    """The argument parser for every subcommand."""
    top = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Grade, self-check and regenerate the multi-head attention lab.",
    )
    commands = top.add_subparsers(dest="command", required=True)
    _grade_parser(commands)
    checking = commands.add_parser(
        "check",
        help="self-check a notebook before submitting",
        description="Run the visible tests; exit 0 only if every answer is done and passing.",
    )
    checking.add_argument("notebook", help="your multi_head.ipynb")
    checking.add_argument("--timeout", type=float, default=30, help="seconds per cell")
    checking.add_argument("--wall", type=float, default=300, help="seconds for the notebook")
    checking.set_defaults(run=check.run)
    table = commands.add_parser(
        "corpus", help="grade the answer corpus with stock nbgrader and print what it catches"
    )
    table.add_argument("--jobs", type=int, default=grading.default_jobs())
    table.add_argument("--readme", action="store_true", help="also update README.md's table")
    table.set_defaults(run=corpus.main)
    commands.add_parser(
        "generate",
        help="regenerate release/, solutions/ and samples/class/ from source/",
    ).set_defaults(run=generate.main)
    return top


def main(argv=None):
    """Run one subcommand; returns the process exit status."""
    args = parser().parse_args(argv)
    return args.run(args)
