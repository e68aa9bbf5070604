"""Does the execute stage run student cells there and test cells here, as it promises?

A fake student process answers the grader's requests in this process, so each
rule of execution is checked on a notebook of a few cells built in the test.
"""

import contextlib
import io

import nbformat
import pytest

from autograder.pipeline.errors import Status
from autograder.pipeline.grading import execute
from autograder.sandbox import CellTimeout, wire
from autograder.sandbox.outputs import MAX_CELL_OUTPUTS

from . import toy


class FakeStudent:
    """A student process stand-in: runs cells in a dict, answers lookups and calls."""

    def __init__(self, slow_names=()):
        self.namespace: dict = {}
        self.dead, self.unprotected, self.slow_names = False, [], set(slow_names)
        self.requests: list[dict] = []

    def request(self, message, timeout, stand_ins=None):
        self.requests.append(message)
        op = message["op"]
        if op == "run":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(message["source"], self.namespace)
            text = out.getvalue()
            return {"outputs": [{"output_type": "stream", "name": "stdout", "text": text}]}
        if op == "lookup":
            if message["name"] not in self.namespace:
                return {"kind": "missing"}
            value = self.namespace[message["name"]]
            if callable(value):
                return {"kind": "callable"}
            return {"kind": "value", "value": wire.encode(value)}
        if message["name"] in self.slow_names:
            raise CellTimeout()
        args = [wire.decode(a) for a in message["args"]]
        own = {name: self.namespace.get(name) for name in stand_ins or {}}
        self.namespace.update(stand_ins or {})  # as the student's process binds them
        try:
            result = self.namespace[message["name"]](*args)
        finally:
            self.namespace.update(own)
        return {"ok": True, "result": wire.encode(result), "args": message["args"]}


def code(source, grade_id=None, points=0, kind=None):
    """A code cell; kind: "answer", "test" or "locked" (:func:`toy.cell`)."""
    return toy.cell(source, grade_id, kind, points)


def notebook(*cells):
    return nbformat.v4.new_notebook(cells=list(cells))


def run(nb, student=None, allowed=frozenset({"double", "x"})):
    student = student or FakeStudent()
    status, detail = execute.execute(nb, student, 5, 30, allowed)
    return student, status, detail


def test_test_cells_run_here_and_find_student_functions():
    """Does a test cell run in the grader and call the student's function by proxy?"""
    nb = notebook(
        code("def double(v):\n    return 2 * v", "double", kind="answer"),
        code("assert double(3) == 6\nprint('ok')", "test_double", 1, kind="test"),
    )
    student, status, _ = run(nb)
    assert status == Status.OK
    assert nb.cells[1].outputs[0]["text"] == "ok\n"
    ops = [r["op"] for r in student.requests]
    assert ops == ["run", "lookup", "call"]  # the test's code itself never reached the student


class ReportingStudent(FakeStudent):
    """A student process that, once asked to watch names, says in each reply which are
    functions, as the real one does (``functions``: what to say instead, if not None)."""

    def __init__(self, functions=None):
        super().__init__()
        self.watched, self.said = [], functions

    def request(self, message, timeout, stand_ins=None):
        self.watched = message.get("watch", self.watched)
        reply = dict(super().request(message, timeout, stand_ins))
        names = [n for n in self.watched if callable(self.namespace.get(n))]
        reply["functions"] = names if self.said is None else self.said
        return reply


def test_a_function_the_last_reply_named_is_called_without_a_lookup():
    """Is a name the student's process just said is a function called with no lookup, and is
    a name it rebound to data in a later cell looked up again?"""
    nb = notebook(
        code("def double(v):\n    return 2 * v", "double", kind="answer"),
        code("assert double(3) == 6", "test_double", 1, kind="test"),
        code("double = 5", "double_again", kind="answer"),
        code("assert double == 5", "test_data", 1, kind="test"),
    )
    student, status, _ = run(nb, ReportingStudent())
    assert status == Status.OK and [c.outputs for c in nb.cells[1::2]] == [[], []]
    assert [r["op"] for r in student.requests] == ["run", "call", "run", "lookup"]
    assert student.requests[0]["watch"] == ["double"]  # asked once, with the first request


