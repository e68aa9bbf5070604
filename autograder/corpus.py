"""Answer sets: small, named changes to the lab's answers, kept as TOML.

A corpus file (``tests/corpus/*.toml``) holds one table per answer set::

    [concat_axis0]
    what = "glues with numpy's default axis, the positions"
    loses = ["concat_heads", "multi_head"]
    says = "axis"
    concat_heads = '''
    def concat_heads(answers):
        return np.concatenate(answers)
    '''

Every key other than ``what``, ``loses`` and ``says`` is the ``grade_id`` of
an answer cell and holds that cell's new source; cells not named keep the
solution. ``loses`` lists the answers whose tests must lose points (empty for a
correct set) and ``says`` a phrase the failing messages must contain. The sets
are filled into the release notebook by ``grade_id``, so they never go stale
when the notebook's prose or tests change.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import notebook

RESERVED = ("what", "loses", "says")


@dataclass(frozen=True)
class AnswerSet:
    """One named set of answer cells and what grading it must show."""

    name: str
    what: str
    cells: dict
    loses: tuple = ()
    says: str = ""


def load_corpus(folder):
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


# Answers whose cells call other answers: a mistake in the callee may cost the
# caller's tests too, and nothing else.
CALLS = {
    "head": ("attention_weights",),
    "wrong_axis": ("head",),
    "multi_head": ("head", "concat_heads"),
}


def affected(answers):
    """The answers named and every answer that calls them, directly or not."""
    found = set(answers)
    while True:
        more = {caller for caller, callees in CALLS.items() if found & set(callees)} - found
        if not more:
            return found
        found |= more


def build(entries, release_nb, solution_nb):
    """``{name: notebook}``: the release with the solution's answers, each entry's cells on top."""
    solutions = notebook.answers(solution_nb)
    return {
        name: notebook.fill(release_nb, {**solutions, **entry.cells})
        for name, entry in entries.items()
    }


def lost_by_answer(result, answer_ids):
    """``{answer_id: points lost}`` from a grading result, for answers that lost any."""
    lost = {}
    for test_id, possible in result.max_points.items():
        missing = possible - result.points.get(test_id, 0)
        if missing > 0:
            answer = notebook.answer_of(test_id, answer_ids)
            lost[answer] = lost.get(answer, 0) + missing
    return lost


def message_shown(result, answer, answer_ids, says=""):
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


def table(entries, results, answer_ids, width=160):
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


def with_table(readme, text):
    """``readme`` with the text between the corpus-table markers replaced by ``text``."""
    before, rest = readme.split(README_BEGIN, 1)
    _, after = rest.split(README_END, 1)
    return f"{before}{README_BEGIN}\n{text}\n{README_END}{after}"


def table_in(readme):
    """The text between the corpus-table markers of ``readme``."""
    return readme.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip("\n")


def main(args):
    """Grade the corpus with stock nbgrader and print what the hidden tests catch."""
    from . import course, stock

    release_nb = notebook.read(course.ROOT / course.RELEASE)
    entries = load_corpus(course.ROOT / course.CORPUS)
    results = stock.autograde(
        build(entries, release_nb, notebook.read(course.ROOT / course.SOLUTION)), jobs=args.jobs
    )
    text = table(entries, results, list(notebook.answers(release_nb)))
    print(text)
    if args.readme:
        readme = course.ROOT / "README.md"
        readme.write_text(with_table(readme.read_text(), text))
        print(f"updated the table in {readme.name}")
    return 0
