"""Answer sets: small, named changes to an assignment's answers, kept as TOML.

A corpus file (``tests/corpus/<assignment>/*.toml``) holds one table per answer set::

    [mean_of_columns]
    what = "averages down the wrong axis"
    loses = ["mean", "variance"]
    says = "axis"
    mean = '''
    def mean(values):
        return values.mean(axis=0)
    '''

Every key other than ``what``, ``loses`` and ``says`` is the ``grade_id`` of
an answer cell and holds that cell's new source; cells not named keep the
solution. ``loses`` lists the answers whose tests must lose points (empty for a
correct set) and ``says`` a phrase the failing messages must contain. The sets
are filled into the release notebook by ``grade_id``, so they never go stale
when the notebook's prose or tests change.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..pipeline import execute, notebook
from ..pipeline.course import find_assignment

RESERVED = ("what", "loses", "says")
CORPUS = Path("tests") / "corpus"  # below the course: one folder per assignment


@dataclass(frozen=True)
class AnswerSet:
    """One named set of answer cells and what grading it must show."""

    name: str
    what: str
    cells: dict
    loses: tuple = ()
    says: str = ""


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
            )
    return entries


def calls(solution_nb: Any) -> dict[str, set[str]]:
    """``{answer: answers it uses}``, read from the solution's code.

    An answer uses another when its cell names something the other's cell
    defines (``variance`` calls ``mean``): a mistake in the one may cost the
    other's tests too, and nothing else.
    """
    answers = notebook.answers(solution_nb)
    defines = {name: answer for answer, src in answers.items() for name in execute.binds(src)}
    found: dict[str, set[str]] = {}
    for answer, source in answers.items():
        try:
            tree = ast.parse(notebook.strip_solution_markers(source))
        except SyntaxError:
            continue
        # the names it reads and never binds itself (a local or an argument is its own)
        nodes = list(ast.walk(tree))
        read = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        own = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        own |= {a.arg for n in nodes if isinstance(n, ast.arguments) for a in n.args + n.kwonlyargs}
        free = read - own
        found[answer] = {defines[n] for n in free if n in defines and defines[n] != answer}
    return found


def affected(answers: list[str] | tuple[str, ...], uses: dict[str, set[str]]) -> set[str]:
    """The answers named and every answer that uses them, directly or not."""
    found = set(answers)
    while True:
        more = {caller for caller, callees in uses.items() if found & callees} - found
        if not more:
            return found
        found |= more


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
    """The failure message a student sees for ``answer``, on one line.

    Prefers the first failing test of ``answer`` whose message contains
    ``says``; drops the ``AssertionError:`` prefix, which tells a student nothing.
    """
    mine = [
        " ".join(message.split()).removeprefix("AssertionError: ")
        for test_id, message in result.messages.items()
        if notebook.answer_of(test_id, answer_ids) == answer
    ]
    naming = [m for m in mine if says and says in m]
    return (naming or mine or [""])[0]


def table(
    entries: dict[str, AnswerSet], results: dict[str, Any], answer_ids: list[str], width: int = 160
) -> str:
    """A markdown table: each mistake, the points it lost, the message a student sees."""
    lines = ["| mistake | answer | points lost | message shown |", "| --- | --- | --- | --- |"]
    for name, entry in entries.items():
        if not entry.loses:
            continue
        result = results[name]
        answer = entry.loses[0]
        message = message_shown(result, answer, answer_ids, entry.says)
        if len(message) > width:
            message = message[: width - 1] + "…"
        message = message.replace("|", "\\|")
        lost = sum(lost_by_answer(result, answer_ids).values())
        lines.append(f"| {entry.what} | `{answer}` | {lost:g} | {message} |")
    return "\n".join(lines)


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


def main(
    *, assignment: str | None = None, course: Path | str | None = None, jobs: int = 2,
    readme: bool = False,
) -> int:  # fmt: skip
    """Grade the corpus with stock nbgrader and print what the hidden tests catch."""
    from . import stock  # stock nbgrader: only needed to grade the corpus

    chosen = find_assignment(course, assignment)
    (name,) = chosen.notebooks  # the corpus fills one notebook's answers
    release_nb = notebook.read(chosen.release(name))
    entries = load_corpus(chosen.root / CORPUS / chosen.id)
    built = build(entries, release_nb, notebook.read(chosen.solution(name)))
    results = stock.autograde(built, jobs=jobs, assignment=chosen)
    text = table(entries, results, list(notebook.answers(release_nb)))
    print(text)
    if readme:
        path = chosen.root / "README.md"
        path.write_text(with_table(path.read_text(), text))
        print(f"updated the table in {path.name}")
    return 0
