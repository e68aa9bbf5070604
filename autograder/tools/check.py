"""``python -m autograder check NOTEBOOK``: the student's self-check before submitting.

Runs the student's answers against the visible tests of the release (in the
same sandboxed engine that grades them) and reports every answer as done,
failing a visible test (with the test's message), or not yet attempted. Exits 0
only when every answer is done and every visible test passes; unlike stock
``nbgrader validate``, a failing test is a failure.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

from ..pipeline import execute, notebook, sanitize
from ..pipeline.course import find_assignment
from ..pipeline.errors import Status, UserError
from ..sandbox import Limits, Sandbox, StudentGone


def _runs_nothing(cell: Any) -> bool:
    """A release test cell with no statement but its docstring: its checks are all hidden.

    The release is what nbgrader's ``ClearHiddenTests`` left of the source, so
    this is a cell whose code was all between nbgrader's hidden-test markers.
    """
    try:
        body = ast.parse(cell.source).body
    except SyntaxError:
        return False
    return all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in body)


def verdicts(release_nb: Any, executed: Any, answers: dict[str, str]) -> dict[str, tuple[str, str]]:
    """``{answer_id: (state, message)}``, state one of done, failing, not attempted."""
    stubs = notebook.answers(release_nb)
    results = {}
    for answer in stubs:
        source = answers.get(answer, stubs[answer])
        if source.strip() == stubs[answer].strip():
            results[answer] = ("not attempted", "")
            continue
        results[answer] = ("done", "")
    for cell in executed.cells:
        if not notebook.is_test(cell) or _runs_nothing(cell):
            continue
        graded = notebook.answer_of(notebook.grade_id(cell), list(stubs))
        if graded is None or results.get(graded, ("", ""))[0] != "done":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                results[graded] = ("failing", f"{output.ename}: {output.evalue}")
                break
    return results


def check(
    path: Path | str,
    *,
    assignment: str | None = None,
    course: Path | str | None = None,
    timeout: float = 30,
    wall: float = 300,
) -> int:
    """Check one notebook; exit status 0 only when everything is done and passing."""
    path = Path(path)
    chosen = find_assignment(course, assignment)
    name = path.name if path.name in chosen.notebooks else None
    if name is None and len(chosen.notebooks) == 1:
        name = chosen.notebooks[0]
    if name is None:
        raise UserError(
            f"{path.name} is none of {chosen.id}'s notebooks: {', '.join(chosen.notebooks)}"
        )
    try:
        nb, _ = sanitize.read(path.read_bytes())
    except (OSError, sanitize.Unreadable) as why:
        raise UserError(f"cannot check {path}: {why}") from None
    release_nb = notebook.read(chosen.release(name))
    runnable = sanitize.rebuild(release_nb, nb)
    theirs = notebook.answers(runnable)  # the answers that run: a later copy of a cell wins
    sys.path.insert(0, str(chosen.source_dir))
    sandbox = Sandbox(use_bwrap=True)
    try:
        student = sandbox.spawn(chosen.helper_files(), Limits())
        try:
            allowed = execute.student_names(notebook.read(chosen.source(name)))
            status, detail = execute.execute(runnable, student, timeout, wall, allowed)
        finally:
            student.close()
    except StudentGone as gone:
        status, detail = Status.KERNEL_DIED, str(gone)
    finally:
        sandbox.close()
    results = verdicts(release_nb, runnable, theirs)
    width = max(len(a) for a in results)
    for answer, (state, message) in results.items():
        line = f"{answer:<{width}}  {state}"
        print(f"{line}: {message}" if message else line)
    done = sum(state == "done" for state, _ in results.values())
    if status != Status.OK:
        print(f"\nthe notebook did not run to the end ({status}: {detail})")
    if done == len(results) and status == Status.OK:
        print(f"\nall {done} answers done and every visible test passes: ready to submit")
        return 0
    print(f"\n{done} of {len(results)} answers done: not ready to submit yet")
    return 1
