"""Answer sets: small, named changes to an assignment's answers, kept as TOML.

A corpus file (``corpus/<assignment>/*.toml``, beside ``source/<assignment>/``)
holds one table per answer set::

    [mean_of_columns]
    what = "averages down the wrong axis"
    loses = ["mean"]
    says = "sums down the columns"
    never = ["divides by n - 1"]
    mean = '''
    def mean(values):
        return values.mean(axis=0)
    '''

Every key other than those in :data:`RESERVED` is the ``grade_id`` of an
answer cell and holds that cell's new source; cells not named keep the
solution. ``loses`` lists the answers whose tests must lose points (empty for a
correct set): only answers the set changes, since an answer that uses a broken
one is checked against what it should give with it. ``says`` is the cause the
feedback must name, ``never`` phrases naming other causes, which it must not
contain. Every mistake must fail a visible test (and so the self-check) before
submission, unless ``unseen_because`` says why no visible test can catch it
without giving the answer away; ``timeout`` (seconds per cell) marks
an answer that never returns, graded with that limit. The sets
are filled into the release notebook by ``grade_id``, so they never go stale
when the notebook's prose or tests change.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.pipeline.course import notebook

_log = logging.getLogger(__name__)

#: the keys of a corpus table that are not answer cells
RESERVED = ("what", "loses", "says", "never", "unseen_because", "timeout")
CORPUS = Path("corpus")  #: below the course, beside source/: one folder per assignment


@dataclass(frozen=True)
class AnswerSet:
    """One named set of answer cells and what grading it must show."""

    name: str
    what: str
    cells: dict
    loses: tuple = ()
    says: str = ""
    never: tuple = ()
    unseen_because: str = ""
    timeout: float | None = None

    @property
    def caught_visibly(self) -> bool:
        """Must a visible test fail (a mistake the visible tests are not excused from)?"""
        return bool(self.loses) and not self.unseen_because


def load_corpus(folder: Path) -> dict[str, AnswerSet]:
    """``{"file/name": AnswerSet}`` for every table of every ``*.toml`` in ``folder``."""
    entries = {}
    for path in sorted(Path(folder).glob("*.toml")):
        for name, table in tomllib.loads(path.read_text()).items():
            cells = {key: value.strip("\n") for key, value in table.items() if key not in RESERVED}
            entries[f"{path.stem}/{name}"] = AnswerSet(
                name=f"{path.stem}/{name}",
                what=table.get("what", ""),
                cells=cells,
                loses=tuple(table.get("loses", ())),
                says=table.get("says", ""),
                never=tuple(table.get("never", ())),
                unseen_because=table.get("unseen_because", ""),
                timeout=table.get("timeout"),
            )
    return entries


def build(entries: dict[str, AnswerSet], release_nb: Any, solution_nb: Any) -> dict[str, Any]:
    """``{name: notebook}``: the release with the solution's answers, each entry's cells on top."""
    solutions = notebook.answers(solution_nb)
    return {
        name: notebook.fill(release_nb, {**solutions, **entry.cells})
        for name, entry in entries.items()
    }


def lost_by_answer(result: Any, answer_ids: list[str]) -> dict[str | None, float]:
    """``{answer_id: points lost}`` from a grading result, for answers that lost any."""
    lost: dict[str | None, float] = {}
    for test_id, possible in result.max_points.items():
        missing = possible - result.points.get(test_id, 0)
        if missing > 0:
            answer = notebook.answer_of(test_id, answer_ids)
            lost[answer] = lost.get(answer, 0) + missing
    return lost


def message_shown(result: Any, answer: str, answer_ids: list[str], says: str = "") -> str:
    """The failure message a student sees for ``answer``: its first line.

    Prefers the first failing test of ``answer`` whose message contains
    ``says``; drops the ``AssertionError:`` prefix, which tells a student nothing.
    The lines after the first are this grader's own (a crash's operands and rule,
    :mod:`autograder.sandbox.crash_reasons`), which stock nbgrader has not: the
    first line is the one both show.
    """
    mine = [
        message
        for test_id, message in result.messages.items()
        if notebook.answer_of(test_id, answer_ids) == answer
    ]
    naming = [m for m in mine if says and says in m]
    shown = (naming or mine or [""])[0].strip().split("\n", 1)[0]
    return " ".join(shown.split()).removeprefix("AssertionError: ")


def table(
    entries: dict[str, AnswerSet], results: dict[str, Any], answer_ids: list[str], width: int = 160
) -> str:
    """A markdown table: each mistake, the points it lost, the message a student sees.

    An answer that never returns (an entry with a ``timeout``) is left out: the
    cell's time limit catches it, not a test's message (and stock nbgrader's
    words for it differ from this grader's).
    """
    lines = ["| mistake | answer | points lost | message shown |", "| --- | --- | --- | --- |"]
    for name, entry in entries.items():
        if not entry.loses or entry.timeout is not None:
            continue
        result = results[name]
        answer = entry.loses[0]
        message = message_shown(result, answer, answer_ids, entry.says)
        if len(message) > width:
            message = message[: width - 1] + "…"
        lost = sum(lost_by_answer(result, answer_ids).values())
        lines.append(f"| {_cell(entry.what)} | `{answer}` | {lost:g} | {_cell(message)} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """``text`` as one cell of a Markdown table: its pipes escaped, so they split no row."""
    return text.replace("|", "\\|")


README_BEGIN = "<!-- corpus-table:begin -->"
README_END = "<!-- corpus-table:end -->"


def with_table(readme: str, text: str) -> str:
    """``readme`` with the text between the corpus-table markers replaced by ``text``."""
    before, rest = readme.split(README_BEGIN, 1)
    _, after = rest.split(README_END, 1)
    return f"{before}{README_BEGIN}\n{text}\n{README_END}{after}"


def table_in(readme: str) -> str:
    """The text between the corpus-table markers of ``readme``."""
    return readme.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip("\n")
