"""Does a cell the zygote learned run exactly as IPython would have run it, and only then?

Its text transforms (:class:`~autograder.sandbox.transforms.KnownCells`), then its
parse tree and code (:class:`~autograder.sandbox.transforms.KnownCode`).

In this process, on the shell a student's process runs cells in
(:func:`autograder.sandbox.student.make_shell`): the zygote's part is played by
:meth:`~autograder.sandbox.transforms.KnownCells.learn` here. That a real
zygote hands what it learned to its students, and that one student cannot
change what the next one reads, is in the last test, on a real sandbox.
"""

import sys
import warnings

import pytest

from autograder.sandbox import Limits, Sandbox, student, transforms

MAGIC_CELL = "x = 2\n%time y = x * 3\n!true\nprint(y)\n"
AWAIT_CELL = "import asyncio\nawait asyncio.sleep(0)\nz = 7\n"
PLAIN_CELL = "def f(a):\n    return a + 1\nprint(f(1))\n"


@pytest.fixture
def shell():
    """A fresh student shell with its transforms learned through KnownCells; undone after.

    IPython's shell makes its namespace this process's ``__main__`` (again on each
    ``reset``): put back after, so pytest's later tests find their own.
    """
    main = sys.modules["__main__"]
    with warnings.catch_warnings():  # IPython 9 asks for "nocolor"; 8 knows only "NoColor"
        warnings.simplefilter("ignore", DeprecationWarning)
        made = student.make_shell()
    plain = made.transform_cell, made.should_run_async
    known = transforms.KnownCells(made)
    known.install()
    yield made, known, plain
    made.transform_cell, made.should_run_async = plain
    made.compile.__class__ = type(made.compile).__mro__[1]  # IPython's own compiler again
    sys.modules["__main__"] = main
    made.input_transformers_post.clear()
    made.autoawait = True


def test_a_learned_cell_transforms_as_ipython_does(shell):
    made, known, (ipython_transform, ipython_awaits) = shell
    assert known.learn([MAGIC_CELL, AWAIT_CELL, PLAIN_CELL]) == 3
    for cell in (MAGIC_CELL, AWAIT_CELL, PLAIN_CELL):
        expected = ipython_transform(cell)
        assert made.transform_cell(cell) == expected
        assert made.should_run_async(
            cell, transformed_cell=expected, preprocessing_exc_tuple=None
        ) == ipython_awaits(cell, transformed_cell=expected, preprocessing_exc_tuple=None)
    assert "get_ipython().run_line_magic('time'" in made.transform_cell(MAGIC_CELL)
    assert made.should_run_async(AWAIT_CELL, transformed_cell=made.transform_cell(AWAIT_CELL)), (
        "a cell that awaits at top level runs as a coroutine"
    )


def test_a_learned_cell_is_read_not_transformed_again(shell, monkeypatch):
    made, known, _ = shell
    known.learn([PLAIN_CELL])

    def refuse(*args, **kwargs):
        raise AssertionError("transformed again")

    monkeypatch.setattr(known, "_transform", refuse)
    monkeypatch.setattr(known, "_runs_async", refuse)
    runs = made.transform_cell(PLAIN_CELL)
    assert made.should_run_async(PLAIN_CELL, transformed_cell=runs) is False
    with pytest.raises(AssertionError, match="transformed again"):
        made.transform_cell(PLAIN_CELL + "# another cell\n")  # not learned: IPython's


def test_a_one_line_cell_is_never_learned(shell):
    """IPython transforms a one-line cell by the namespace too (``ls`` is ``%ls`` only
    while no variable ``ls`` exists), so it is transformed every time."""
    made, known, (ipython_transform, _) = shell
    assert known.learn(["ls", "x = 1", "%time 1"]) == 0
    assert made.transform_cell("ls") == ipython_transform("ls")
    made.user_ns["ls"] = [1, 2]
    assert made.transform_cell("ls").strip() == "ls"


def test_what_a_student_changes_in_the_transforms_is_obeyed(shell):
    """A transformer added, or autoawait turned off, after learning: IPython's own results."""
    made, known, (ipython_transform, _) = shell
    known.learn([PLAIN_CELL, AWAIT_CELL])
    made.input_transformers_post.append(lambda lines: [*lines, "added = True\n"])
    assert made.transform_cell(PLAIN_CELL).endswith("added = True\n")
    assert made.transform_cell(PLAIN_CELL) == ipython_transform(PLAIN_CELL)
    made.input_transformers_post.clear()
    made.autoawait = False
    runs = made.transform_cell(AWAIT_CELL)
    assert made.should_run_async(AWAIT_CELL, transformed_cell=runs) is False
    made.autoawait = True
    assert made.should_run_async(AWAIT_CELL, transformed_cell=runs) is True


