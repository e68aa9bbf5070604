"""Does every entry point start as autograder.startup says: no IRI parser, imports frozen?

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
    assert "pkg_resources" not in imported and "setuptools" not in imported


def test_the_tests_run_without_the_iri_parser():
    """pytest's own process too (../conftest.py loads nbval after the start)."""
    import nbformat  # noqa: F401

    assert "rfc3987_syntax.syntax_helpers" not in sys.modules


def test_nbgrader_still_unpacks_archives_with_setuptools_imported_then(tmp_path):
    """The stand-in's functions are setuptools' own once called: a zip unpacks as before."""
    import zipfile

    from nbgrader import utils

    from autograder import startup

    archive = tmp_path / "hand-in.zip"
    with zipfile.ZipFile(archive, "w") as made:
        made.writestr("ada/notebook.ipynb", "{}")
    if "setuptools.archive_util" not in sys.modules:
        startup._archive_util_on_first_use()
    utils.unpack_archive(str(archive), str(tmp_path / "out"))
    assert (tmp_path / "out" / "ada" / "notebook.ipynb").read_text() == "{}"
    real = sys.modules["setuptools.archive_util"]
    assert real.__doc__ != "imported when first used" and hasattr(real, "UnrecognizedFormat")


@pytest.mark.slow
@pytest.mark.parametrize("collecting", [True, False])
def test_what_a_command_loads_is_frozen_and_collection_goes_on_as_it_was(collecting):
    """After ``startup.loading()``: the command's modules out of the collector's walks, and
    the collector on again only if it was on before."""
    probe = (
        "import gc, sys\n"
        "from autograder import startup\n"
        f"{'' if collecting else 'gc.disable()'}\n"
        "with startup.loading():\n"
        "    assert not gc.isenabled()\n"
        "    import autograder.cli\n"
        "print(gc.isenabled(), gc.get_freeze_count())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    enabled, frozen = done.stdout.split()
    assert enabled == str(collecting) and int(frozen) > 50_000  # nbgrader, nbconvert, numpy...
