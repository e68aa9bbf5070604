"""The pages the service returns, one per hand-in, and how they reach the student.

A graded hand-in's page is the course's feedback page, opened by a notice
(which attempt it is, whether the gradebook holds it). Before the student's
due date, with ``c.Serve.before_due = "visible"``, the hidden tests' messages
and printed output are taken out of the notebook first (:func:`early`): their
points count, what they say waits for the due date, and the page says so. A
hand-in not graded (beyond the attempts allowed, superseded) gets a short
page that says why (:func:`notice_page`).

Pages go where ``nbgrader fetch_feedback`` looks for them, written by the results
package, the one writer of results
(:func:`autograder.pipeline.results.handed_back.release_to_exchange`).
"""

from __future__ import annotations

import copy
import html
from datetime import datetime
from typing import Any

from nbgrader.preprocessors import ClearHiddenTests
from traitlets.config import Config

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import Assignment

HIDDEN_MESSAGE = "its message is shown after the due date"  #: what a hidden failure says early


def hidden_cells(assignment: Assignment) -> dict[str, set[str]]:
    """``{notebook file name: grade ids of its test cells that hold hidden tests}``."""
    marker = assignment.hidden_tests
    found: dict[str, set[str]] = {}
    for name in assignment.notebooks:
        source = notebook.read(assignment.source(name))
        found[name] = {
            str(notebook.grade_id(cell))
            for cell in source.cells
            if notebook.is_test(cell) and marker in cell.source
        }
    return found


def early(nb: Any, hidden: set[str], config: Config | None = None) -> Any:
    """A copy of executed notebook ``nb`` without what its hidden tests said or are: each
    failing one's error says :data:`HIDDEN_MESSAGE`, its printed output is gone, and its
    hidden code is cleared by nbgrader's ``ClearHiddenTests`` (with the course's
    ``config``), whatever the course's full pages show."""
    shown = copy.deepcopy(nb)
    clearing = ClearHiddenTests(config=config or Config())
    clearing.enforce_metadata = False
    shown, _ = clearing.preprocess(shown, {})
    for cell in shown.cells:
        if not notebook.is_test(cell) or str(notebook.grade_id(cell)) not in hidden:
            continue
        failed = any(o.get("output_type") == "error" for o in cell.get("outputs", []))
        cell.outputs = []
        if failed:
            cell.outputs.append(
                {
                    "output_type": "error",
                    "ename": "Hidden test",
                    "evalue": HIDDEN_MESSAGE,
                    "traceback": [f"Hidden test: {HIDDEN_MESSAGE}"],
                }  # fmt: skip
            )
    return shown


def when(moment: datetime | None) -> str:
    """A time as the page says it (UTC, to the minute)."""
    return "no due date" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def notice_page(title: str, lines: list[str]) -> str:
    """A short page of its own: a title and what it has to say (HTML, nothing to run)."""
    said = "\n".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n'
        f"<title>{html.escape(title)}</title>\n"
        "<style>body { font-family: sans-serif; max-width: 45em; margin: 2em auto; "
        "color: #1a1a1a; background: #fff; line-height: 1.5; }</style>\n"
        f"</head>\n<body>\n<main>\n<h1>{html.escape(title)}</h1>\n{said}\n</main>\n"
        "</body>\n</html>\n"
    )
