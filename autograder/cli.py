"""The command line: ``python -m autograder {grade,check,generate} ...``."""

import argparse
import os
from pathlib import Path

from . import corpus, course, generate, notebook, report, stock


def grade(args):
    """Grade every submission below ``args.submissions``; write the CSV and print the table."""
    source_nb = notebook.read(course.ROOT / course.SOURCE)
    possible = notebook.points(source_nb)
    grade_ids, max_score = list(possible), sum(possible.values())
    submissions = {}
    for path in sorted(Path(args.submissions).glob(str(course.submission_path("*")))):
        submissions[path.parts[-3]] = notebook.read(path)
    results = stock.autograde(submissions, jobs=args.jobs)
    rows = [
        report.Row(student, {**dict.fromkeys(grade_ids), **result.points}, max_score)
        for student, result in results.items()
    ]
    report.write_csv(rows, grade_ids, Path(args.out) / "grades.csv")
    print(report.table(rows))
    print(report.summary(rows, next(iter(results.values())).max_points if results else {}))
    return 0


def parser():
    """The argument parser for every subcommand."""
    top = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Grade, self-check and regenerate the multi-head attention lab.",
    )
    commands = top.add_subparsers(dest="command", required=True)
    grading = commands.add_parser("grade", help="grade a whole class of submissions")
    grading.add_argument("submissions", help="a folder in nbgrader's layout")
    grading.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    grading.add_argument("--out", default="grades", help="where grades.csv goes")
    grading.set_defaults(run=grade)
    table = commands.add_parser(
        "corpus", help="grade the answer corpus with stock nbgrader and print what it catches"
    )
    table.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
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
