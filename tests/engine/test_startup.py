"""Does every entry point start as autograder.startup says: no IRI parser, imports frozen?

:func:`autograder.startup.start` works only if it runs before nbformat is
first imported; an import moved above it costs every run over a second.
"""

import os
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


def _probed(probe: str, env: dict[str, str] | None = None) -> str:
    """What ``python -c probe`` printed, in a process of its own; it must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


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
    enabled, frozen = _probed(probe).split()
    assert enabled == str(collecting) and int(frozen) > 50_000  # nbgrader, nbconvert, numpy...


def test_a_module_waiting_for_its_first_use_is_the_real_one_when_used():
    """Started, a process uses each stand-in as it would the module: names, submodules,
    ``from`` imports, its spec, bs4's selectors; one not installed still fails to import."""
    probe = (
        "import importlib.util, sys\n"
        "from autograder import startup\n"
        "startup.start()\n"
        "startup.on_first_use('no_such_module_here')\n"
        "waiting = [n for n in startup.ON_FIRST_USE\n"
        "           if isinstance(sys.modules.get(n), startup.OnFirstUse)]\n"
        "import yaml\n"
        "assert isinstance(yaml, startup.OnFirstUse)  # imported, not loaded\n"
        "assert importlib.util.find_spec('yaml').name == 'yaml'\n"
        "assert yaml.safe_load('a: [1, 2]') == {'a': [1, 2]}\n"
        "assert not isinstance(sys.modules['yaml'], startup.OnFirstUse)\n"
        "import requests.adapters\n"
        "from requests import Session\n"
        "assert Session is requests.Session and requests.adapters.HTTPAdapter\n"
        "from bs4 import BeautifulSoup\n"
        "found = BeautifulSoup('<p class=x>1</p><p>2</p>', 'html.parser').select('p.x')\n"
        "assert [p.text for p in found] == ['1']\n"
        "try:\n"
        "    import no_such_module_here\n"
        "except ImportError:\n"
        "    print(' '.join(waiting))\n"
    )
    assert {"yaml", "requests", "soupsieve"} <= set(_probed(probe).split())


@pytest.mark.slow
def test_a_grading_run_never_loads_what_waits_for_its_first_use(lesson_course, lesson_solved):
    """A class graded, pages and all (``-X importtime``, its workers' imports included):
    nothing of :data:`~autograder.startup.ON_FIRST_USE` was loaded."""
    import nbformat

    from autograder.pipeline.course.assignment import find_assignment
    from autograder.startup import ON_FIRST_USE

    assignment = find_assignment(lesson_course)
    subs = lesson_course.parent / "class"
    for student in ("ada", "ben"):
        path = subs / assignment.submission_path(student, "toy.ipynb")
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(lesson_solved))
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autograder", "grade", str(subs),
         "--course", str(lesson_course), "--out", str(lesson_course.parent / "out"),
         "--jobs", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "nbconvert.exporters.html" in imported, "no page was rendered: nothing is checked"
    assert not imported & set(ON_FIRST_USE)


@pytest.mark.parametrize("told", [None, "2"])
def test_the_command_line_loads_numpy_with_one_blas_thread_unless_told(told):
    """``python -m autograder``'s numpy, loaded when an array is first read, starts no thread
    pool of its own (OpenBLAS would start one a core, spinning as it loads); a number the
    environment gives is kept."""
    from autograder.startup import ONE_THREAD

    env = {k: v for k, v in os.environ.items() if k not in ONE_THREAD}
    if told is not None:
        env["OPENBLAS_NUM_THREADS"] = told
    probe = (
        "import os, sys\n"
        "import autograder.__main__\n"
        "import numpy  # as the grader loads it when an array first crosses\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))\n"
    )
    said, threads = _probed(probe, env).split()
    assert said == (told or "1")
    if told is None:
        assert threads == "1"
