"""Do students' processes start with the course's helper modules compiled, and only as written?

The zygote compiles each ``.py`` helper file once (``student.compile_helpers``) and
every student's folder gets the bytecode beside the source (``student.write_files``):
the folder is read-only to the student, so Python could not cache it there itself.
"""

import importlib
import sys
from pathlib import Path

import pytest

from autograder.sandbox import student


@pytest.fixture
def fresh_modules():
    """Forget the modules a test imports, and the folders it put on ``sys.path``."""
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]
    importlib.invalidate_caches()


def test_a_helper_is_imported_from_the_zygotes_bytecode(tmp_path, fresh_modules, monkeypatch):
    """The .pyc is written beside the helper, and importing it compiles nothing."""
    monkeypatch.setattr(student, "_bytecode", {})
    files = {"helper_one.py": "VALUE = 'compiled once'\n", "notes.txt": "not Python"}
    student.compile_helpers(files)
    assert list(student._bytecode) == [("helper_one.py", files["helper_one.py"])]
    student.write_files(str(tmp_path), files)
    cached = importlib.util.cache_from_source(str(tmp_path / "helper_one.py"))
    assert (tmp_path / "notes.txt").read_text() == "not Python"
    sys.path.insert(0, str(tmp_path))
    compiled = []
    monkeypatch.setattr(
        importlib.machinery.SourceFileLoader,
        "source_to_code",
        lambda self, data, path, **kw: compiled.append(path) or compile(data, path, "exec"),
    )
    assert importlib.import_module("helper_one").VALUE == "compiled once"
    assert (
        compiled == []
        and Path(cached).read_bytes()
        == student._bytecode[("helper_one.py", files["helper_one.py"])]
    )


def test_a_changed_helper_is_compiled_afresh_not_taken_from_stale_bytecode(
    tmp_path, fresh_modules, monkeypatch
):
    """Bytecode of other text beside a helper (same size, same time) is never used."""
    monkeypatch.setattr(student, "_bytecode", {})
    old, new = {"helper_two.py": "VALUE = 'old'\n"}, {"helper_two.py": "VALUE = 'new'\n"}
    student.compile_helpers(old)
    student.write_files(str(tmp_path), old)
    stale = student._bytecode[("helper_two.py", old["helper_two.py"])]
    (tmp_path / "helper_two.py").write_text(new["helper_two.py"])  # the stale .pyc stays
    cached = importlib.util.cache_from_source(str(tmp_path / "helper_two.py"))
    assert Path(cached).read_bytes() == stale
    sys.path.insert(0, str(tmp_path))
    assert importlib.import_module("helper_two").VALUE == "new"


def test_a_helper_that_does_not_compile_is_left_to_python(tmp_path, fresh_modules, monkeypatch):
    """A syntax error gets no bytecode: the student's import fails with Python's own message."""
    monkeypatch.setattr(student, "_bytecode", {})
    files = {"helper_three.py": "def broken(:\n"}
    student.compile_helpers(files)
    student.write_files(str(tmp_path), files)
    assert student._bytecode == {}
    sys.path.insert(0, str(tmp_path))
    with pytest.raises(SyntaxError):
        importlib.import_module("helper_three")
