"""Check your notebook before you submit it: ``python self_check.py [NOTEBOOK]``.

Runs the notebook top to bottom in a fresh Jupyter kernel, as *Kernel →
Restart & Run All* would, then lists every answer as

- ``done``: filled in, and every visible test of it passes;
- ``failing``: a visible test fails (its message follows), or the answer
  cell itself raised an error;
- ``not attempted``: the cell still holds its stub;
- ``missing``: the answer cell is gone (restore it from a fresh copy).

A cell that is neither an answer nor a test failing (the setup cell, when a
package is missing or a helper module is not beside the notebook) is named
first, with its cause and the fix: every answer after it fails because of it.
A notebook renamed by Jupyter (``hw1-Copy1.ipynb``), the only one in the
folder, is checked with a reminder to keep the name.

Hidden tests run only when the notebook is graded, so passing here is
necessary, not sufficient. Exit status 0 only when every cell runs, every
answer is done and every visible test passes; 1 otherwise; 2 when the
notebook cannot be read or run at all.

This file is the same code as ``python -m autograder check`` in the course
repository: ``python -m autograder generate`` copies it into the release
folder with :data:`ASSIGNMENT` filled in. It needs only the standard library
and what any Jupyter install has (``nbformat``, ``nbclient``, a Python kernel).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

#: Filled in by ``python -m autograder generate``: the assignment's id, per
#: notebook {answer grade_id: the stub the release gives}, and the packages its
#: notebooks import ("packages").
ASSIGNMENT: dict[str, Any] = {
    "id": "08-multi-head",
    "notebooks": {
        "multi_head.ipynb": {
            "attention_weights": "def attention_weights(x, W_q, W_k):\n    \"\"\"One head's attention shares: who each position listens to.\n\n    x: T x d_model, the input rows.\n    W_q, W_k: d_model x d_head, the query and key matrices.\n    Returns: T x T. Row i holds position i's shares of positions 0..T-1:\n    non-negative, summing to 1, exactly 0 after column i (the future).\n    \"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()",
            "head": "def head(x, W_q, W_k, W_v):\n    \"\"\"One complete attention head.\n\n    x: T x d_model.\n    W_q, W_k: d_model x d_head.  W_v: d_model x d_v.\n    Returns: T x d_v, row i the blend of the values that position i attends to.\n    \"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()",
            "blend": "def blend(weights, values):\n    \"\"\"The weighted average of value rows.\n\n    weights: n, non-negative shares summing to 1.\n    values: n x d, one value row per position.\n    Returns: d, the rows averaged with those shares.\n    \"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()",
            "two_worlds": "# YOUR CODE HERE\nraise NotImplementedError()",
            "disagreement": "def disagreement(shares_a, shares_b):\n    \"\"\"Total-variation distance between two heads' shares, per position.\n\n    shares_a, shares_b: T x T, each row summing to 1.\n    Returns: T, entry i the distance between row i of the two tables,\n    from 0 (same shares) to 1 (no position in common).\n    \"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()",
            "concat_heads": "def concat_heads(answers):\n    \"\"\"Glue the heads' answers side by side.\n\n    answers: a list or tuple of h arrays, answer i of shape T x d_i.\n    Returns: T x (d_1 + ... + d_h), answer 1's columns first, in order.\n    \"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()",
            "wrong_axis": "answers = random_arrays(48, *[(T, d_head)] * n_heads)  # stand-ins for the four heads' answers\n# YOUR CODE HERE\nraise NotImplementedError()\nprint(\"glued on the default axis:\", wrong_shape)",
            "count_params": "def count_params(d_model, n_heads, d_head=None):\n    \"\"\"Learned numbers in all heads' W_q, W_k and W_v.\n\n    d_model: the model width; n_heads: how many heads;\n    d_head: one head's width, by default d_model // n_heads.\n    Returns: the count, an int.\n    Raises ValueError for a size below 1, or when d_head is not given and\n    n_heads does not divide d_model.\n    \"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()",
            "multi_head": "def multi_head(x, heads):\n    \"\"\"Multi-head attention: every head on the same input, glued side by side.\n\n    x: T x d_model.\n    heads: a sequence of (W_q, W_k, W_v) triples, W_v of head i d_model x d_i.\n    Returns: T x (d_1 + ... + d_h), head 1's answer in the first columns.\n    \"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()",
            "why_not_average": "YOUR ANSWER HERE",
            "batched_heads": "def batched_heads(x, W_q, W_k, W_v, n_heads):\n    \"\"\"Multi-head attention for all heads at once, as libraries compute it.\n\n    x: T x d_model.\n    W_q, W_k, W_v: d_model x d_model, head i's matrix in the i-th block of\n    d_head = d_model // n_heads columns.\n    n_heads: how many heads; it divides d_model.\n    Returns: T x d_model, what multi_head gives for those heads.\n    \"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()"
        }
    },
    "packages": [
        "numpy"
    ]
}

WRITTEN_STUB = "YOUR ANSWER HERE"  #: nbgrader's stub for a written answer
TIMEOUT = 60.0  #: seconds a cell may run before the check interrupts it
DONE, FAILING, NOT_ATTEMPTED, MISSING = "done", "failing", "not attempted", "missing"


class CannotCheck(Exception):
    """The notebook cannot be read or run: a one-line reason."""


def _meta(cell: Any) -> dict[str, Any]:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def _is_test(cell: Any) -> bool:
    meta = _meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _runs_nothing(source: str) -> bool:
    """A hidden test's placeholder: nothing but comments and a docstring is left of it."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in body)