def test_the_student_hears_only_names_the_tests_read():
    """Is the student's process told to watch only names the instructor's cells read, never
    one only the source's solutions bind (its own helper's name tells of the answer)?"""
    nb = notebook(
        code("def double(v):\n    return 2 * v", "double", kind="answer"),
        code("assert double(3) == 6", "test_double", 1, kind="test"),
        code("def check():\n    return x", "check", kind="locked"),
    )
    allowed = frozenset({"double", "x", "_scaled_by_two"})  # the last: a solution's helper
    student, status, _ = run(nb, ReportingStudent(), allowed)
    assert status == Status.OK
    assert student.requests[0]["watch"] == ["double", "x"]


def test_what_a_reply_says_of_other_names_is_not_believed():
    """Is a name outside the allowed set still a NameError when a reply calls it a function?"""
    nb = notebook(
        code("def reference(v):\n    return 0", "double", kind="answer"),
        code("assert reference(3) == 0", "test_double", 1, kind="test"),
    )
    student, _, _ = run(nb, ReportingStudent(functions=["reference", 7]))
    assert nb.cells[1].outputs[0]["ename"] == "NameError"
    assert [r["op"] for r in student.requests] == ["run"]


def test_a_test_finds_builtins_without_asking_and_they_win_over_a_students_name(monkeypatch):
    """Built-in names are the tests' own, never looked up (nor missed) on the way; a student
    function named like one does not replace it in the tests."""
    missed = []
    looked_up = execute.TestNamespace.__missing__

    def missing(namespace, name):
        missed.append(name)
        return looked_up(namespace, name)

    monkeypatch.setattr(execute.TestNamespace, "__missing__", missing)
    nb = notebook(
        code("def max(*v):\n    return -1", "double", kind="answer"),
        code(
            "assert max(1, 2) == 2 and sum(range(4)) == 6\nprint(__name__)", "test", 1, kind="test"
        ),
    )
    student, status, _ = run(nb, allowed=frozenset({"max"}))
    assert status == Status.OK and nb.cells[1].outputs[0]["text"] == "__main__\n"
    assert missed == [] and [r["op"] for r in student.requests] == ["run"]


def test_instructor_names_never_come_from_the_student():
    """Is a name outside the allowed set a NameError, even if the student defines it?"""
    nb = notebook(
        code("def reference(v):\n    return 0", "double", kind="answer"),
        code("assert reference(3) == 0", "test_double", 1, kind="test"),
    )
    _, status, _ = run(nb)
    (error,) = nb.cells[1].outputs
    assert status == Status.OK and error["ename"] == "NameError"


def test_student_keyboard_interrupt_is_an_error_not_a_timeout():
    """Does a KeyboardInterrupt the student's function raises fail the test, not time out?"""
    student = FakeStudent()
    student.namespace["double"] = lambda v: 2 * v
    nb = notebook(code("assert double(1) == 2", "test_double", 1, kind="test"))
    original = student.request

    def interrupting(message, timeout, stand_ins=None):
        if message["op"] == "call":
            return {"ok": False, "ename": "KeyboardInterrupt", "evalue": "", "args": []}
        return original(message, timeout)

    student.request = interrupting
    _, status, _ = run(nb, student)
    assert status == Status.OK and nb.cells[0].outputs[0]["ename"] == "KeyboardInterrupt"


def test_a_cell_past_its_time_is_a_timeout():
    """Does a call past the cell's time limit end the cell as a timeout, and name it?"""
    student = FakeStudent(slow_names={"double"})
    student.namespace["double"] = lambda v: v
    nb = notebook(code("double(1)", "test_double", 1, kind="test"))
    _, status, detail = run(nb, student)
    assert status == Status.TIMEOUT and "test_double" in detail


