"""A notebook as the text nbformat writes, each distinct cell's JSON made once per process.

``nbformat.v4.writes`` deep-copies the whole notebook, then encodes it with
the standard library's pure-Python encoder (the C one cannot indent). A
class's executed notebooks share most of their cells as they are, outputs
included: the prose, the read-only code, and every test a student passes. So
each cell is keyed by its compact JSON, which the C encoder makes in a small
fraction of the time, and only a cell not seen before is copied, split into
lines and indented as nbformat would.

The text is the same, byte for byte: a cell's indented JSON, dumped on its own,
sits inside the notebook's at a fixed depth, and JSON strings never hold a raw
newline, so shifting every line of it right by that depth is exact.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from typing import Any

import nbformat
from nbformat.v4.nbjson import BytesEncoder
from nbformat.v4.rwbase import split_lines, strip_transient

CACHED_CELLS = 512  #: cells' texts remembered per process, at most
CACHED_CHARACTERS = 8 * 2**20  #: characters remembered per process (keys and texts), at most
CACHED_CELL_CHARACTERS = 256 * 2**10  #: a cell whose compact JSON is longer is never remembered


def _written(value: Any) -> str:
    """``value`` as JSON with nbformat's own settings (``nbformat.v4.nbjson.JSONWriter``)."""
    return json.dumps(
        value,
        cls=BytesEncoder,
        indent=1,
        sort_keys=True,
        separators=(",", ": "),
        ensure_ascii=False,
    )


def _shifted(text: str, depth: int) -> str:
    """Indented JSON ``text`` as it reads ``depth`` levels down (one space a level)."""
    return text.replace("\n", "\n" + " " * depth)


class NotebookText:
    """``nbformat.v4.writes`` with a memory of the cells it wrote; one per process."""

    def __init__(self) -> None:
        self._cells: OrderedDict[str, str] = OrderedDict()
        self._characters = 0  # of the keys and texts remembered

    def writes(self, nb: Any) -> str:
        """The text ``nbformat.v4.writes(nb)`` returns; ``nb`` is left as it is."""
        cells = nb.get("cells")
        if not isinstance(cells, list):
            return str(nbformat.v4.writes(nb))
        members = []
        for key in sorted(nb):
            if key == "cells":
                shown = ",\n".join("  " + self._cell(cell) for cell in cells)
                value = f"[\n{shown}\n ]" if cells else "[]"
            else:
                part = copy.deepcopy(nb[key])
                if key == "metadata":  # what strip_transient takes off the notebook's
                    for transient in ("orig_nbformat", "orig_nbformat_minor", "signature"):
                        part.pop(transient, None)
                value = _shifted(_written(part), 1)
            members.append(f" {json.dumps(key, ensure_ascii=False)}: {value}")
        return "{\n" + ",\n".join(members) + "\n}"

    def _cell(self, cell: Any) -> str:
        """One cell's JSON as it sits in the notebook's cell list (two levels down)."""
        try:
            key = json.dumps(cell, cls=BytesEncoder, sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError):
            key = ""
        if key in self._cells:
            self._cells.move_to_end(key)
            return self._cells[key]
        one = nbformat.from_dict({"cells": [copy.deepcopy(cell)], "metadata": {}})
        text = _shifted(_written(strip_transient(split_lines(one)).cells[0]), 2)
        if key and len(key) <= CACHED_CELL_CHARACTERS:
            self._cells[key] = text
            self._characters += len(key) + len(text)
            while len(self._cells) > CACHED_CELLS or self._characters > CACHED_CHARACTERS:
                gone, its_text = self._cells.popitem(last=False)
                self._characters -= len(gone) + len(its_text)
        return text