def _answer_of(test_id: str, answer_ids: list[str]) -> str | None:
    """The answer a test grades: ``test_mean_empty`` grades ``mean`` (the longest id that fits)."""
    fits = [a for a in answer_ids if test_id == f"test_{a}" or test_id.startswith(f"test_{a}_")]
    return max(fits, key=len, default=None)


def _error(cell: Any) -> str | None:
    """``"AssertionError: message"`` if the executed cell ended in an error, else None."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    return None


def read(path: Path) -> Any:
    """The notebook at ``path``, or :class:`CannotCheck` saying why not."""
    import json

    import nbformat

    try:
        data = path.read_bytes()
    except OSError as why:
        raise CannotCheck(f"cannot read {path}: {why.strerror or why}") from None
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CannotCheck(f"{path.name} is not valid JSON: is it a notebook?") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise CannotCheck(f"{path.name} is not a Jupyter notebook (no cells)")
    try:
        return nbformat.reads(data.decode(), as_version=4)
    except Exception as why:
        raise CannotCheck(f"{path.name} is not a notebook Jupyter can read: {why}") from None


def run(
    nb: Any, folder: Path, timeout: float, functions: list[str] | None = None
) -> dict[int, dict[str, list[str]]]:
    """Run every cell of ``nb`` in a fresh kernel started in ``folder``; outputs go into ``nb``.

    Errors do not stop the run (every test gets its say); a cell running past
    ``timeout`` seconds is interrupted, which shows as its error. functions:
    the answer functions; each code cell outside the answers and tests that
    fails is then run once more with them watched (:data:`WATCH`). Returns
    ``{cell index: {answer function: what it was seen to do}}`` for those
    cells: every function the cell called, with a list of notes such as
    "changes its arguments" (empty when nothing was seen).
    """
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    client = NotebookClient(
        nb,
        timeout=timeout,
        interrupt_on_timeout=True,
        allow_errors=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    )
    seen: dict[int, dict[str, list[str]]] = {}
    try:
        # The kernel's own log (a warning about its transport) means nothing to a student.
        # NBGRADER_EXECUTION as `nbgrader validate` sets it: a notebook may skip what
        # only a reader needs (a timing) while it is checked.
        env = {**os.environ, "NBGRADER_EXECUTION": "validate"}
        with client.setup_kernel(stderr=subprocess.DEVNULL, env=env):
            _run_aside(client, [EXPLAIN.replace("{source!r}", repr(crash_reasons_source()))])
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            try:
                for index, cell in enumerate(nb.cells):
                    if functions and _is_lesson_cell(cell) and _error(cell):
                        seen[index] = _watch(client, cell.source, functions)
            except DeadKernelError:
                pass  # the notebook itself ran: its report stands, with what was seen so far
    except NoSuchKernel:
        raise CannotCheck("no Python kernel found: install Jupyter (pip install jupyter)") from None
    except DeadKernelError as why:
        raise CannotCheck(f"the kernel died while running the notebook ({why})") from None
    return seen


#: Run in the student's kernel first: a crash in the student's code says what its
#: operands held and the rule they broke, as on the feedback page
#: (``autograder/sandbox/crash_reasons.py``, whose source {source!r} is filled in).
EXPLAIN = """
def _self_check_explain(source):
    import types
    reasons = types.ModuleType("crash_reasons")
    exec(compile(source, "crash_reasons.py", "exec"), reasons.__dict__)
    try:
        from ipykernel.compiler import get_tmp_directory
        reasons.CELL_FILES = (*reasons.CELL_FILES, get_tmp_directory())
    except Exception:
        pass

    def explained(shell, etype, value, tb, tb_offset=None):
        why = reasons.explain(value.__cause__ or value) or reasons.explain(value)
        # a failed assert keeps its own words unless a rule was broken: its operands alone
        # (a test's names) say nothing its message does not
        shown = str(value)
        plain = "\\nWhy: " not in why and isinstance(value, AssertionError)
        if not why or plain or why in shown:
            return shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        if value.args and value.args[0] == shown:
            value.args = (shown + "\\n" + why, *value.args[1:])
            return shell.showtraceback((etype, value, tb), tb_offset=tb_offset)

        class Explained(Exception):  # an error whose words are not its first argument
            def __str__(self):
                return shown + "\\n" + why

        stand_in = Explained()
        stand_in.__cause__, stand_in.__context__ = value.__cause__, value.__context__
        return shell.showtraceback((etype, stand_in, tb), tb_offset=tb_offset)

    get_ipython().set_custom_exc((Exception,), explained)


