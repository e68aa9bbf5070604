"""Stock nbgrader's results, recorded once as a golden file the tests compare with.

Stock ``nbgrader autograde`` takes about four seconds a notebook, so grading the
whole answer corpus with it on every test run would cost minutes. Its results
are deterministic for given notebooks, source folder, course configuration,
nbgrader and numpy, so they are graded once and kept in
``tests/golden/<assignment>/stock.json``. Regenerate with::

    make golden          # python -m tests.golden: about 3 minutes on 2 cores

which also rewrites the table of caught mistakes (docs/corpus.md) from the same results.
What is recorded: every corpus entry, the source and the untouched release, and
the ``runaway_glue`` hostile case (a ``concat_heads`` that never returns) graded
with a cell limit of ``RUNAWAY_TIMEOUT`` seconds in a copy of the course. The
file's layout::

    {"made_from": {"nbgrader": "0.9.6", "numpy": "...", "source and config": "<sha256>",
                   "runaway timeout": 10},
     "results": {"<entry>": {"notebook": "<sha256 of the notebook graded>",
                             "points": {...}, "max_points": {...}, "messages": {...}}}}

:func:`read` refuses a file made from other versions or sources, or whose
notebooks differ from the ones built now (:class:`Stale`: "regenerate").
"""

from __future__ import annotations

import hashlib
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat

from autograder.pipeline.course import notebook
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import sources_hash
from autograder.tools import corpus, stock
from autograder.tools.nbgrader_cli import scratch_course

SOURCE_KEY, RELEASE_KEY = "~source", "~release"  # the source and the untouched release
RUNAWAY_KEY = "~runaway_glue"  # tests/hostile.py's runaway_glue, graded with RUNAWAY_TIMEOUT
RUNAWAY_TIMEOUT = 10  # seconds per cell: honest cells take under 0.6 s, so a 16x margin
REFRESH = "make golden"
FILE = Path("tests") / "golden"  # below the course: <assignment>/stock.json


class Stale(Exception):
    """The golden file was made from other notebooks, sources or versions than these."""


def path(assignment: Assignment) -> Path:
    """Where the assignment's golden file lives."""
    return assignment.root / FILE / assignment.id / "stock.json"


def made_from(assignment: Assignment) -> dict[str, Any]:
    """What stock's results depend on besides the notebooks graded."""
    import nbgrader
    import numpy

    return {
        "nbgrader": nbgrader.__version__,
        "numpy": numpy.__version__,
        "source and config": sources_hash(assignment),
        "runaway timeout": RUNAWAY_TIMEOUT,
    }


def digest(nb: Any) -> str:
    """The sha256 of a notebook as it is written to disk."""
    return hashlib.sha256(nbformat.writes(nb).encode()).hexdigest()


def submissions(assignment: Assignment) -> dict[str, Any]:
    """``{key: notebook}``: everything the golden file records, built from the committed files."""
    from . import hostile

    (name,) = assignment.notebooks
    release_nb = notebook.read(assignment.release(name))
    solution_nb = notebook.read(assignment.solution(name))
    entries = corpus.load_corpus(assignment.root / corpus.CORPUS / assignment.id)
    built = corpus.build(entries, release_nb, solution_nb)
    built[SOURCE_KEY] = notebook.read(assignment.source(name))
    built[RELEASE_KEY] = release_nb
    runaway = hostile.CASES["runaway_glue"].build(release_nb, solution_nb, {})
    built[RUNAWAY_KEY] = nbformat.reads(runaway, as_version=4)
    return built


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
        or recorded[key]["notebook"] != digest(built[key])
    )
    if differ:
        listed = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        raise Stale(f"stale: {shown} recorded other notebooks for {listed}; run `{REFRESH}`")
    return {
        key: stock.StockResult(entry["points"], entry["max_points"], entry["messages"])
        for key, entry in recorded.items()
    }


def _grade_runaway(assignment: Assignment, nb: Any, scratch: Path) -> stock.StockResult:
    """Stock's result for the runaway notebook, with a cell limit of RUNAWAY_TIMEOUT seconds."""
    course_dir = scratch_course(assignment.root, scratch, release=True)
    with open(course_dir / "course_config.py", "a") as handle:
        handle.write(f"\nc.Execute.timeout = {RUNAWAY_TIMEOUT}\n")
    return stock.autograde({"runaway": nb}, 1, find_assignment(course_dir, assignment.id))[
        "runaway"
    ]


def _said(key: str, started: int, total: int) -> None:
    print(f"stock nbgrader: {started} of {total}, {key}", flush=True)


def write(assignment: Assignment, jobs: int = 2) -> dict[str, stock.StockResult]:
    """Grade everything with stock nbgrader and record it; ``{key: StockResult}``."""
    import tempfile

    built = submissions(assignment)
    runaway = built.pop(RUNAWAY_KEY)
    with tempfile.TemporaryDirectory(prefix="golden-") as scratch:
        # The runaway spends most of its time waiting on its time limit: beside the rest.
        with ThreadPoolExecutor(1) as pool:
            looping = pool.submit(_grade_runaway, assignment, runaway, Path(scratch) / "c")
            results = stock.autograde(built, jobs=jobs, assignment=assignment, progress=_said)
            results[RUNAWAY_KEY] = looping.result()
    built[RUNAWAY_KEY] = runaway
    data = {
        "made_from": made_from(assignment),
        "results": {
            key: {
                "notebook": digest(built[key]),
                "points": result.points,
                "max_points": result.max_points,
                "messages": result.messages,
            }
            for key, result in sorted(results.items())
        },
    }
    target = path(assignment)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return results


def main() -> int:
    """Regenerate the golden file and the table of caught mistakes in docs/corpus.md."""
    assignment = find_assignment()
    results = write(assignment)
    (name,) = assignment.notebooks
    entries = corpus.load_corpus(assignment.root / corpus.CORPUS / assignment.id)
    answer_ids = list(notebook.answers(notebook.read(assignment.release(name))))
    page = assignment.root / corpus.TABLE_PAGE
    page.write_text(corpus.with_table(page.read_text(), corpus.table(entries, results, answer_ids)))
    print(f"wrote {path(assignment).relative_to(assignment.root)} and {corpus.TABLE_PAGE}'s table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
