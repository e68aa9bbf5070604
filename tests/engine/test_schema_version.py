"""Does a new gradebook get the schema version alembic would give it, without alembic?"""

import subprocess
import sys
from pathlib import Path

import nbgrader.dbutil
import pytest

from autograder.pipeline.course import internals

from . import toy

SCRIPT = (
    '"""{doc}"""\nfrom alembic import op\n\nrevision = {revision!r}\ndown_revision = {parent!r}\n'
)


def _write(folder, revision, parent, doc="a migration"):
    folder.mkdir(exist_ok=True)
    text = SCRIPT.format(doc=doc, revision=revision, parent=parent)
    (folder / f"{revision}_step.py").write_text(text)


def test_nbgraders_head_is_alembics():
    """Is the newest revision read from nbgrader's scripts the one alembic's own API finds?"""
    import alembic.config
    import alembic.script

    scripts = alembic.config.Config()
    scripts.set_main_option("script_location", nbgrader.dbutil.ALEMBIC_DIR)
    expected = alembic.script.ScriptDirectory.from_config(scripts).get_current_head()
    versions = Path(nbgrader.dbutil.ALEMBIC_DIR) / "versions"
    assert internals.newest_revision(versions) == expected


def test_a_chain_in_any_file_order(tmp_path):
    """Is the newest the revision nothing builds on, whatever the files are called?"""
    for revision, parent in [("c3", "b2"), ("a1", None), ("b2", "a1")]:
        _write(tmp_path, revision, parent)
    assert internals.newest_revision(tmp_path) == "c3"


@pytest.mark.parametrize(
    "scripts",
    [
        [("a1", None), ("b2", "a1"), ("c3", "a1")],  # a branch: two heads
        [("a1", None), ("b2", ("a1", "x9"))],  # a merge names several parents
        [("a1", None), ("b2", "zz")],  # a parent no file holds
        [],  # no scripts at all
    ],
)
def test_anything_but_one_plain_head_is_left_to_alembic(tmp_path, scripts):
    """Does anything not a plain chain give None, so alembic itself decides?"""
    tmp_path.mkdir(exist_ok=True)
    for revision, parent in scripts:
        _write(tmp_path, revision, parent)
    assert internals.newest_revision(tmp_path) is None


def test_an_unreadable_script_is_left_to_alembic(tmp_path):
    """Does a script that does not parse, or computes its revision, give None?"""
    _write(tmp_path, "a1", None)
    (tmp_path / "b2_step.py").write_text("revision = 'b' + '2'\ndown_revision = 'a1'\n")
    assert internals.newest_revision(tmp_path) is None
    (tmp_path / "b2_step.py").write_text("revision = (\n")
    assert internals.newest_revision(tmp_path) is None


@pytest.mark.slow
def test_a_new_gradebook_is_stamped_without_importing_alembic(tmp_path):
    """Does setting up a course's gradebook stamp the newest revision, alembic never imported?"""
    root = toy.write_course(tmp_path / "course")
    probe = (
        "import sys, sqlite3\n"
        "from autograder.pipeline.course.assignment import find_assignment\n"
        "from autograder.pipeline.course.gradebook import ensure_gradebook\n"
        f"url = ensure_gradebook(find_assignment({str(root)!r}), 'sqlite:///{tmp_path}/g.db')\n"
        f"(stamped,), = sqlite3.connect({str(tmp_path / 'g.db')!r}).execute(\n"
        "    'SELECT version_num FROM alembic_version').fetchall()\n"
        "print(stamped, 'alembic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    versions = Path(nbgrader.dbutil.ALEMBIC_DIR) / "versions"
    assert done.stdout.split() == [internals.newest_revision(versions), "False"]