if {source!r}:
    _self_check_explain({source!r})
del _self_check_explain
"""


def crash_reasons_source() -> str:
    """The crash explainer's source: the copy beside this file in a release folder, else
    the engine's own module; "" when neither is there (crashes then show as Python says)."""
    beside = Path(__file__).with_name("crash_reasons.py")
    if beside.is_file():
        return beside.read_text()
    try:
        from autograder.sandbox import crash_reasons
    except ImportError:
        return ""
    return Path(crash_reasons.__file__).read_text()


def _run_aside(client: Any, sources: list[str]) -> list[Any]:
    """Run ``sources`` in ``client``'s kernel as cells the notebook does not keep."""
    import nbformat

    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    # nbclient stores an executed cell at its index: these go after the notebook's own,
    # and are taken off again.
    first = len(client.nb.cells)
    client.nb.cells.extend(cells)
    try:
        for index, cell in enumerate(cells, first):
            client.execute_cell(cell, index, store_history=False)
    finally:
        del client.nb.cells[first:]
    return cells


#: Run in the student's kernel before a failing lesson cell is run again: each
#: answer function is wrapped so that a call records its name, whether it changed
#: its arguments, and whether a second call with copies of the same arguments
#: returns something else (state kept between calls). {names!r} is filled in.
WATCH = """
def _self_check_watch(names):
    import copy, functools, json

    def same(a, b):
        try:
            import numpy
        except ImportError:
            numpy = None
        if numpy is not None and (isinstance(a, numpy.ndarray) or isinstance(b, numpy.ndarray)):
            return (isinstance(a, numpy.ndarray) and isinstance(b, numpy.ndarray)
                    and a.shape == b.shape and a.dtype == b.dtype
                    and bool(numpy.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
        if isinstance(a, (list, tuple)) and type(a) is type(b):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        try:
            return bool(a == b)
        except Exception:
            return a is b

    seen, originals = {}, {}
    for name in names:
        function = globals().get(name)
        if not callable(function):
            continue
        originals[name] = function

        def watched(*args, _name=name, _function=function, **kwargs):
            notes = seen.setdefault(_name, [])
            try:
                before = copy.deepcopy((args, kwargs))
            except Exception:
                return _function(*args, **kwargs)
            got = _function(*args, **kwargs)
            if not same((args, kwargs), before) and "arguments" not in notes:
                notes.append("arguments")
            try:
                again = _function(*copy.deepcopy(before[0]), **copy.deepcopy(before[1]))
            except Exception:
                again = got
            if not same(got, again) and "state" not in notes:
                notes.append("state")
            return got

        globals()[name] = functools.wraps(function)(watched)

    def report():
        globals().update(originals)
        print(json.dumps(seen))

    return report


_self_check_report = _self_check_watch({names!r})
"""

