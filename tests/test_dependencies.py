"""Does pyproject.toml declare every package the engine imports, and only an extra's lazily?

A package that comes along with another (jsonschema with nbformat) still gets
its own line when the engine imports it: the other may drop it. A package in
an extra (matplotlib, distributed) is imported only inside a function, so the
engine imports and grades without it.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _declared() -> tuple[set[str], set[str]]:
    """(the names in dependencies, the names in an extra but not there)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {_name(r) for r in project["dependencies"]}
    extras = {_name(r) for group in project["optional-dependencies"].values() for r in group}
    return needed, extras - needed


@functools.cache
def _imports() -> dict[str, tuple[str, bool]]:
    """``{top-level module: (a file importing it, imported at module level)}`` for every
    module autograder/ imports from outside the standard library and itself (read once:
    the tests below only look)."""
    found: dict[str, tuple[str, bool]] = {}

    def visit(node: ast.AST, where: str, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            names = []
        for name in names:
            module = name.split(".")[0]
            if module not in sys.stdlib_module_names and module != "autograder":
                _, before = found.get(module, ("", False))
                found[module] = (where, before or not in_function)
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in ast.iter_child_nodes(node):
            visit(child, where, inside)

    for path in sorted((ROOT / "autograder").rglob("*.py")):
        visit(ast.parse(path.read_text()), str(path.relative_to(ROOT)), False)
    return found


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def _distribution(module: str) -> str:
    names = _distributions().get(module, [module])
    return names[0].lower().replace("_", "-")


def test_every_package_the_engine_imports_is_declared():
    needed, extra = _declared()
    imports = _imports()
    assert {"numpy", "nbformat", "nh3"} <= set(imports)  # the walk still finds imports
    undeclared = [
        f"{where}: {module} ({_distribution(module)})"
        for module, (where, _) in imports.items()
        if _distribution(module) not in needed | extra
    ]
    assert undeclared == []


def test_an_extras_package_is_imported_only_when_used():
    needed, extra = _declared()
    assert {"matplotlib", "distributed"} <= extra
    eager = [
        f"{where}: {module}"
        for module, (where, at_top) in _imports().items()
        if at_top and _distribution(module) in extra
    ]
    assert eager == []


def test_the_archived_sanitizer_is_not_the_engines():
    """bleach is archived upstream; the engine sanitises with nh3 (nbconvert may still bring
    bleach for its own outputs)."""
    needed, _ = _declared()
    assert "nh3" in needed and "bleach" not in needed
    assert "bleach" not in _imports()
