"""Stock nbgrader's results on the answer corpus, recorded once as a golden file.

Stock ``nbgrader autograde`` takes about four seconds a notebook, so grading
the whole corpus with it on every test run would cost minutes. Its results are
deterministic for given notebooks, source folder, course configuration,
nbgrader and numpy, so they are graded once and kept beside the corpus, in
``corpus/<assignment>/stock.json``. ``python -m autograder corpus`` (``make
golden``) grades and records them; what is recorded: every corpus entry (one
with a ``timeout`` graded with that cell limit, in a copy of the course), the
source and the untouched release. The file's layout::

    {"made_from": {"nbgrader": "0.9.6", "numpy": "...", "source and config": "<sha256>"},
     "results": {"<entry>": {"notebook": "<sha256 of the notebook graded>",
                             "timeout": 10,   # only for an entry graded with one
                             "points": {...}, "max_points": {...}, "messages": {...}}}}

:func:`read` refuses a file made from other versions or sources, or whose
notebooks differ from the ones built now (:class:`Stale`: "regenerate").
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import sources_hash
from autograder.pipeline.files import write_atomic
from autograder.tools import corpus, stock
from autograder.tools.nbgrader_cli import scratch_course

_log = logging.getLogger(__name__)

SOURCE_KEY, RELEASE_KEY = "~source", "~release"  #: the source and the untouched release
REFRESH = "make golden"  #: what a stale file tells the reader to run
FILE_NAME = "stock.json"  #: in the corpus folder of the assignment


class Stale(Exception):
    """The golden file was made from other notebooks, sources or versions than these."""


@dataclass(frozen=True)
class Recorded:
    """One notebook the golden file records, and the cell limit it is graded with (None:
    the course's)."""

    notebook: Any
    timeout: float | None = None


def path(assignment: Assignment) -> Path:
    """Where the assignment's golden file lives: beside its corpus."""
    return assignment.root / corpus.CORPUS / assignment.id / FILE_NAME


def made_from(assignment: Assignment) -> dict[str, Any]:
    """What stock's results depend on besides the notebooks graded."""
    import nbgrader
    import numpy

    return {
        "nbgrader": nbgrader.__version__,
        "numpy": numpy.__version__,
        "source and config": sources_hash(assignment),
    }


def digest(nb: Any) -> str:
    """The sha256 of a notebook's JSON, keys sorted, without whitespace.

    Not the text written to disk (``nbformat.writes`` indents it, and
    indenting takes Python's JSON encoder instead of its C one: five times
    the time, for the same content).
    """
    text = json.dumps(nb, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def submissions(assignment: Assignment) -> dict[str, Recorded]:
    """``{key: Recorded}``: everything the golden file records, built from the committed files."""
    (name,) = assignment.notebooks  # the corpus fills one notebook's answers
    release_nb = notebook.read(assignment.release(name))
    solution_nb = notebook.read(assignment.solution(name))
    entries = corpus.load_corpus(assignment.root / corpus.CORPUS / assignment.id)
    built = corpus.build(entries, release_nb, solution_nb)
    found = {key: Recorded(nb, entries[key].timeout) for key, nb in built.items()}
    found[SOURCE_KEY] = Recorded(notebook.read(assignment.source(name)))
    found[RELEASE_KEY] = Recorded(release_nb)
    return found


def read(assignment: Assignment) -> dict[str, stock.StockResult]:
    """``{key: StockResult}`` from the golden file; :class:`Stale` if it is out of date."""
    target = path(assignment)
    shown = target.relative_to(assignment.root)
    if not target.is_file():
        raise Stale(f"stale: no golden file at {shown}; make it with `{REFRESH}`")
    data = json.loads(target.read_text())
    facts = made_from(assignment)
    changed = sorted(name for name, value in facts.items() if data["made_from"].get(name) != value)
    if changed:
        raise Stale(
            f"stale: {shown} was made with another {', '.join(changed)}; "
            f"regenerate it with `{REFRESH}`"
        )
    built = submissions(assignment)
    recorded = data["results"]
    differ = sorted(
        key
        for key in set(built) | set(recorded)
        if key not in recorded
        or key not in built
        or recorded[key]["notebook"] != digest(built[key].notebook)
        or recorded[key].get("timeout") != built[key].timeout
    )
    if differ:
        listed = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        raise Stale(f"stale: {shown} recorded other notebooks for {listed}; run `{REFRESH}`")
    return {
        key: stock.StockResult(entry["points"], entry["max_points"], entry["messages"])
        for key, entry in recorded.items()
    }


def _with_timeout(
    assignment: Assignment, notebooks: dict[str, Any], seconds: float, scratch: Path
) -> dict[str, stock.StockResult]:
    """Stock's results for ``notebooks`` in a copy of the course whose cell limit is ``seconds``."""
    course_dir = scratch_course(assignment.root, scratch, release=True)
    with open(course_dir / "course_config.py", "a") as handle:
        handle.write(f"\nc.Execute.timeout = {seconds:g}\n")
    return stock.autograde(notebooks, 1, find_assignment(course_dir, assignment.id))


def write(
    assignment: Assignment,
    jobs: int = 2,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, stock.StockResult]:
    """Grade everything with stock nbgrader and record it; ``{key: StockResult}``.

    progress: called as each notebook starts (its key, its number, how many).
    """
    built = submissions(assignment)
    timed: dict[float, dict[str, Any]] = {}
    for key, entry in built.items():
        if entry.timeout is not None:
            timed.setdefault(entry.timeout, {})[key] = entry.notebook
    plain = {key: entry.notebook for key, entry in built.items() if entry.timeout is None}
    with tempfile.TemporaryDirectory(prefix="golden-") as scratch:
        # An entry with a limit spends most of its time waiting on it: graded beside the rest.
        with ThreadPoolExecutor(1) as pool:
            waiting = [
                pool.submit(_with_timeout, assignment, nbs, seconds, Path(scratch) / f"c{i}")
                for i, (seconds, nbs) in enumerate(sorted(timed.items()))
            ]
            results = stock.autograde(plain, jobs=jobs, assignment=assignment, progress=progress)
            for future in waiting:
                results.update(future.result())
    data = {
        "made_from": made_from(assignment),
        "results": {
            key: {
                "notebook": digest(built[key].notebook),
                **({"timeout": built[key].timeout} if built[key].timeout is not None else {}),
                "points": result.points,
                "max_points": result.max_points,
                "messages": result.messages,
            }
            for key, result in sorted(results.items())
        },
    }
    write_atomic(
        path(assignment), json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    )
    return results


def _said(key: str, started: int, total: int) -> None:
    _log.info(f"stock nbgrader: {started} of {total}, {key}")


def main(
    *,
    assignment: str | None = None,
    course: Path | str | None = None,
    jobs: int = 2,
    table: Path | str | None = None,
) -> int:
    """Grade the corpus with stock nbgrader: record the golden file, print what is caught.

    table: a Markdown page whose corpus table (between the markers
    ``<!-- corpus-table:begin -->`` and ``<!-- corpus-table:end -->``) is
    rewritten from the same results.
    """
    chosen = find_assignment(course, assignment)
    results = write(chosen, jobs, _said)
    (name,) = chosen.notebooks
    entries = corpus.load_corpus(chosen.root / corpus.CORPUS / chosen.id)
    answer_ids = list(notebook.answers(notebook.read(chosen.release(name))))
    text = corpus.table(entries, results, answer_ids)
    _log.info(text)
    _log.info(f"wrote {path(chosen)}")
    if table is not None:
        page = Path(table)
        page.write_text(corpus.with_table(page.read_text(), text))
        _log.info(f"updated the table in {page}")
    return 0
