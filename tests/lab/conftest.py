"""Fixtures shared by the lab's tests: its notebooks, regenerated and graded once."""

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.pipeline.course import notebook
from autograder.tools import (
    corpus,
    generate,
    golden,
    stock,
)
from autograder.tools.golden import RELEASE_KEY, SOURCE_KEY

from . import lab

CORPUS_TABLE = pytest.StashKey[str]()
CORPUS_TITLE = "what the hidden tests catch"


@pytest.fixture(scope="session")
def source_nb():
    """The instructor's source notebook."""
    return notebook.read(lab.ROOT / lab.SOURCE)


@pytest.fixture(scope="session")
def release_nb():
    """The committed student notebook."""
    return notebook.read(lab.ROOT / lab.RELEASE)


@pytest.fixture(scope="session")
def solution_nb():
    """The committed executed solution."""
    return notebook.read(lab.ROOT / lab.SOLUTION)


@pytest.fixture(scope="session")
def answer_ids(release_nb):
    """The grade_ids of the answer cells, in order."""
    return list(notebook.answers(release_nb))


@pytest.fixture(scope="session")
def entries():
    """The answer corpus: ``{"file/name": AnswerSet}``."""
    return corpus.load_corpus(lab.ROOT / lab.CORPUS)


@pytest.fixture(scope="session")
def regenerated():
    """A folder holding release/, solutions/ and samples/ freshly generated from source/."""
    with tempfile.TemporaryDirectory(prefix="regenerated-") as out:
        generate.generate(lab.ASSIGNMENT, out)
        yield Path(out)


@pytest.fixture(scope="session")
def stock_golden():
    """Stock nbgrader's recorded results (autograder.tools.golden): ``{key: StockResult}``.

    Keys: every corpus entry, ``SOURCE_KEY``, ``RELEASE_KEY`` and ``RUNAWAY_KEY``.
    Fails (never skips) when the file is stale: `make golden` regenerates it.
    """
    try:
        return golden.read(lab.ASSIGNMENT)
    except golden.Stale as why:
        pytest.fail(str(why), pytrace=False)


@pytest.fixture(scope="session")
def stock_graded(source_nb, release_nb, solution_nb, entries):
    """Stock ``nbgrader autograde``'s live results for the source, the release and a few entries.

    One batch, graded two at a time (``STOCK_LIVE`` in tests/lab/classes.py): what
    keeps the golden file honest.
    """
    from .classes import STOCK_LIVE

    built = corpus.build(entries, release_nb, solution_nb)
    submissions = {name: built[name] for name in STOCK_LIVE}
    submissions[SOURCE_KEY] = source_nb
    submissions[RELEASE_KEY] = release_nb
    return stock.autograde(submissions, jobs=2)


@pytest.fixture(scope="session")
def graded_corpus(graded_class, release_nb, entries, request):
    """This grader's results for every corpus entry (from the hostile class's run).

    Equal to stock nbgrader's on every entry (test_grader.py compares them with
    the golden file).
    """
    from .classes import corpus_results

    results = corpus_results(graded_class)
    table = corpus.table(entries, results, list(notebook.answers(release_nb)))
    request.config.stash[CORPUS_TABLE] = table
    if hasattr(request.config, "workeroutput"):  # an xdist worker: ../../conftest.py prints it
        request.config.workeroutput.setdefault("sections", {})[CORPUS_TITLE] = table
    return results


@pytest.fixture(scope="session")
def course_template(tmp_path_factory):
    """A scratch course (config, source, release) whose gradebook records the assignment.

    Built once per session; tests take copies (``lab.copy_course``).
    """
    from autograder.pipeline.course.assignment import find_assignment
    from autograder.pipeline.course.gradebook import ensure_gradebook
    from autograder.tools.nbgrader_cli import scratch_course

    template = scratch_course(lab.ROOT, tmp_path_factory.mktemp("template") / "course", True)
    ensure_gradebook(find_assignment(template))
    return template


@pytest.fixture(scope="session")
def users_env() -> Iterator[Path]:
    """The users' environment, built as ``make hub-env`` builds it, where every user reaches it.

    Students run it (``nbgrader``, ``self_check.py``, the hub's servers) without
    any folder of the instructor's made reachable: the course stays 700, and
    the course's own Python (under ``/root`` with pyenv) stays the instructor's.
    Here, not in test_exchange.py, which test_hub.py imports from: a session fixture
    imported into a second module is built again for it (25 s).
    """
    home = Path(tempfile.mkdtemp(prefix="nbx-users-"))  # in /tmp, outside every home
    home.chmod(0o755)
    env = home / "env"
    built = subprocess.run(["make", "--no-print-directory", "hub-env", f"HUB_ENV={env}"],
                           cwd=lab.ROOT, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    try:
        yield env
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def new_course(course_template, tmp_path):
    """A fresh copy of the course template in ``tmp_path/course``, its gradebook built."""
    return lab.copy_course(course_template, tmp_path / "course")


@pytest.fixture(scope="session")
def graded_samples(tmp_path_factory, course_template):
    """The sample class, downloaded from Canvas and graded once in a scratch course.

    ``{"course", "out", "done", "ids", "lms_ids"}``: each student's notebook named
    as Canvas names a download (``ada_1000_9000_multi_head.ipynb``: user id 1000,
    so the student id ``ada-1000``); ids: ``{sample name: student id}``;
    lms_ids: ``{student id: Canvas user id}``.
    What the tests of feedback pages, the exports and Gradescope look at.
    """
    base = tmp_path_factory.mktemp("samples")
    course_dir = lab.copy_course(course_template, base / "course")
    download, out = base / "canvas-download", base / "grades"
    download.mkdir()
    samples = lab.ROOT / lab.SAMPLE_CLASS
    ids, lms_ids = {}, {}
    for number, student in enumerate(sorted(p.name for p in samples.iterdir())):
        ids[student] = f"{student}-{1000 + number}"
        lms_ids[ids[student]] = str(1000 + number)
        name = f"{student}_{1000 + number}_{9000 + number}_{lab.NOTEBOOK}"
        shutil.copy(samples / lab.submission_path(student), download / name)
    done = lab.grade_command(download, course_dir, out, jobs=2)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"course": course_dir, "out": out, "done": done, "ids": ids, "lms_ids": lms_ids}


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory, course_template, release_nb, solution_nb):
    """The hostile class graded once (see tests/lab/classes.py): rows, output, what changed."""
    from .classes import build_and_grade

    return build_and_grade(tmp_path_factory, course_template, release_nb, solution_nb)


def pytest_terminal_summary(terminalreporter, config):
    """Print what the hidden tests catch, when the corpus was graded."""
    text = config.stash.get(CORPUS_TABLE, None)
    if text:
        terminalreporter.section(CORPUS_TITLE)
        terminalreporter.write_line(text)
