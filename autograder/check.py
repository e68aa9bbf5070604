"""``python -m autograder check NOTEBOOK``: the student's self-check before submitting.

Runs the student's answers against the visible tests of the release (in the
same sandboxed engine that grades them) and reports every answer as done,
failing a visible test (with the test's message), or not yet attempted. Exits 0
only when every answer is done and every visible test passes; unlike stock
``nbgrader validate``, a failing test is a failure.
"""

import sys
from pathlib import Path

from . import course, execute, notebook, sanitize
from .sandbox import Limits, Sandbox, StudentGone


def _is_hidden_only(cell):
    """A release test cell whose checks are all hidden: nothing to run before grading."""
    lines = [line for line in cell.source.strip().splitlines() if line.strip()]
    return len(lines) == 1 and lines[0].startswith('"""Hidden test')


def verdicts(release_nb, executed, answers):
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
        if not notebook.is_test(cell) or _is_hidden_only(cell):
            continue
        answer = notebook.answer_of(notebook.grade_id(cell), list(stubs))
        if results.get(answer, ("", ""))[0] != "done":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                results[answer] = ("failing", f"{output.ename}: {output.evalue}")
                break
    return results


def run(args):
    """Check one notebook; exit status 0 only when everything is done and passing."""
    path = Path(args.notebook)
    try:
        nb, _ = sanitize.read(path.read_bytes())
    except (OSError, sanitize.Unreadable) as why:
        print(f"cannot check {path}: {why}", file=sys.stderr)
        return 2
    release_nb = notebook.read(course.ROOT / course.RELEASE)
    runnable = sanitize.rebuild(release_nb, nb)
    theirs = notebook.answers(runnable)  # the answers that run: a later copy of a cell wins
    folder = course.ROOT / "source" / course.ASSIGNMENT
    sys.path.insert(0, str(folder))
    files = {p.name: p.read_text() for p in folder.glob("*.py")}
    sandbox = Sandbox(use_bwrap=True)
    try:
        student = sandbox.spawn(files, Limits())
        try:
            allowed = execute.student_names(notebook.read(course.ROOT / course.SOURCE))
            status, detail = execute.execute(runnable, student, args.timeout, args.wall, allowed)
        finally:
            student.close()
    except StudentGone as gone:
        status, detail = "kernel_died", str(gone)
    finally:
        sandbox.close()
    results = verdicts(release_nb, runnable, theirs)
    width = max(len(a) for a in results)
    for answer, (state, message) in results.items():
        line = f"{answer:<{width}}  {state}"
        print(f"{line}: {message}" if message else line)
    done = sum(state == "done" for state, _ in results.values())
    if status != "ok":
        print(f"\nthe notebook did not run to the end ({status}: {detail})")
    if done == len(results) and status == "ok":
        print(f"\nall {done} answers done and every visible test passes: ready to submit")
        return 0
    print(f"\n{done} of {len(results)} answers done: not ready to submit yet")
    return 1