#: what each note of :data:`WATCH` means, for the student
NOTES = {
    "arguments": "changes its arguments (the lesson uses them again after the call)",
    "state": "keeps state between calls (called again with the same arguments, "
    "it returns something else)",
}


def _watch(client: Any, source: str, functions: list[str]) -> dict[str, list[str]]:
    """Run ``source`` again in ``client``'s kernel with the answer functions watched."""
    import json

    sources = [WATCH.replace("{names!r}", repr(functions)), source, "_self_check_report()"]
    cells = _run_aside(client, sources)
    text = "".join(o.get("text", "") for o in cells[-1].outputs if o.output_type == "stream")
    try:
        found = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}
    return {
        name: [NOTES[n] for n in notes if n in NOTES]
        for name, notes in found.items()
        if name in functions and isinstance(notes, list)
    }


def _is_lesson_cell(cell: Any) -> bool:
    """A code cell that is neither an answer nor a test: the lesson's own code."""
    meta = _meta(cell)
    return cell.get("cell_type") == "code" and not meta.get("solution") and not _is_test(cell)


def fix_for(message: str, helpers: Path | None = None) -> str:
    """What to do about an error a cell outside the answers raised ("" when unknown).

    helpers: the release folder, whose ``.py`` files must sit beside the notebook.
    """
    missing = re.match(r"ModuleNotFoundError: No module named '([\w.]+)'", message)
    if not missing:
        return ""
    module = missing.group(1).split(".")[0]
    if helpers is not None and (helpers / f"{module}.py").is_file():
        return f"keep {module}.py (from the release folder) beside the notebook"
    return f"install {module} where Jupyter runs (pip install {module}), then run again"


NOT_DONE_YET = "not done yet: it should pass once that is"  #: ends a consequence's line


def _heading(cell: Any) -> str | None:
    """The last heading of a Markdown cell (``## Step 3 · Glue``), or None."""
    if cell.get("cell_type") != "markdown":
        return None
    found = [line.lstrip("#").strip() for line in cell.source.splitlines() if line.startswith("#")]
    return found[-1] if found else None


def _answer_functions(stubs: dict[str, str]) -> list[str]:
    """The functions the answer cells define (``def mean(values):`` in a stub)."""
    return [name for stub in stubs.values() for name in re.findall(r"^def (\w+)\(", stub, re.M)]


