"""The engine as a distribution to install elsewhere: its ``pyproject.toml`` and its pins.

A bundle that carries the engine to another machine (Gradescope's
``autograder.zip``) carries the ``autograder`` package as it is installed
here, with a ``pyproject.toml`` written from the installed distribution's own
metadata (name, version, Python, dependencies) and ``constraints.txt``, the
exact versions installed here of everything those dependencies need. So it
builds for any course, wherever the engine came from (a wheel in
site-packages, or this repository), and installs there what grades here.
"""

from __future__ import annotations

import importlib.metadata as metadata
import shutil
from pathlib import Path

import tomli_w
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from autograder.pipeline.files import write_atomic

DISTRIBUTION = "nbgrader-sandboxed-autograder"  #: the engine's name on PyPI and in pip
#: files of the package that are not Python (pyproject's package-data)
PACKAGE_DATA = {
    "autograder.pipeline.reports": ["templates/*/*"],
    "autograder.tools": ["templates/*"],
}


def _distribution() -> metadata.Distribution:
    return metadata.distribution(DISTRIBUTION)


def _needed(requirements: list[str] | None) -> list[Requirement]:
    """The requirements that apply here, extras aside (a marker naming an extra is false)."""
    found = []
    environment = {name: str(value) for name, value in default_environment().items()}
    environment["extra"] = ""
    for text in requirements or []:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate(environment):
            found.append(requirement)
    return found


def pyproject() -> str:
    """A ``pyproject.toml`` that installs the ``autograder`` package beside it, as the
    installed distribution declares it."""
    dist = _distribution()
    project = {
        "name": DISTRIBUTION,
        "version": dist.version,
        "requires-python": dist.metadata["Requires-Python"] or ">=3.11",
        "dependencies": [str(r) for r in _needed(dist.requires)],
    }
    return tomli_w.dumps(
        {
            "build-system": {
                "requires": ["setuptools>=77"],
                "build-backend": "setuptools.build_meta",
            },
            "project": project,
            "tool": {
                "setuptools": {
                    "packages": {"find": {"include": ["autograder*"]}},
                    "package-data": PACKAGE_DATA,
                }
            },
        }
    )


def pins() -> str:
    """``constraints.txt``: ``name==version`` of every distribution installed here that the
    engine needs, directly or through another (sorted)."""
    found: dict[str, str] = {}
    todo = list(_needed(_distribution().requires))
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue  # not installed here: pip resolves it there
        found[name] = dist.version
        todo += _needed(dist.requires)
    lines = [f"{name}=={version}" for name, version in sorted(found.items())]
    version = _distribution().version
    header = f"# What grades with {DISTRIBUTION} {version} where it was bundled."
    return "\n".join([header, *lines]) + "\n"


def write(into: Path) -> None:
    """Write the engine's package, ``pyproject.toml`` and ``constraints.txt`` into ``into``."""
    package = Path(__file__).resolve().parents[1]  # autograder/, as installed here
    shutil.copytree(package, into / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    write_atomic(into / "pyproject.toml", pyproject(), 0o644)
    write_atomic(into / "constraints.txt", pins(), 0o644)


def missing() -> list[str]:
    """The engine's own dependencies that are not installed here, as pip names them
    (``[]`` where the engine itself is not installed as a distribution)."""
    try:
        requirements = _distribution().requires
    except metadata.PackageNotFoundError:
        return []
    absent = []
    for requirement in _needed(requirements):
        try:
            metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            absent.append(requirement.name)
    return absent
