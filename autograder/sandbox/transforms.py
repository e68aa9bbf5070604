"""IPython's work on the course's own cells before they run, done once in the zygote.

Before IPython runs a cell it rewrites its text (``%magic`` and ``!command``
lines, prompts pasted in, and so on: ``transform_cell``), tokenizing it with
Python's own tokenizer, and compiles the result once more to see whether it
awaits at top level (``should_run_async``). That is several milliseconds for a
notebook's cells, in every student's process, for text that is the same in
every submission: the lesson's read-only cells and the answers as released
(the release's text only: a solution's would sit in every student's process).

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

A student's own cell, which the zygote cannot know, is still tokenized only
where IPython's token transforms might change it (:class:`PlainPython`).

Then IPython parses the transformed text and compiles each top-level statement
on its own: :class:`KnownCode` has the zygote do that too for the same cells,
and hands out a tree or a code object only where nothing in the student's shell
could make it differ (its docstring says what).
"""

from __future__ import annotations
import __future__

import ast
import functools
import re
import warnings
from collections.abc import Iterable
from types import CodeType
from typing import Any

FUTURES = [getattr(__future__, name) for name in __future__.all_feature_names]

MAX_CELLS = 1_000  #: cells the zygote remembers
MAX_CELL_TEXT = 64 * 2**10  #: characters; a longer cell is transformed every time
#: the file name a learned cell is compiled under; each use renames it (:func:`renamed`)
LEARNED = "<learned-cell>"
#: the compiler flag IPython adds while it may await at top level (``run_ast_nodes``)
TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


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
        self.code = KnownCode(shell)

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
            self.code.learn(runs)
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
        self.code.install()
        return self


#: a line IPython's token transforms may rewrite from its first token: an escape
#: (``!ls``, ``%time``, ``?x``, ``,f a``, ``;f a``, ``/f a``) after the line's indentation
ESCAPE_AT_START = re.compile(r"[ \t\f]*[!%?,;/]")
#: anywhere in a cell: help syntax (``x?``), or an assignment from a magic or a command
#: (``a = %time f()``, ``a = !ls``)
HELP_OR_ASSIGNED = re.compile(r"\?|=\s*[%!]")


class PlainPython:
    """IPython's static transforms for ``manager`` (its ``transform_cell``), without
    tokenizing a cell none of whose tokens its token transforms would touch.

    After its line-based cleanup (blank lines, pasted prompts, a cell magic),
    IPython tokenizes every cell to find ``%`` and ``!`` escapes, ``x?`` and
    ``a = %magic``: about 0.16 ms for a student's own cell, though
    nearly every cell holds none. Each of those transforms looks for a token
    that :data:`ESCAPE_AT_START` or :data:`HELP_OR_ASSIGNED` would find in the
    text first (a token starting a line, a ``?``, an ``=`` then ``%`` or ``!``),
    so a cell where neither finds anything is left as its cleanup left it,
    which is what this returns. Anything else, and any manager whose transforms
    are not IPython's own (a student may add or replace one), is IPython's to
    transform. Install with :meth:`install`.
    """

    def __init__(self, manager: Any) -> None:
        from IPython.core import inputtransformer2 as it

        self.manager = manager
        self._transform = manager.transform_cell
        self.ipythons: tuple[tuple[Any, ...], ...] = (
            (it.leading_empty_lines, it.leading_indent, it.classic_prompt, it.ipython_prompt),
            (it.cell_magic,),
            (it.MagicAssign, it.SystemAssign, it.EscapedCommand, it.HelpEnd),
        )

    def _as_ipython_made_it(self) -> bool:
        """Are the manager's transforms IPython's own, the same objects in the same order?"""
        manager = self.manager
        try:
            lists = [
                tuple(manager.cleanup_transforms),
                tuple(manager.line_transforms),
                tuple(manager.token_transformers),
            ]
        except Exception:  # a student replaced one with something that is not a list
            return False
        return all(
            len(now) == len(theirs) and all(a is b for a, b in zip(now, theirs, strict=True))
            for now, theirs in zip(lists, self.ipythons, strict=True)
        )

    def transform_cell(self, cell: str) -> str:
        """What ``manager.transform_cell(cell)`` returns."""
        manager = self.manager
        if not self._as_ipython_made_it():
            return str(self._transform(cell))
        if not cell.endswith("\n"):
            cell += "\n"
        lines = cell.splitlines(keepends=True)
        for transform in manager.cleanup_transforms + manager.line_transforms:
            lines = transform(lines)
        text = "".join(lines)
        if HELP_OR_ASSIGNED.search(text) or any(ESCAPE_AT_START.match(line) for line in lines):
            return str(self._transform(cell))
        return text

    def install(self) -> PlainPython:
        """Have the manager transform through this object; itself."""
        self.manager.transform_cell = self.transform_cell
        return self


