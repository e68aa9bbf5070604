"""Gradescope's ``results.json``: one test per graded cell, a summary, the grader's log."""

from __future__ import annotations

from typing import Any

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import Assignment


def _tests(
    chosen: Assignment,
    row: dict[str, Any],
    columns: notebook.Columns,
    shown: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One Gradescope test per graded cell, in notebook order.

    shown: ``{column: message}`` visible tests show (the run in the course's visible-tests
    twin, :func:`.courses.visible_only`); None shows the graded run's own messages.
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
    what visible tests say, from a run without hidden tests (:func:`.courses.visible_only`);
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
