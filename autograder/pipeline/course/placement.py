"""Where a notebook's tests run: in the grader, or beside the student's code as stock does.

The engine reaches a test's verdict in its own process, asking the student's
process for names and calls (:mod:`autograder.pipeline.grading.execute`). That
carries what a test reads and calls, not what a test *does to the student's
process*: a test that rebinds a student's name (nbgrader's ``del squares ...
finally: squares = orig``), reads the assignment's files by a relative path, or
sets state the student's code shares (a random seed, the working folder) means
something only in the process where the student's code runs. Such a notebook
is graded as stock nbgrader grades it: every cell, tests included, in the
student's sandboxed process, with the verdict read from the cells' outputs.

:func:`reasons` reads the source and says why, one sentence per cause; the
grader logs them and ``generate`` warns with them. A test the grader cannot
carry at run time (a value that cannot cross, such as a generator or an open
figure) sends that one student's notebook beside too
(``execute.Execution.crossed``).
"""

from __future__ import annotations

import ast
import symtable
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from autograder.pipeline.course import dependencies, notebook

#: functions whose call changes state the student's code shares with the test
#: (the random generators' seeds, the working folder, numpy's and matplotlib's settings)
SHARED_STATE_CALLS = frozenset({
    "seed", "set_state", "setstate", "chdir", "setrecursionlimit", "set_printoptions",
    "seterr", "rc", "use", "putenv", "setdefaulttimeout",
})  # fmt: skip
#: calls that open a file by a path the test names
FILE_CALLS = frozenset({"open", "Path", "listdir", "scandir", "exists", "isfile", "glob"})


def _tree(source: str) -> ast.Module | None:
    try:
        return dependencies.parsed(source)
    except SyntaxError:
        return None


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _deleted(tree: ast.AST) -> set[str]:
    return {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Delete)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _file_names(paths: Iterable[str]) -> set[str]:
    """Every way a test may name one of the assignment's files: its path, its base name,
    and the top folder it is in."""
    names: set[str] = set()
    for path in paths:
        pure = PurePosixPath(path)
        names |= {path, pure.name, pure.parts[0]}
    return names


def _statement_binds(statement: ast.stmt) -> set[str]:
    return dependencies.binds_in(statement) | _deleted(statement)


def global_reads(node: ast.AST) -> set[str]:
    """The global names ``node`` (an expression or a simple statement) reads, a function's
    or a comprehension's own locals left out (Python's own scoping, via ``symtable``)."""
    text = ast.unparse(node)
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except SyntaxError:
        return set()
    found = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    todo = list(table.get_children())
    while todo:
        child = todo.pop()
        found |= {
            s.get_name()
            for s in child.get_symbols()
            if s.is_referenced() and s.is_global() and not s.is_declared_global()
        }
        todo.extend(child.get_children())
    return found


def _names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _reads_in_order(statements: list[ast.stmt], students: set[str], bound: set[str]) -> set[str]:
    found: set[str] = set()
    for statement in statements:
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            found |= (global_reads(statement.iter) & students) - bound
            bound |= _names(statement.target)
            found |= _reads_in_order(statement.body + statement.orelse, students, bound)
        elif isinstance(statement, (ast.If, ast.While)):
            found |= (global_reads(statement.test) & students) - bound
            found |= _reads_in_order(statement.body + statement.orelse, students, bound)
        elif isinstance(statement, ast.Try):
            handlers = [s for h in statement.handlers for s in h.body]
            parts = statement.body + handlers + statement.orelse + statement.finalbody
            found |= _reads_in_order(parts, students, bound)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                found |= (global_reads(item.context_expr) & students) - bound
                if item.optional_vars is not None:
                    bound |= _names(item.optional_vars)
            found |= _reads_in_order(statement.body, students, bound)
        else:
            found |= (global_reads(statement) & students) - bound
            bound |= _statement_binds(statement)
    return found


def students_read(tree: ast.Module, students: set[str], bound: set[str]) -> set[str]:
    """The names of ``students`` a cell reads before binding them itself.

    In the order the cell runs its statements: a name read (by a statement, or a
    function it defines, not as that function's own local) counts when neither
    an earlier statement nor an earlier instructor cell (``bound``, updated in
    place) bound it.
    """
    return _reads_in_order(tree.body, students, bound)


def cell_reasons(cell: Any, tree: ast.Module, files: set[str]) -> list[str]:
    """Why this instructor cell cannot reach its verdict in the grader, besides rebinding
    ([] if it can). files: every way a test may name one of the assignment's files."""
    label = notebook.grade_id(cell) or "a read-only cell"
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) in SHARED_STATE_CALLS:
            found.append(f"{label} calls {_called(node)}(), which the student's code shares")
            break
    named = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    opens = any(isinstance(n, ast.Call) and _called(n) in FILE_CALLS for n in ast.walk(tree))
    reads = sorted(named & files)
    if reads or opens:
        what = f"the assignment's file {reads[0]}" if reads else "a file"
        found.append(f"{label} reads {what} from the student's working folder")
    return found


def reasons(source_nb: Any, files: Iterable[str] = ()) -> list[str]:
    """Why the tests of ``source_nb`` must run beside the student's code, one sentence a
    cause; [] where the grader can reach every verdict in its own process.

    files: the assignment's helper files, by their paths (``Assignment.helper_files``).
    """
    code = [c for c in source_nb.cells if c.cell_type == "code"]
    students: set[str] = set()
    for cell in code:
        if not (notebook.is_test(cell) or notebook.is_locked(cell)):
            students |= dependencies.binds(notebook.strip_solution_markers(cell.source))
    instructor = [
        (cell, tree)
        for cell in code
        if (notebook.is_test(cell) or notebook.is_locked(cell))
        and (tree := _tree(cell.source)) is not None
    ]
    read: set[str] = set()
    bound: set[str] = set()
    for _, tree in instructor:
        read |= students_read(tree, students, bound)
    found: list[str] = []
    names = _file_names(files)
    for cell, tree in instructor:
        label = notebook.grade_id(cell) or "a read-only cell"
        rebound = {n for statement in tree.body for n in _statement_binds(statement)} & read
        if rebound:
            which = ", ".join(sorted(rebound))
            found.append(f"{label} rebinds {which}, which the tests read from the student's code")
        found += cell_reasons(cell, tree, names)
    return found
