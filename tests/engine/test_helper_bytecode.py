"""Do students' processes start with the course's helper modules compiled, and only as written?

The zygote compiles each ``.py`` helper file once (``isolation.compile_helpers``) and
every student's folder gets the bytecode beside the source (``isolation.write_files``):
the folder is read-only to the student, so Python could not cache it there itself.
"""

import base64
import importlib
import sys
from pathlib import Path

import pytest

from autograder.sandbox import isolation, launcher


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
    monkeypatch.setattr(isolation, "_bytecode", {})
    files = {"helper_one.py": b"VALUE = 'compiled once'\n", "notes.txt": b"not Python"}
    isolation.compile_helpers(launcher.helper_modules(files))
    assert list(isolation._bytecode) == [("helper_one.py", files["helper_one.py"])]
    isolation.write_files(str(tmp_path), files)
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
        == isolation._bytecode[("helper_one.py", files["helper_one.py"])]
    )


def test_a_changed_helper_is_compiled_afresh_not_taken_from_stale_bytecode(
    tmp_path, fresh_modules, monkeypatch
):
    """Bytecode of other text beside a helper (same size, same time) is never used."""
    monkeypatch.setattr(isolation, "_bytecode", {})
    old, new = {"helper_two.py": b"VALUE = 'old'\n"}, {"helper_two.py": b"VALUE = 'new'\n"}
    isolation.compile_helpers(launcher.helper_modules(old))
    isolation.write_files(str(tmp_path), old)
    stale = isolation._bytecode[("helper_two.py", old["helper_two.py"])]
    (tmp_path / "helper_two.py").write_bytes(new["helper_two.py"])  # the stale .pyc stays
    cached = importlib.util.cache_from_source(str(tmp_path / "helper_two.py"))
    assert Path(cached).read_bytes() == stale
    sys.path.insert(0, str(tmp_path))
    assert importlib.import_module("helper_two").VALUE == "new"


def test_a_helper_that_does_not_compile_is_left_to_python(tmp_path, fresh_modules, monkeypatch):
    """A syntax error gets no bytecode: the student's import fails with Python's own message."""
    monkeypatch.setattr(isolation, "_bytecode", {})
    files = {"helper_three.py": b"def broken(:\n"}
    isolation.compile_helpers(launcher.helper_modules(files))
    isolation.write_files(str(tmp_path), files)
    assert isolation._bytecode == {}
    sys.path.insert(0, str(tmp_path))
    with pytest.raises(SyntaxError):
        importlib.import_module("helper_three")


def test_files_keep_their_bytes_and_subfolders_and_never_leave_the_folder(tmp_path):
    """A PNG, a CSV in a subfolder, a module in a package: as the source holds them, and
    a path that climbs out of the folder is not written."""
    png = bytes(range(256)) * 4  # not UTF-8
    files = {
        "jupyter.png": png,
        "data/scores.csv": b"name,score\nada,3\n",
        "pkg/__init__.py": b"",
        "pkg/tools.py": b"X = 1\n",
        "../escaped.txt": b"no",
        "/etc/escaped.txt": b"no",
    }
    sent = launcher.encode_files(files)
    isolation.write_files(str(tmp_path / "lab"), {k: base64.b64decode(v) for k, v in sent.items()})
    assert (tmp_path / "lab" / "jupyter.png").read_bytes() == png
    assert (tmp_path / "lab" / "data" / "scores.csv").read_text().startswith("name,score")
    assert (tmp_path / "lab" / "pkg" / "tools.py").read_bytes() == b"X = 1\n"
    assert not (tmp_path / "escaped.txt").exists()
    assert sorted(p.name for p in (tmp_path / "lab").iterdir()) == ["data", "jupyter.png", "pkg"]


def test_too_many_bytes_of_files_is_said_in_one_sentence():
    with pytest.raises(ValueError, match="at most 12"):
        launcher.encode_files({"big.bin": bytes(launcher.MAX_HELPER_BYTES + 1)})