def broken_cells(
    executed: Any,
    stubs: dict[str, str],
    helpers: Path | None = None,
    results: dict[str, tuple[str, str]] | None = None,
    seen: dict[int, dict[str, list[str]]] | None = None,
) -> list[str]:
    """A line for each cell outside the answers that raised an error, in order.

    Each names the cell as a student finds it: by the section heading above it
    (Jupyter shows no cell numbers), and by the answers it called, which are
    what to check first. results: the answers' verdicts (:func:`verdicts`).
    seen: what :func:`run` saw each failing cell's answers do; an answer is
    blamed only if the cell called it, and for what it was seen to do. A cell
    after an answer that is not done is likely to fail because of it: its line
    says so, ending with :data:`NOT_DONE_YET`, and it is not what the student
    must fix first. A failing test cell that grades no answer is named too: a
    notebook with any failing cell is never ready.
    """
    found = []
    unfinished = None  # the first answer above that is not done
    heading = "the top of the notebook"
    functions = _answer_functions(stubs)
    for index, cell in enumerate(executed.cells):
        heading = _heading(cell) or heading
        meta = _meta(cell)
        grade_id = meta.get("grade_id")
        if grade_id in stubs:
            if unfinished is None and results and results.get(grade_id, (DONE,))[0] != DONE:
                unfinished = grade_id
            continue
        if cell.get("cell_type") != "code":
            continue
        message = _error(cell)
        if not message:
            continue
        where = f'the cell under "{heading}"' + (f" ({grade_id})" if grade_id else "")
        if _is_test(cell):
            if _answer_of(str(grade_id), list(stubs)) is None and not _runs_nothing(cell.source):
                found.append(f"the test {where.removeprefix('the ')} fails: {message}")
            continue
        if unfinished is not None:
            found.append(f"{where} fails: {message}; after {unfinished}, {NOT_DONE_YET}")
            continue
        fix = fix_for(message, helpers)
        if not fix:
            fix = _blame(cell.source, functions, (seen or {}).get(index))
        found.append(f"{where} fails: {message}" + (f": {fix}" if fix else ""))
    return found


def _blame(source: str, functions: list[str], seen: dict[str, list[str]] | None) -> str:
    """What to check in the answers a failing lesson cell used ("" for none).

    seen: the answers the cell was seen to call and what they did (None: not
    watched, so the answers its code names).
    """
    if seen is None:
        called = [f for f in functions if re.search(rf"\b{re.escape(f)}\s*\(", source)]
        doing: dict[str, list[str]] = {name: [] for name in called}
    else:
        doing = {name: seen[name] for name in functions if name in seen}
    noted = [f"your {name} {' and '.join(notes)}" for name, notes in doing.items() if notes]
    if noted:
        return "; ".join(noted) + ": it must not, even where its own tests pass"
    if doing:
        them = "they return" if len(doing) > 1 else "it returns"
        return f"it calls your {', '.join(doing)}: check what {them} for the inputs it uses here"
    return ""


def verdicts(executed: Any, stubs: dict[str, str]) -> dict[str, tuple[str, str]]:
    """``{answer id: (state, message)}`` for an executed notebook; see the module's list."""
    cells = {_meta(c).get("grade_id"): c for c in executed.cells if _meta(c).get("solution")}
    results: dict[str, tuple[str, str]] = {}
    for answer, stub in stubs.items():
        cell = cells.get(answer)
        if cell is None:
            results[answer] = (MISSING, "its cell was deleted; copy it back from a fresh release")
        elif cell.source.strip() in (stub.strip(), WRITTEN_STUB):
            results[answer] = (NOT_ATTEMPTED, "")
        elif cell.get("cell_type") == "code" and _error(cell):
            results[answer] = (FAILING, f"the answer cell itself fails: {_error(cell)}")
        else:
            results[answer] = (DONE, "")
    for cell in executed.cells:
        if not _is_test(cell) or _runs_nothing(cell.source):
            continue
        owner = _answer_of(str(_meta(cell).get("grade_id")), list(stubs))
        message = _error(cell)
        if owner is not None and message and results[owner][0] == DONE:
            results[owner] = (FAILING, message)
    return results


def report(results: dict[str, tuple[str, str]], broken: list[str] | None = None) -> int:
    """Print one line per answer and what it means; return the exit status (0 or 1).

    broken: lines for cells outside the answers that failed (:func:`broken_cells`),
    shown first: what fails after them may fail because of them.
    """
    broken = broken or []
    first = [line for line in broken if not line.endswith(NOT_DONE_YET)]
    for line in first:
        print(line)
    if first and any(state != DONE for state, _ in results.values()):
        print("Fix that first: the answers below that fail may fail only because of it.\n")
    elif first:
        print("Every answer passes its visible tests, but a notebook must run to the end.\n")
    width = max(len(answer) for answer in results)
    for answer, (state, message) in results.items():
        line = f"{answer:<{width}}  {state}"
        print(f"{line}: {message}" if message else line)
    later = [line for line in broken if line.endswith(NOT_DONE_YET)]
    if later:
        print("\nCells that use those answers fail too:")
        for line in later:
            print(f"  {line}")
    done = sum(state == DONE for state, _ in results.values())
    print(
        "\nThe visible tests check each answer's values on a small example, so passing them"
        "\nmeans the main computation is right. Hidden tests run when your notebook is graded:"
        "\nthey try other sizes and edge cases, so they may still find something."
    )
    if done == len(results) and not broken:
        print(f"\nall {done} answers done and every visible test passes: ready to submit")
        return 0
    if first:
        print(f"\n{len(first)} cell(s) outside the answers fail: not ready to submit yet")
        return 1
    print(f"\n{done} of {len(results)} answers done: not ready to submit yet")
    return 1


