"""Does a cell the zygote learned run exactly as IPython would have run it, and only then?

In this process, on the shell a student's process runs cells in
(:func:`autograder.sandbox.student.make_shell`): the zygote's part is played by
:meth:`~autograder.sandbox.transforms.KnownCells.learn` here. That a real
zygote hands what it learned to its students, and that one student cannot
change what the next one reads, is in the last test, on a real sandbox.
"""

import warnings

import pytest

from autograder.sandbox import Limits, Sandbox, student, transforms

MAGIC_CELL = "x = 2\n%time y = x * 3\n!true\nprint(y)\n"
AWAIT_CELL = "import asyncio\nawait asyncio.sleep(0)\nz = 7\n"
PLAIN_CELL = "def f(a):\n    return a + 1\nprint(f(1))\n"


@pytest.fixture
def shell():
    """A fresh student shell with its transforms learned through KnownCells; undone after."""
    with warnings.catch_warnings():  # IPython 9 asks for "nocolor"; 8 knows only "NoColor"
        warnings.simplefilter("ignore", DeprecationWarning)
        made = student.make_shell()
    plain = made.transform_cell, made.should_run_async
    known = transforms.KnownCells(made)
    known.install()
    yield made, known, plain
    made.transform_cell, made.should_run_async = plain
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
