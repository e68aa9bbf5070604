"""Is the golden file of stock nbgrader's results what stock does, and refused once stale?"""

import json
import shutil

import pytest

from autograder.pipeline.course.assignment import find_assignment
from autograder.tools import golden
from autograder.tools.nbgrader_cli import scratch_course

from .. import lab
from ..classes import STOCK_LIVE


@pytest.fixture
def copied(tmp_path):
    """A copy of the course with its corpus and golden file: ``Assignment``."""
    root = scratch_course(lab.ROOT, tmp_path / "course", release=True)
    shutil.copytree(lab.ROOT / "solutions", root / "solutions")
    shutil.copytree(lab.ROOT / lab.CORPUS, root / lab.CORPUS)  # with stock.json
    return find_assignment(root)


def test_current_file_reads(copied):
    """Does the committed file read, with every corpus entry, the source and the release?"""
    results = golden.read(copied)
    entries = {f"{p.stem}/" for p in (copied.root / lab.CORPUS).glob("*.toml")}
    assert {golden.SOURCE_KEY, golden.RELEASE_KEY} <= set(results)
    assert sum(key.startswith(tuple(entries)) for key in results) == len(results) - 2 > 60


def test_other_timeout_is_stale(copied):
    """Is an entry recorded with another cell limit than its corpus table says stale?"""
    corpus_file = copied.root / lab.CORPUS / "mistakes.toml"
    corpus_file.write_text(corpus_file.read_text().replace("timeout = 10", "timeout = 11", 1))
    with pytest.raises(golden.Stale, match=r"stale: .*runaway_glue"):
        golden.read(copied)


def test_edited_corpus_entry_is_stale(copied):
    """Does an edited corpus entry make the file stale, naming the entry and the command?"""
    corpus_file = copied.root / lab.CORPUS / "mistakes.toml"
    text = corpus_file.read_text().replace("keepdims=True)", "keepdims=1)", 1)
    corpus_file.write_text(text)
    with pytest.raises(golden.Stale, match=r"stale: .*mistakes/.*make golden"):
        golden.read(copied)


def test_edited_source_is_stale(copied):
    """Does an edited source or config (its hidden tests) make the file stale?"""
    with open(copied.root / "course_config.py", "a") as handle:
        handle.write("\nc.Execute.timeout = 31\n")
    with pytest.raises(golden.Stale, match=r"source and config.*make golden"):
        golden.read(copied)


def test_other_nbgrader_version_is_stale(copied):
    """Is a file made with another nbgrader stale?"""
    path = golden.path(copied)
    data = json.loads(path.read_text())
    data["made_from"]["nbgrader"] = "0.0.1"
    path.write_text(json.dumps(data))
    with pytest.raises(golden.Stale, match=r"another nbgrader"):
        golden.read(copied)


@pytest.mark.slow
@pytest.mark.stock
@pytest.mark.parametrize("key", [*STOCK_LIVE, golden.SOURCE_KEY, golden.RELEASE_KEY])
def test_golden_file_is_what_stock_does(stock_graded, stock_golden, key):
    """Does stock nbgrader, run live, still give exactly what the golden file recorded?"""
    live, recorded = stock_graded[key], stock_golden[key]
    assert (live.points, live.max_points, live.messages) == (
        recorded.points,
        recorded.max_points,
        recorded.messages,
    ), f"stock nbgrader no longer gives what the golden file recorded for {key}: make golden"