class KnownCode:
    """The parse trees and code objects of the course's cells, made once in the zygote.

    After its text transforms, IPython parses a cell (``compile.ast_parse``) and
    compiles each top-level statement on its own (``run_ast_nodes``): a few
    milliseconds a notebook, for text every submission shares. :meth:`learn`
    does both for a transformed cell; the shell's compiler, once installed
    (:meth:`install`), hands out the results when asked for exactly that:

    - a tree is handed out for the same text under the same compiler flags (a
      ``from __future__`` import a student ran changes them), and only while the
      shell can change no tree: no AST transformers, and not the
      ``last_expr_or_assign`` mode, which appends to a cell's statements;
    - a code object, for one of those trees' statements, in the mode and with
      the flags it was compiled in; it is renamed to the cell's name before it is
      handed out, the execution count in it included (:func:`renamed`);
    - a cell whose parsing or compiling warns is not learned, so the warning
      still reaches the student's output when its process compiles it.
    """

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.trees: dict[tuple[str, int], ast.Module] = {}  # (text, flags) -> its tree
        #: id of a learned statement -> the statement, and {(mode, flags): its code}
        self.codes: dict[int, tuple[ast.stmt, dict[tuple[str, int], CodeType]]] = {}

    def learn(self, runs: str) -> None:
        """Parse and compile ``runs`` (a course's cell, as IPython runs it) as
        ``run_cell`` would with the shell as it is now; nothing if it warns or fails."""
        compiler = self.shell.compile
        flags = compiler.flags
        compiled = flags | (TOP_LEVEL_AWAIT if self.shell.autoawait else 0)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                tree = compile(runs, LEARNED, "exec", flags | ast.PyCF_ONLY_AST, True)
                codes = {}
                for node in tree.body:  # as run_ast_nodes compiles them: one at a time, ...
                    made = {
                        "exec": compile(ast.Module([node], []), LEARNED, "exec", compiled, True)
                    }
                    if node is tree.body[-1] and isinstance(node, ast.Expr):  # ... the last shown
                        single = ast.Interactive([node])
                        made["single"] = compile(single, LEARNED, "single", compiled, True)
                    codes[id(node)] = (
                        node,
                        {(mode, compiled): code for mode, code in made.items()},
                    )
        except Exception:  # a warning, or a cell that does not compile: as it comes, each time
            return
        self.trees[runs, flags] = tree
        self.codes.update(codes)

    def tree(self, source: str, flags: int) -> ast.Module | None:
        """The learned tree of ``source`` under ``flags``, if the shell can change no tree."""
        shell = self.shell
        if shell.ast_transformers or shell.ast_node_interactivity == "last_expr_or_assign":
            return None
        return self.trees.get((source, flags))

    def code(self, source: Any, filename: str, mode: str, flags: int) -> CodeType | None:
        """The learned code of ``source`` (a one-statement Module or Interactive) as
        ``compile(source, filename, mode, flags, True)`` would make it; None if not learned."""
        if type(source) not in (ast.Module, ast.Interactive) or len(source.body) != 1:
            return None
        node = source.body[0]
        found = self.codes.get(id(node))
        if found is None or found[0] is not node:
            return None
        code = found[1].get((mode, flags))
        return None if code is None else renamed(code, filename)

    def install(self) -> None:
        """Have the shell's compiler ask this object first (:func:`compiler_with_known_code`)."""
        from IPython.core.compilerop import CachingCompiler

        compiler, reading = self.shell.compile, compiler_with_known_code()
        if type(compiler) is CachingCompiler:  # a subclass may compile otherwise: left alone
            compiler.__class__ = reading
        if type(compiler) is reading:
            setattr(compiler, "known", self)  # noqa: B010  (an attribute of its class)


@functools.cache
def compiler_with_known_code() -> type:
    """IPython's compiler class, reading a learned cell's tree and code (:class:`KnownCode`).

    Made on first use: IPython is imported in the zygote, not in every process
    that imports the sandbox.
    """
    from IPython.core.compilerop import CachingCompiler

    class CompilerWithKnownCode(CachingCompiler):
        known: KnownCode

        def ast_parse(self, source: str, filename: str = "<unknown>", symbol: str = "exec") -> Any:
            tree = self.known.tree(source, self.flags) if symbol == "exec" else None
            return tree if tree is not None else super().ast_parse(source, filename, symbol)

        def __call__(self, source: Any, filename: str, symbol: str, **kwargs: Any) -> CodeType:
            if not kwargs:  # as run_ast_nodes calls it (codeop.Compile.__call__, flags as-is)
                code = self.known.code(source, filename, symbol, self.flags)
                if code is not None:
                    for feature in FUTURES:  # what codeop.Compile does after compiling
                        if code.co_flags & feature.compiler_flag:
                            self.flags |= feature.compiler_flag
                    return code
            return super().__call__(source, filename, symbol, **kwargs)

    return CompilerWithKnownCode


def renamed(code: CodeType, filename: str) -> CodeType:
    """``code`` and the code inside it (its functions, classes, comprehensions), under
    ``filename``: what compiling the same tree under that name makes."""
    consts = tuple(renamed(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)
