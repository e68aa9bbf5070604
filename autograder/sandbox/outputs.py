"""Output limits shared by the student's process and the grader.

Every output kind a notebook produces (streams, displays, results, errors)
draws on one :class:`Budget` per cell and per notebook. The student's process
cuts its outputs to it before sending them; the grader checks them against it
again, so a flood costs the grader bounded time and memory whatever the other
side sends.
"""

from __future__ import annotations

import io
from typing import Any

# Output a notebook may send back, in the student's process and again in the grader.
MAX_CELL_OUTPUT = 2**20  #: characters of output kept per cell, all kinds together
MAX_CELL_OUTPUTS = 100  #: separate outputs kept per cell
MAX_NOTEBOOK_OUTPUT = 8 * 2**20  #: characters kept over the whole notebook
MAX_NOTEBOOK_OUTPUTS = 2000
MAX_ERROR_TEXT = 10_000  #: characters of one error message or traceback line
MAX_TRACEBACK_LINES = 50


class Budget:
    """How much output a notebook may still send: per cell and over the notebook.

    Every output kind draws on it (streams, displays, results, errors), so a
    flood of any kind is cut here, in the student's process, before it is sent.
    Sizes are in characters of the output's text (base64 for images).
    """

    cell_size, cell_count = MAX_CELL_OUTPUT, MAX_CELL_OUTPUTS
    notebook_size, notebook_count_limit = MAX_NOTEBOOK_OUTPUT, MAX_NOTEBOOK_OUTPUTS

    def __init__(self) -> None:
        self.notebook_used = self.notebook_count = 0
        self.start_cell()

    def start_cell(self) -> None:
        """A new cell (or call): its own allowance, and nothing cut yet."""
        self.size = self.count = 0
        self.cut_size = self.cut_count = 0

    def full(self) -> bool:
        """May this cell send no more outputs at all?"""
        return (
            self.count >= self.cell_count
            or self.notebook_count >= self.notebook_count_limit
            or self.room() == 0
        )

    def room(self) -> int:
        """Characters this cell may still send."""
        return max(0, min(self.cell_size - self.size, self.notebook_size - self.notebook_used))

    def take(self, size: int, new_output: bool) -> bool:
        """Spend ``size`` characters (and one output if ``new_output``); False if over."""
        over_count = new_output and (
            self.count >= self.cell_count or self.notebook_count >= self.notebook_count_limit
        )
        if over_count or size > self.room():
            self.cut_size += size
            self.cut_count += 1
            return False
        self.size += size
        self.notebook_used += size
        if new_output:
            self.count += 1
            self.notebook_count += 1
        return True

    def note(self) -> dict[str, Any] | None:
        """A stream output saying what was cut from this cell, or None."""
        if not self.cut_count:
            return None
        return {
            "output_type": "stream",
            "name": "stdout",
            "text": f"\n[the grader cut {self.cut_count} output(s), {self.cut_size:,} characters, "
            f"from this cell: a cell may show {MAX_CELL_OUTPUTS} outputs and "
            f"{MAX_CELL_OUTPUT // 2**20} MiB, a notebook {MAX_NOTEBOOK_OUTPUT // 2**20} MiB]\n",
        }


def shorten(text: Any, limit: int = MAX_ERROR_TEXT) -> str:
    text = str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit:,} more characters cut by the grader]"


def error_output(ename: Any, evalue: Any, traceback_lines: Any) -> dict[str, Any]:
    """A notebook error output with its message and traceback cut to size."""
    lines = [shorten(line) for line in traceback_lines]
    if len(lines) > MAX_TRACEBACK_LINES:
        lines = lines[: MAX_TRACEBACK_LINES // 2] + ["..."] + lines[-MAX_TRACEBACK_LINES // 2 :]
    return {
        "output_type": "error",
        "ename": shorten(ename, 200),
        "evalue": shorten(evalue),
        "traceback": lines,
    }


class OutputStream(io.TextIOBase):
    """A sys.stdout/sys.stderr stand-in that records notebook stream outputs.

    budget: the :class:`Budget` the text is paid from.
    """

    def __init__(self, name: str, outputs: list[dict[str, Any]], budget: Budget) -> None:
        self.name, self.outputs, self.budget = name, outputs, budget

    def writable(self) -> bool:
        return True

    def write(self, text: Any) -> int:
        text = str(text)
        last = self.outputs[-1] if self.outputs else None
        joins = bool(last and last["output_type"] == "stream" and last["name"] == self.name)
        kept = text[: self.budget.room()]
        if kept and self.budget.take(len(kept), new_output=not joins):
            if joins:
                assert last is not None
                last["text"].append(kept)  # joined by finish(): += on a str would be quadratic
            else:
                self.outputs.append({"output_type": "stream", "name": self.name, "text": [kept]})
        if len(kept) < len(text):
            self.budget.take(len(text) - len(kept), new_output=False)  # counted as cut
        return len(text)


def finish(outputs: list[Any], budget: Budget | None = None) -> list[Any]:
    """Join the text pieces of captured stream outputs, and say what was cut; ``outputs``."""
    for output in outputs:
        if output["output_type"] == "stream" and isinstance(output["text"], list):
            output["text"] = "".join(output["text"])
    note = budget.note() if budget else None
    if note:
        outputs.append(note)
    return outputs