def test_learning_is_bounded(shell, monkeypatch):
    made, known, _ = shell
    too_long = "x = 1\n" * (transforms.MAX_CELL_TEXT // 6 + 1)
    assert known.learn([too_long, None, 3, "x = (\n"]) == 0  # too long, not text, broken
    monkeypatch.setattr(transforms, "MAX_CELLS", 2)
    assert known.learn([f"a = {n}\nb = {n}\n" for n in range(5)]) == 2


@pytest.mark.slow
def test_students_read_what_the_zygote_learned_and_cannot_change_it_for_others():
    """Cells sent with learn_cells are read in a student's process; a student who rewrites
    what it read changes only its own process: the next student runs the course's cell."""
    sandbox = Sandbox()
    try:
        sandbox.learn_cells([PLAIN_CELL, "y = 1", MAGIC_CELL])

        def run(process, source):
            reply = process.request({"op": "run", "source": source}, 30)
            return "".join(o.get("text", "") for o in reply["outputs"] if "text" in o)

        first = sandbox.spawn({}, Limits())
        try:
            known = "k = get_ipython().transform_cell.__self__\nprint(sorted(k.transformed))\n"
            assert run(first, known).strip() == repr(sorted([PLAIN_CELL, MAGIC_CELL]))
            plain = "print(type(get_ipython().input_transformer_manager.transform_cell.__self__))"
            assert run(first, plain).strip().endswith("PlainPython'>")
            compiler = "c = get_ipython().compile\nprint(type(c).__name__, len(c.known.trees))\n"
            assert run(first, compiler).split() == ["CompilerWithKnownCode", "2"]
            probe = "k = get_ipython().compile.known\nlearned, hits = k.tree, []\n"
            probe += "k.tree = lambda text, flags: hits.append(learned(text, flags)) or hits[-1]\n"
            run(first, probe)
            assert run(first, PLAIN_CELL).strip() == "2"
            assert run(first, "print(sum(h is not None for h in hits))\n").strip() == "1", (
                "the zygote's tree is read under the student's own compiler flags"
            )
            assert run(first, PLAIN_CELL).strip() == "2"
            poison = "k = get_ipython().transform_cell.__self__\n"
            poison += f"k.transformed[{PLAIN_CELL!r}] = 'print(666)\\n'\n"
            run(first, poison)
            assert run(first, PLAIN_CELL).strip() == "666"  # its own process only
        finally:
            first.close()
        second = sandbox.spawn({}, Limits())
        try:
            assert run(second, PLAIN_CELL).strip() == "2"
        finally:
            second.close()
    finally:
        sandbox.close()


# ------------------------------------------------- parse trees and code objects

TRACEBACK_CELL = "def g(a):\n    return 1 / a\n\nvalue = g(2)\ng(0)\n"
SHOWN_CELL = "import math\ndef h(n):\n    return [math.sqrt(i) for i in range(n)]\nh(3)\n"


def _ran(made, cell):
    """What running ``cell`` shows, with the parts that name the process left out."""
    reply = student.run_cell(made, cell)
    return [
        {k: v for k, v in output.items() if k != "execution_count"} for output in reply["outputs"]
    ]


def test_a_learned_cell_runs_as_ipython_compiles_it(shell, monkeypatch):
    """Outputs, a traceback's cell name and lines, a function's file name: all as if the
    cell had been compiled in the student's process, without compiling it there."""
    made, known, _ = shell
    expected = [_ran(made, TRACEBACK_CELL), _ran(made, SHOWN_CELL)]  # nothing learned yet
    made.reset(new_session=True)
    assert known.learn([TRACEBACK_CELL, SHOWN_CELL]) == 2
    assert type(made.compile).__name__ == "CompilerWithKnownCode"

    def refuse(*args, **kwargs):
        raise AssertionError("compiled again")

    with monkeypatch.context() as patch:
        patch.setattr(transforms, "compile", refuse, raising=False)  # the module's builtin
        patch.setattr(type(made.compile).__mro__[1], "ast_parse", refuse)
        patch.setattr(type(made.compile).__mro__[1], "__call__", refuse)
        got = [_ran(made, TRACEBACK_CELL), _ran(made, SHOWN_CELL)]
    assert got == expected
    assert "Cell In[1], line 2, in g" in "".join(got[0][0]["traceback"])
    assert got[1][0]["data"]["text/plain"] == "[0.0, 1.0, 1.4142135623730951]"
    name = made.user_ns["h"].__code__.co_filename
    assert name.startswith("<ipython-input-2-") and made.compile._filename_map[name] == 2
    inner = [c for c in made.user_ns["h"].__code__.co_consts if hasattr(c, "co_filename")]
    assert inner and all(c.co_filename == name for c in inner), "nested code renamed too"


def test_what_could_change_a_learned_tree_is_compiled_as_it_comes(shell):
    """An AST transformer, the mode that appends to a cell's statements, or a
    ``__future__`` import a student ran: the cell is parsed and compiled afresh, and
    what was learned is left as it was."""
    made, known, _ = shell
    cell = "a = 1\nb = a + 1\n"
    known.learn([cell])
    tree = known.code.trees[cell, made.compile.flags]
    statements = list(tree.body)
    made.ast_node_interactivity = "last_expr_or_assign"
    try:
        assert _ran(made, cell)[0]["data"]["text/plain"] == "2"  # b shown, as IPython does
    finally:
        made.ast_node_interactivity = "last_expr"
    assert tree.body == statements, "the learned tree was not appended to"

    class Renamer:  # an AST transformer that renames b
        def visit(self, node):
            import ast

            for found in ast.walk(node):
                if isinstance(found, ast.Name) and found.id == "b":
                    found.id = "c"
            return node

    made.ast_transformers.append(Renamer())
    try:
        _ran(made, cell)
        assert made.user_ns["c"] == 2
    finally:
        made.ast_transformers.clear()
    assert all(n.id != "c" for n in __import__("ast").walk(tree) if hasattr(n, "id"))
    _ran(made, "from __future__ import annotations\n")
    assert known.code.tree(cell, made.compile.flags) is None  # other flags: not this tree


def test_a_learned_future_import_holds_for_later_cells(shell):
    """A learned cell with a ``__future__`` import turns it on, as compiling it would."""
    made, known, _ = shell
    cell = "from __future__ import annotations\ndef f(x: undefined_name) -> int:\n    return 1\n"
    known.learn([cell])
    assert known.code.codes, "learned"
    _ran(made, cell)
    _ran(made, "def k(y: also_undefined):\n    return y\n")
    assert made.user_ns["k"].__annotations__ == {"y": "also_undefined"}


def test_a_cell_that_warns_when_compiled_is_not_learned(shell):
    """Its warning belongs in the student's output, each time it is compiled there."""
    made, known, _ = shell
    cell = "x = 1\nassert (x, 'a tuple is always true')\n"
    assert known.learn([cell]) == 1  # its text transforms are learned ...
    assert not known.code.trees  # ... its compiling is not
    with pytest.warns(SyntaxWarning, match="always true"):  # pytest takes what is shown
        _ran(made, cell)


#: cells whose text IPython's token transforms rewrite, or nearly do: each must come out
#: of PlainPython exactly as out of IPython
TRICKY_CELLS = [
    PLAIN_CELL,
    MAGIC_CELL,
    AWAIT_CELL,
    "x = 1",
    "\n\n\nx = 1/0\n",  # leading blank lines go (tracebacks count from the first kept)
    "  # an indented comment first\ndef f():\n  return 1\n",  # IPython dedents every line
    ">>> x = 1\n... y = 2\n",
    "In [1]: x = 1\n   ...: y = 2\n",
    "x = 1\n...\n",  # a second line IPython takes for a pasted prompt
    "%%time\nx = sum(range(10))\n",
    "files = !ls\n",
    "t = %time sum(range(3))\n",
    "x = \\\n  %time 1\n",  # a magic after a continued line
    "y = \\\n!ls\n",
    "len?\n",
    "len??\n",
    "if True:\n    !true\n",
    ",print a b\n",
    ";print a b\n",
    "/print 1\n",
    "x = (1\n     , 2)\n",  # a continuation line starting with a comma: Python, not an escape
    "x = (4\n     / 2)\n",
    's = "what?"\nq = 10 % 3\nr = 1 != 2\n',
    "a=!ls\n",
    "b=%pwd\n",
    "x = 1\r!true\n",  # an old Mac line end
    "x = 1\x0c!true\n",
    "\x0c!true\n",
    "def g():\n    '''Docstring?\n    !not a command\n    '''\n    return 1\n",
    "x = [\n%time 1\n]\n",
]


def test_plain_python_transforms_as_ipython_does(shell):
    """Does every tricky cell come out as IPython's own static transform makes it?"""
    made, _, _ = shell
    manager = made.input_transformer_manager
    ipython = type(manager)().transform_cell
    plain = transforms.PlainPython(manager)
    for cell in TRICKY_CELLS:
        assert plain.transform_cell(cell) == ipython(cell), cell


def test_plain_python_tokenizes_only_what_may_need_it(shell, monkeypatch):
    """Is a cell of plain Python (blank lines, prompts and cell magics cleaned up first)
    never tokenized, and one with an escape, or a student's own transformer, always?"""
    made, _, _ = shell
    manager = made.input_transformer_manager
    tokenized = []
    monkeypatch.setattr(manager, "transform_cell", lambda c: tokenized.append(c) or c)
    plain = transforms.PlainPython(manager)
    for cell in (PLAIN_CELL, AWAIT_CELL, "\n\nx = (1,\n     2)\n", "%%time\nx = 1\n"):
        plain.transform_cell(cell)
    assert tokenized == []
    for cell in (MAGIC_CELL, "files = !ls\n", "len?\n", "x = 1\r!true\n"):
        plain.transform_cell(cell)
    assert len(tokenized) == 4
    manager.token_transformers.append(type("Mine", (), {"find": classmethod(lambda c, t: None)}))
    try:
        plain.transform_cell(PLAIN_CELL)
    finally:
        manager.token_transformers.pop()
    assert tokenized[-1] == PLAIN_CELL
