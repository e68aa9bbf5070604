"""Does every entry point skip jsonschema's slow IRI parser, as autograder.startup says?

:func:`autograder.startup.start` works only if it runs before nbformat is
first imported; an import moved above it costs every run over a second.
"""

import subprocess
import sys

import pytest

ENTRY_POINTS = {
    "the command line": ["-m", "autograder", "grade", "--help"],
    "run_autograder": ["-m", "autograder.tools.gradescope", "--help"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_an_entry_point_imports_nbformat_without_the_iri_parser(name):
    """Started as its users start it: nbformat is imported, the parser never."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *ENTRY_POINTS[name]],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "nbformat" in imported, "nothing imported nbformat: the test checks nothing"
    assert "rfc3987_syntax.syntax_helpers" not in imported  # where its parsers are built


def test_the_tests_run_without_the_iri_parser():
    """pytest's own process too (../conftest.py loads nbval after the start)."""
    import nbformat  # noqa: F401

    assert "rfc3987_syntax.syntax_helpers" not in sys.modules