def check_notebook(
    path: Path, stubs: dict[str, str], timeout: float = TIMEOUT, helpers: Path | None = None
) -> int:
    """Check the notebook at ``path`` against its answers' ``stubs``; the exit status.

    helpers: the release folder (its helper modules belong beside the notebook).
    """
    nb = read(path)
    print(f"running {path.name} in a fresh kernel...", flush=True)
    seen = run(nb, path.parent.resolve(), timeout, _answer_functions(stubs))
    results = verdicts(nb, stubs)
    return report(results, broken_cells(nb, stubs, helpers, results, seen))


def renamed(folder: Path, expected: str) -> Path | None:
    """The one notebook in ``folder`` when ``expected`` is not there (a renamed copy), or None."""
    found = [p for p in sorted(folder.glob("*.ipynb")) if p.name != expected and p.is_file()]
    return found[0] if len(found) == 1 else None


#: what running a notebook takes, beyond the standard library: what any Jupyter install has
JUPYTER = ("nbformat", "nbclient", "jupyter_client", "ipykernel")


def missing_jupyter() -> list[str]:
    """The parts of Jupyter this Python lacks (none, in any Jupyter environment)."""
    import importlib.util

    return [name for name in JUPYTER if importlib.util.find_spec(name) is None]


def main(argv: list[str] | None = None, assignment: dict[str, Any] | None = None) -> int:
    """``python self_check.py [NOTEBOOK] [--timeout S]``: the exit status."""
    assignment = assignment or ASSIGNMENT
    notebooks: dict[str, dict[str, str]] = assignment["notebooks"]
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(
        prog="python self_check.py",
        description="Run your notebook and its visible tests; exit 0 when ready to submit.",
    )
    parser.add_argument(
        "notebook", nargs="*", help=f"default: {', '.join(notebooks)} in this folder"
    )
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT, help=f"seconds per cell ({TIMEOUT:g})"
    )
    args = parser.parse_args(argv)
    lacking = missing_jupyter()
    if lacking:
        print(
            f"self_check.py: this Python has no Jupyter ({', '.join(lacking)} missing): "
            "run it with the Python your notebooks use, or pip install "
            + " ".join(["jupyter", *assignment.get("packages", [])])
        )
        return 2
    paths = [Path(p) for p in args.notebook] or [here / name for name in notebooks]
    worst = 0
    try:
        if args.timeout <= 0:
            raise CannotCheck("--timeout must be positive")
        if not args.notebook and len(notebooks) == 1 and not paths[0].exists():
            copy = renamed(here, paths[0].name)
            if copy is not None:
                print(
                    f"note: checking {copy.name}; rename it {paths[0].name} before you submit "
                    "(the grader looks for that name)"
                )
                paths = [copy]
        for path in paths:
            name = path.name if path.name in notebooks else None
            if name is None and len(notebooks) == 1:
                name = next(iter(notebooks))
            if name is None:
                raise CannotCheck(f"{path.name} is none of {', '.join(notebooks)}")
            if not path.is_file():
                raise CannotCheck(f"cannot check {path}: it does not exist")
            worst = max(worst, check_notebook(path, notebooks[name], args.timeout, here))
    except CannotCheck as why:
        print(f"self-check: error: {why}", file=sys.stderr)
        return 2
    if assignment.get("due"):
        print(f"due {assignment['due']}: hand in before then")
    return worst


if __name__ == "__main__":
    sys.exit(main())
