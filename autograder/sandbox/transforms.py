"""IPython's text transforms of the course's own cells, done once in the zygote.

Before IPython runs a cell it rewrites its text (``%magic`` and ``!command``
lines, prompts pasted in, and so on: ``transform_cell``), tokenizing it with
Python's own tokenizer, and compiles the result once more to see whether it
awaits at top level (``should_run_async``). That is several milliseconds for a
notebook's cells, in every student's process, for text that is the same in
every submission: the lesson's read-only cells and the answers as released.

The grader gives the zygote those cells' text (:meth:`KnownCells.learn`); the
zygote transforms each once and every student's process, forked from it, reads
the result instead of transforming that text again:

- Only a cell whose text IPython transforms statically is remembered (one of
  more than one line): a one-line cell is also transformed by the state of the
  student's namespace (an automagic), so it is transformed each time.
- A remembered result is used only while the shell transforms as it did when
  it was learned: the same transformers in the same order and the same
  ``autoawait``. A student's cell that adds a transformer, or turns autoawait
  off, gets IPython's own transforms from then on.
- Only the grader's text is learned: nothing a student's process does reaches
  the zygote, and a student whose text is not the course's is transformed by
  IPython as before. What a cell becomes is the same either way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MAX_CELLS = 1_000  #: cells the zygote remembers
MAX_CELL_TEXT = 64 * 2**10  #: characters; a longer cell is transformed every time


class KnownCells:
    """IPython's ``transform_cell`` and ``should_run_async`` for ``shell``, remembering the
    results for the cells :meth:`learn` was given. Install with :meth:`install`."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._transform = shell.transform_cell
        self._runs_async = shell.should_run_async
        self.transformed: dict[str, str] = {}  # a cell's text -> what IPython runs
        self.awaits: dict[str, bool] = {}  # what IPython runs -> whether it runs as a coroutine
        self.learned_with = self.how_it_transforms()

    def how_it_transforms(self) -> tuple[Any, ...]:
        """What the shell's transforms depend on besides the text: its transformers (by
        identity, in order) and whether it may await at top level."""
        shell = self.shell
        manager = shell.input_transformer_manager
        return (
            tuple(map(id, manager.cleanup_transforms)),
            tuple(map(id, manager.line_transforms)),
            tuple(map(id, manager.token_transformers)),
            tuple(map(id, shell.input_transformers_post)),
            bool(shell.autoawait),
            id(shell.loop_runner),
        )

    def learn(self, cells: Iterable[str]) -> int:
        """Transform each of ``cells`` (trusted text: the course's), keep what may be reused;
        how many cells are remembered now."""
        if self.how_it_transforms() != self.learned_with:
            return len(self.transformed)
        for text in cells:
            if len(self.transformed) >= MAX_CELLS:
                break
            if not isinstance(text, str) or len(text) > MAX_CELL_TEXT:
                continue
            try:
                static = self.shell.input_transformer_manager.transform_cell(text)
                if len(static.splitlines()) < 2:
                    continue  # its transform may depend on the namespace (see the module)
                runs = self._transform(text)
                awaits = self._runs_async(text, transformed_cell=runs, preprocessing_exc_tuple=None)
            except Exception:  # a cell IPython cannot transform: it says so when it runs
                continue
            self.transformed[text] = runs
            self.awaits[runs] = bool(awaits)
        return len(self.transformed)

    def transform_cell(self, raw_cell: str) -> str:
        """IPython's ``transform_cell``, read from what was learned where it may be."""
        known = self.transformed.get(raw_cell)
        if known is not None and self.how_it_transforms() == self.learned_with:
            return known
        return str(self._transform(raw_cell))

    def should_run_async(
        self,
        raw_cell: str,
        *,
        transformed_cell: str | None = None,
        preprocessing_exc_tuple: Any = None,
    ) -> bool:
        """IPython's ``should_run_async``, read from what was learned where it may be."""
        if preprocessing_exc_tuple is None and transformed_cell is not None:
            known = self.awaits.get(transformed_cell)
            if known is not None and self.how_it_transforms() == self.learned_with:
                return known
        return bool(
            self._runs_async(
                raw_cell,
                transformed_cell=transformed_cell,
                preprocessing_exc_tuple=preprocessing_exc_tuple,
            )
        )

    def install(self) -> KnownCells:
        """Have the shell transform through this object; itself."""
        self.shell.transform_cell = self.transform_cell
        self.shell.should_run_async = self.should_run_async
        return self
