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
