"""Which answers use which, and what a cell binds: read from the code of a notebook's cells.

An answer uses another when its cell reads a name the other's cell binds
(``variance`` calls ``mean``). The corpus uses this to tell where a mistake
can cost points; the class report, to find the first broken answer of a chain.
"""

from __future__ import annotations

import ast
from typing import Any

from autograder.pipeline.course import notebook


def binds(source: str) -> set[str]:
    """The names a cell's code binds at its top level (defs, imports, assignments).

    source: a cell's text, IPython syntax allowed. Names bound only inside
    functions or classes are not counted; a cell that cannot be parsed binds none.
    """
    try:
        tree = parsed(source)
    except SyntaxError:
        return set()
    return binds_in(tree)


def binds_in(tree: ast.AST) -> set[str]:
    """The names ``tree`` (a cell's syntax tree, or one statement of it) binds at its top
    level, as :func:`binds` counts them."""
    found = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            return  # what the body binds is local to it
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def parsed(source: str) -> ast.Module:
    """A cell's syntax tree: as Python where it is Python, else as IPython rewrites it.

    IPython's rewriting (magics, ``!`` commands, ``x?``, pasted prompts) touches
    only lines that are not Python, so a cell that parses as it is binds the
    same names either way; it is asked for only for a cell that does not (two
    thirds of the time of reading a notebook's cells, in every grading run's
    main process). ``tests/lab/tools/test_corpus_helpers.py`` compares both
    readings of every cell of the lab and its corpus.
    """
    try:
        return ast.parse(source)
    except SyntaxError:
        from IPython.core.inputtransformer2 import TransformerManager

        return ast.parse(TransformerManager().transform_cell(source))


def uses(nb: Any) -> dict[str, set[str]]:
    """``{answer: the answers it uses directly}``, for every answer cell of ``nb``.

    nb: a source or solution notebook (its answer cells hold working code).
    """
    answers = notebook.answers(nb)
    defines = {name: answer for answer, src in answers.items() for name in binds(src)}
    found: dict[str, set[str]] = {}
    for answer, source in answers.items():
        try:
            tree = ast.parse(notebook.strip_solution_markers(source))
        except SyntaxError:
            found[answer] = set()
            continue
        # the names it reads and never binds itself (a local or an argument is its own)
        nodes = list(ast.walk(tree))
        read = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        own = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        own |= {a.arg for n in nodes if isinstance(n, ast.arguments) for a in n.args + n.kwonlyargs}
        found[answer] = {defines[n] for n in read - own if n in defines and defines[n] != answer}
    return found


def upstream(answer: str, graph: dict[str, set[str]]) -> set[str]:
    """Every answer ``answer`` uses, directly or through others (not itself)."""
    seen: set[str] = set()
    todo = list(graph.get(answer, ()))
    while todo:
        other = todo.pop()
        if other not in seen and other != answer:
            seen.add(other)
            todo.extend(graph.get(other, ()))
    return seen


def affected(answers: list[str] | tuple[str, ...], graph: dict[str, set[str]]) -> set[str]:
    """The answers named and every answer that uses them, directly or not."""
    return set(answers) | {a for a in graph if upstream(a, graph) & set(answers)}