@pytest.mark.parametrize("count", [MAX_CELL_OUTPUTS + 50])
def test_outputs_are_capped_here_too(count):
    """Does the grader cut a reply with too many outputs, and say so?"""
    reply = {"outputs": [{"output_type": "stream", "name": "stdout", "text": "x"}] * count}
    outputs = execute._student_outputs(reply, execute.GraderBudget())
    assert len(outputs) <= MAX_CELL_OUTPUTS + 2  # the student's note, and the grader's
    assert "the grader cut" in outputs[-1]["text"]


def test_only_valid_outputs_are_kept():
    """Does the grader keep what nbformat calls an output, and drop everything else?"""
    valid = [
        {"output_type": "stream", "name": "stdout", "text": "x"},
        {"output_type": "display_data", "data": {"text/plain": "y"}, "metadata": {}},
        {"output_type": "execute_result", "data": {}, "metadata": {}, "execution_count": 3},
    ]
    invalid = [
        {"output_type": "stream", "name": "stdout", "text": "x", "extra": 1},
        {"output_type": "display_data", "data": 5, "metadata": {}},
        {"output_type": "stream", "name": "stdout"},
        {"output_type": "nonsense"},
        {"no": "type"},
    ]
    reply = {"outputs": [valid[0], *invalid, *valid[1:]]}
    assert execute._student_outputs(reply, execute.GraderBudget()) == valid


def test_student_names_of_a_small_notebook():
    """Are answers and free cells' names allowed, and instructor cells' names not?"""
    nb = notebook(
        code("import numpy as np\ndef helper(): pass", "setup", kind="locked"),
        code("x = 1"),
        code("def double(v):\n    return 2 * v", "double", kind="answer"),
        code("def reference(v): pass\nx = 2", "test_double", 1, kind="test"),
    )
    assert execute.student_names(nb) == {"double"}


def test_a_name_only_a_test_reads_is_the_students():
    """``assert a == 1`` with ``a`` bound nowhere in the source's solution: as in a kernel,
    ``a`` is the student's; a name an instructor cell binds, or a module it imports, is not."""
    nb = notebook(
        code("import numpy as np", "setup", kind="locked"),
        code("# YOUR CODE HERE", "answer", kind="answer"),
        code(
            "def ref(): return a\nassert a == 1 and ref() == np.int64(1) and len([b])",
            "t",
            1,
            kind="test",
        ),
    )
    assert execute.student_names(nb) == {"a", "b"}


def test_a_runaway_function_costs_one_timeout():
    """After a function ran past its limit, do later tests fail at once, naming it?"""
    student = FakeStudent(slow_names={"double"})
    student.namespace["double"] = lambda v: v
    student.namespace["x"] = 1
    nb = notebook(
        code("double(1)", "test_double", 1, kind="test"),
        code("double(2)", "test_double_again", 1, kind="test"),
        code("assert x == 1", "test_x", 1, kind="test"),
    )
    _, status, detail = run(nb, student)
    calls = [r for r in student.requests if r["op"] == "call"]
    assert len(calls) == 1  # the second test never reached the student
    assert status == Status.TIMEOUT and "test_double_again" not in detail
    (error,) = nb.cells[1].outputs
    assert error["ename"] == "RunawayError" and "not called again" in error["evalue"]
    assert nb.cells[2].outputs == []  # a test that never calls it still passes


def test_a_test_serves_stand_ins_to_the_student_for_its_block_only():
    """Do names a test serves reach the student's calls made in its block, and no others?"""
    nb = notebook(
        code("def helper(v):\n    return 100 * v", "helper", kind="answer"),
        code("def double(v):\n    return 2 * helper(v)", "double", kind="answer"),
        code(
            "with globals().serving({'helper': lambda v: v}):\n"
            "    assert double(3) == 6\n"
            "assert double(3) == 600\nprint('ok')",
            "test_double",
            1,
            kind="test",
        ),
    )
    student, status, _ = run(nb, allowed=frozenset({"double", "helper"}))
    assert status == Status.OK
    assert nb.cells[2].outputs[-1]["text"] == "ok\n", nb.cells[2].outputs
