"""Running a sanitised notebook: student cells in the sandbox, test cells here.

Every cell the student could have written runs in the student's sandboxed
process (:mod:`autograder.sandbox.student`). Every test cell, and every read-only
instructor cell, runs in *this* process, the grader's, in a fresh namespace
per submission. When a test cell names something it did not define itself
(``mean``, ``samples``), the name is looked up in the student's process: data
comes back as data, and a function comes back as a proxy whose calls send the
arguments over and bring the result (or the error) back. Only names that the
source lets students define are looked up there (:func:`student_names`): a
name any instructor cell defines (a reference computation, a helper) is never
taken from the student, whatever the order of the submission's cells.

So no student code ever runs where a verdict is reached: an input transformer,
a patched ``np.allclose``, a custom exception handler or a replaced
``AssertionError`` only changes the student's own process, and the tests
compare with numpy as imported here.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import json
import linecache
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import CodeType
from typing import Any

import fastjsonschema
import nbformat

from autograder import sandbox
from autograder.pipeline.course import dependencies, notebook, placement
from autograder.pipeline.errors import Status
from autograder.sandbox import Student, outputs, wire
from autograder.sandbox.launcher import GRACE
from autograder.sandbox.outputs import Budget, OutputStream, error_output, finish


class Stop(BaseException):
    """The student's process can no longer answer: test code must not catch this."""

    def __init__(self, status: Status, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


class _CellTimedOut(BaseException):
    """A call into the student's code ran past the cell's deadline."""


class RunawayError(Exception):
    """A student's function that ran past its limit before is not called again."""


class StudentFunction:
    """A student's function, callable from test code; the call runs in the sandbox."""

    def __init__(self, run: Execution, name: str) -> None:
        self._run, self.__name__ = run, name

    def __repr__(self) -> str:
        return f"<student function {self.__name__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = self.__name__
        if name in self._run.runaway:
            limit = f"{self._run.timeout:g} s"
            raise RunawayError(
                f"{name} ran past the {limit} limit in an earlier test; not called again"
            )
        handles = self._run.handles
        try:
            encoded = [wire.encode(a, refs=handles) for a in args]
            named = {str(k): wire.encode(v, refs=handles) for k, v in kwargs.items()}
        except wire.Unencodable as why:
            raise TypeError(f"cannot pass {why} to the student's {name}") from None
        message: dict[str, Any] = {"op": "call", "name": name, "args": encoded}
        if named:
            message["kwargs"] = named
        try:
            reply = self._run.ask(message, stand_ins=self._run.serving_now())
        except _CellTimedOut:
            self._run.stop_calling(name)  # each runaway function costs one cell timeout
            raise
        _copy_back(args, reply.get("args", []))
        return _answer(self._run, reply)


def _answer(run: Execution, reply: dict[str, Any]) -> Any:
    """What a call into the student's code gave: its result (data, or a reference to
    one of the student's objects), or its error raised here; its printing shown."""
    for output in reply.get("outputs", []):
        stream = _stream_of(output)
        if stream is not None:
            stream.write(str(output.get("text", "")))
    for message in list(reply.get("warnings", []))[:20]:
        warnings.warn(outputs.shorten(message, 500), UserWarning, stacklevel=3)
    if reply.get("ok"):
        return wire.decode(reply.get("result"), refs=run.handles)
    # A KeyboardInterrupt here is the student's own: the grader's interrupt
    # (after a timeout) never comes back as a reply.
    shown = error_output(
        reply.get("ename", "Exception"), reply.get("evalue", ""), reply.get("traceback", [])
    )
    error = wire.exception_class(shown["ename"])(shown["evalue"])
    error.student_traceback = shown["traceback"][:12]  # type: ignore[attr-defined]
    raise error


class StudentObject:
    """One of the student's objects that cannot cross as data, held by reference.

    A generator, a figure's axes, an instance of the student's own class: the
    object stays in the student's process (``student.Kept``), and what a test
    does with it is asked of it there, each answer data or another reference:
    an attribute, a call, iteration, its length, an item, its ``str`` and its
    truth. Nothing that reaches a verdict is asked of the student's code: the
    proxy equals only itself (a comparison with a test's value is never
    forwarded, so an object "equal to everything" equals nothing here), and
    ``isinstance`` sees a StudentObject, not the student's type.
    """

    __slots__ = ("_run", "_number", "_type")

    def __init__(self, run: Execution, number: int, type_name: str) -> None:
        self._run, self._number, self._type = run, number, type_name

    def __repr__(self) -> str:
        return f"<the student's {self._type} object>"

    def _act(self, do: str, **fields: Any) -> Any:
        message = {"op": "ref", "ref": self._number, "do": do, **fields}
        return _answer(self._run, self._run.ask(message, stand_ins=self._run.serving_now()))

    def _encoded(self, values: Sequence[Any]) -> list[Any]:
        try:
            return [wire.encode(v, refs=self._run.handles) for v in values]
        except wire.Unencodable as why:
            raise TypeError(f"cannot pass {why} to the student's {self._type}") from None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # the proxy's own, or a probe (copy, numpy): never asked
            raise AttributeError(name)
        return self._act("getattr", name=name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        named = dict(zip(kwargs, self._encoded(list(kwargs.values()))))
        return self._act("call", args=self._encoded(args), kwargs=named)

    def __iter__(self) -> Any:
        return self._act("iter")

    def __next__(self) -> Any:
        return self._act("next")

    def __len__(self) -> int:
        length = self._act("len")
        if type(length) is not int:
            raise TypeError(f"the length of the student's {self._type} is not an int")
        return length

    def __getitem__(self, key: Any) -> Any:
        return self._act("getitem", args=self._encoded([key]))

    def __str__(self) -> str:
        return str(self._act("str"))

    def __bool__(self) -> bool:
        return self._act("bool") is True


class Handles:
    """The grader's side of references (``wire.Refs``) for one submission's execution.

    A reference from the student's process becomes a :class:`StudentObject`
    (the same one for the same number); one sent back names it again. A
    function of the grader's that a test passes to the student's code (a
    ``lambda``) becomes a callback the student's process may call while the
    request runs: computed here, as a stand-in is, only its result crosses.
    """

    def __init__(self, run: Execution) -> None:
        self.run = run
        self.objects: dict[int, StudentObject] = {}
        self.callbacks: dict[str, Callable[..., Any]] = {}

    def keep(self, value: Any) -> dict[str, Any]:
        if isinstance(value, StudentObject) and value._run is self.run:
            return {"t": "ref", "v": [value._number]}
        if callable(value) and not isinstance(value, (type, StudentFunction, StudentObject)):
            number = len(self.callbacks) + 1
            self.callbacks[f"callback {number}"] = value
            return {"t": "callback", "v": number}
        raise wire.Unencodable(type(value).__name__)

    def find(self, kind: str, body: Any) -> Any:
        if kind != "ref" or not (isinstance(body, list) and len(body) == 3):
            raise wire.WireError("the student's process may send only references to its objects")
        number, type_name, _can_call = body
        if type(number) is not int or not isinstance(type_name, str):
            raise wire.WireError("a malformed reference")
        if number not in self.objects:
            if len(self.objects) >= MAX_OBJECTS:
                raise wire.WireError(f"more than {MAX_OBJECTS} objects of the student's")
            self.objects[number] = StudentObject(self.run, number, type_name[:200])
        return self.objects[number]


MAX_OBJECTS = 10_000  #: references to the student's objects one execution may hold


def _stream_of(output: Any) -> Any:
    import sys

    if isinstance(output, dict) and output.get("output_type") == "stream":
        return sys.stderr if output.get("name") == "stderr" else sys.stdout
    return None


def _copy_back(args: tuple[Any, ...], encoded_after: Any) -> None:
    """Make in-place changes the student's function made to its arguments visible here.

    encoded_after: per argument, its value after the call, or None where the
    call left it as it was (most calls: nothing to decode).
    """
    import numpy as np

    for original, encoded in zip(args, encoded_after):
        if encoded is None:
            continue
        try:
            after = wire.decode(encoded)
        except wire.WireError:
            continue
        if isinstance(original, np.ndarray) and isinstance(after, np.ndarray):
            if original.shape == after.shape and original.flags.writeable:
                original[...] = after
        elif isinstance(original, list) and isinstance(after, list):
            original[:] = after
        elif isinstance(original, dict) and isinstance(after, dict):
            original.clear()
            original.update(after)


def student_names(source_nb: Any) -> frozenset[str]:
    """The names test cells may look up in the student's process.

    Those the instructor's cells (tests and read-only cells) read, and those the
    cells a student may edit bind in the source, less every name an instructor
    cell binds: those always come from the instructor's code, run here. A name
    a test reads that the source's solution never binds at top level (a
    student's ``a = 1``) is the student's too, as in a kernel.
    """
    instructor: set[str] = set()
    students: set[str] = set()
    for cell in source_nb.cells:
        if cell.cell_type != "code":
            continue
        mine = notebook.is_test(cell) or notebook.is_locked(cell)
        (instructor if mine else students).update(dependencies.binds(cell.source))
        if mine:
            with contextlib.suppress(SyntaxError):
                students |= placement.global_reads(dependencies.parsed(cell.source))
    return frozenset(students - instructor - set(vars(builtins)))


#: the builtins' public names, as a test cell's globals start with them (TestNamespace)
BUILTIN_NAMES = {k: v for k, v in vars(builtins).items() if not k.startswith("_")}


class TestNamespace(dict):
    """Globals for the test cells; a student name they lack is looked up in the student's process.

    allowed: the names that may come from the student (:func:`student_names`);
    any other missing name is a NameError, as in a fresh kernel.

    A test that checks one answer can have the student's *other* functions
    answered by trusted stand-ins while it runs (:meth:`serving`): in a kernel
    a test does that by rebinding the names in ``globals()``; here it calls
    ``globals().serving(...)``, which only the grader's namespace has.
    """

    def __init__(self, run: Execution, allowed: frozenset[str]) -> None:
        # The built-in names are put in too: a test cell looks up hundreds of them
        # (``range``, ``abs``), and each would otherwise come through __missing__
        # and its KeyError before Python found it in the builtins. They win over a
        # student's name either way (see __missing__).
        super().__init__(BUILTIN_NAMES, __name__="__main__", __builtins__=builtins)
        self._run, self.allowed = run, allowed
        self.cache: dict[str, Any] = {}

    def __missing__(self, name: str) -> Any:
        if name not in self.allowed or name in vars(builtins) or name.startswith("__"):
            raise KeyError(name)
        if name in self.cache:
            return self.cache[name]
        if name in self._run.functions:  # the student's process said so in its last reply
            self.cache[name] = StudentFunction(self._run, name)
            return self.cache[name]
        reply = self._run.ask({"op": "lookup", "name": name})
        kind = reply.get("kind")
        value: Any
        if kind == "callable":
            value = StudentFunction(self._run, name)
        elif kind == "value":
            value = wire.decode(reply.get("value"), refs=self._run.handles)
        elif (
            kind == "module"
            and isinstance(reply.get("module"), str)
            and reply["module"] in sys.modules
        ):
            value = sys.modules[reply["module"]]  # the grader's own copy of the same module
        elif kind in ("unencodable", "module"):
            held = reply.get("type") or f"module {reply.get('module')}"
            raise TypeError(f"{name} holds {held}, which the tests cannot check")
        else:
            raise KeyError(name)
        self.cache[name] = value
        return value

    @contextlib.contextmanager
    def serving(self, stand_ins: dict[str, Any]) -> Iterator[None]:
        """While the block runs, calls the student's code makes to these names are answered here.

        stand_ins: ``{name: function}``, trusted functions run in this process
        with the student's arguments; only their results reach the student's
        process, and only during the calls the block makes.
        """
        before = self._run.stand_ins
        self._run.stand_ins = {**before, **stand_ins}
        try:
            yield
        finally:
            self._run.stand_ins = before


class Execution:
    """One submission's execution: the student's process, deadlines, what went wrong."""

    def __init__(
        self,
        student: Student,
        timeout: float,
        wall: float,
        allowed: frozenset[str],
        watched: frozenset[str] | None = None,
    ) -> None:
        """allowed: :func:`student_names`; watched: those the student's process is told to
        report on (default: all allowed), which it sees: never a name only a solution binds."""
        self.student, self.timeout = student, timeout
        self.watched = allowed if watched is None else watched
        self.wall_deadline = time.monotonic() + wall
        self.cell_deadline = self.wall_deadline
        self.namespace = TestNamespace(self, allowed)
        # Which allowed names the student's process binds to functions, as its last
        # reply said (every reply does once asked to ``watch`` them): those need no lookup.
        self.functions: frozenset[str] = frozenset()
        self.watching = False
        self.stand_ins: dict[str, Any] = {}  # served to the student's calls (TestNamespace.serving)
        self.timed_out: list[str] = []  # grade_ids (or positions) of cells that ran out of time
        self.runaway: set[str] = set()  # student functions that ran past a cell's limit
        self.handles = Handles(self)  # the student's objects held by reference, and callbacks
        # The student's process caps its outputs; they are capped again here,
        # with room for the note it adds about what it cut.
        self.budget = GraderBudget()

    def serving_now(self) -> dict[str, Any]:
        """The grader's functions the student's code may call during a request: the
        stand-ins a test serves, and the callbacks tests passed in."""
        return {**self.stand_ins, **self.handles.callbacks}

    def start_cell(self) -> None:
        """Start a cell's clock; raise Stop if the whole notebook is out of time."""
        now = time.monotonic()
        if now >= self.wall_deadline:
            raise Stop(Status.TIMEOUT, "the notebook ran past its time limit")
        self.cell_deadline = min(now + self.timeout, self.wall_deadline)
        self.namespace.cache = {}
        self.budget.start_cell()

    def stop_calling(self, name: str) -> None:
        """Never run the student's function ``name`` again, here or in the student's process.

        In the student's process the name is bound to a function that fails at
        once, so the student's other functions that call it fail too instead of
        each running into the time limit again.
        """
        self.runaway.add(name)
        message = f"{name} ran past the {self.timeout:g} s limit in an earlier test"
        try:
            self.student.request({"op": "disable", "name": name, "message": message}, GRACE)
        except (sandbox.CellTimeout, sandbox.StudentGone, sandbox.Tampered):
            pass  # then the calls from here are still refused

    def ask(
        self, message: dict[str, Any], stand_ins: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """One request to the student's process within the current cell's deadline.

        stand_ins: ``{name: function}`` the student's code may call meanwhile.
        """
        if not self.watching:
            message = {**message, "watch": sorted(self.watched)}
            self.watching = True
        self.functions = frozenset()  # unknown until a reply says, should this one not
        try:
            reply = self.student.request(message, self.cell_deadline - time.monotonic(), stand_ins)
        except sandbox.CellTimeout as timeout:
            if self.student.dead:
                raise Stop(
                    Status.TIMEOUT, "a cell ran past its time limit and would not stop"
                ) from None
            raise _CellTimedOut() from timeout
        except sandbox.StudentGone as gone:
            if gone.outside:  # not the student's doing: graded again (worker.py), never final
                raise Stop(Status.GRADER_ERROR, f"the grader lost the notebook ({gone})") from None
            raise Stop(Status.KERNEL_DIED, f"the notebook's process died ({gone})") from None
        except sandbox.Tampered as why:
            raise Stop(Status.TAMPERED, f"the notebook's process sent garbage ({why})") from None
        said = reply.get("functions")
        if isinstance(said, list):
            self.functions = self.namespace.allowed.intersection(n for n in said if type(n) is str)
        return reply


class GraderBudget(Budget):
    """The student's output limits, checked again in the grader, with room for the notes.

    The student's process may add one note per cell saying what it cut.
    """

    cell_size = Budget.cell_size + 1000
    cell_count = Budget.cell_count + 1
    notebook_size = Budget.notebook_size * 2
    notebook_count_limit = Budget.notebook_count_limit * 2


def _error(ename: str, evalue: str, lines: Sequence[str] = ()) -> Any:
    shown = error_output(ename, evalue, [*lines, f"{ename}: {evalue}"])
    return nbformat.v4.new_output("error", **{k: v for k, v in shown.items() if k != "output_type"})


TIMEOUT_ERROR = ("CellTimeoutError", "the cell ran longer than its time limit")


@functools.cache
def _valid_output() -> Callable[[Any], Any]:
    """nbformat's schema for one output, compiled as nbformat compiles the notebook's.

    Checks what validating a notebook around the output would check, in about
    1/40 of the time (nbformat's own ``validate(ref=...)`` falls back to the
    slower jsonschema); raises ``JsonSchemaException`` for an invalid output.
    """
    v4 = nbformat.v4
    schema = json.loads((Path(v4.__file__).parent / v4.nbformat_schema[(None, None)]).read_text())
    return fastjsonschema.compile({**schema, "$ref": "#/definitions/output"})


def _student_outputs(reply: dict[str, Any], budget: Budget) -> list[Any]:
    """The outputs the student's process reported, as validated notebook outputs.

    Each is paid for from ``budget`` before it is validated, so however many a
    reply carries, the grader spends bounded time and memory on them.
    """
    outputs: list[Any] = []
    raw_outputs = reply.get("outputs", [])
    if not isinstance(raw_outputs, list):
        return outputs
    for raw in raw_outputs:
        try:
            size = len(json.dumps(raw))
        except (TypeError, ValueError):
            continue
        if not budget.take(size, new_output=True):
            continue
        try:
            output = nbformat.from_dict(raw)
            if output.get("output_type") == "error":
                output = nbformat.from_dict(
                    error_output(output.get("ename"), output.get("evalue"), output.get("traceback"))
                )
            _valid_output()(output)
        except Exception:
            continue  # not a valid output: drop it rather than trust it
        outputs.append(output)
    note = budget.note()
    if note:
        outputs.append(nbformat.from_dict(note))
    return outputs


def run_student_cell(run: Execution, cell: Any) -> list[Any]:
    """Run a cell the student may have written, in the sandbox."""
    try:
        reply = run.ask({"op": "run", "source": cell.source})
    except _CellTimedOut:
        run.timed_out.append(notebook.grade_id(cell) or "a cell of yours")
        return [_error(*TIMEOUT_ERROR)]
    return _student_outputs(reply, run.budget)


@functools.lru_cache(maxsize=256)
def _compiled(source: str, name: str) -> Any:
    """A test cell's code object: the same for every submission, so compiled once."""
    return compile(source, name, "exec")


def compiled_test(cell: Any) -> Any:
    """The code object of an instructor's ``cell``, as :func:`run_trusted_cell` runs it
    (a SyntaxError, or ValueError for a null byte, raises and is not remembered)."""
    name = f"<{notebook.grade_id(cell)}>"
    # Kept where a kernel keeps a cell's code, so a test that reads its own functions'
    # source (inspect.getsource: a diagnosis of mutants) reads it here as in stock.
    linecache.cache[name] = (len(cell.source), None, cell.source.splitlines(True), name)
    return _compiled(cell.source, name)


def _names_in(code: CodeType) -> set[str]:
    """Every global or attribute name ``code`` and the functions it defines read."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            names |= _names_in(constant)
    return names


def read_by_instructor(nb: Any) -> frozenset[str]:
    """The names the instructor's cells of ``nb`` (tests, read-only cells) may look up.

    What the grader tells a student's process to report on: names of the tests'
    and the release's own text, never one that only the source's solutions bind.
    """
    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type == "code" and (notebook.is_test(cell) or notebook.is_locked(cell)):
            with contextlib.suppress(SyntaxError, ValueError):
                names |= _names_in(compiled_test(cell))
    return frozenset(names)


def run_trusted_cell(run: Execution, cell: Any) -> list[Any]:
    """Run an instructor's cell (a test, or a read-only cell) in this process."""
    outputs: list[Any] = []
    run.budget.start_cell()
    streams = (
        OutputStream("stdout", outputs, run.budget),
        OutputStream("stderr", outputs, run.budget),
    )
    with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]):
        try:
            exec(compiled_test(cell), run.namespace)
        except _CellTimedOut:
            run.timed_out.append(notebook.grade_id(cell))
            outputs.append(_error(*TIMEOUT_ERROR))
        except Exception as error:
            cause = error.__cause__ or error
            said = str(error)
            # The sandbox's explanation of a crash, once: a test that repeats it in its own
            # message (lab_checks does) needs it no second time above.
            lines = [
                line
                for line in getattr(cause, "student_traceback", [])
                if not ("\nWhy: " in line and line.strip() in said)
            ]
            lines = [f"In your code:\n{''.join(lines)}"] if lines else []
            outputs.append(_error(type(error).__name__, str(error), lines))
    return [
        nbformat.from_dict(o) if isinstance(o, dict) else o for o in finish(outputs, run.budget)
    ]


def execute(
    nb: Any,
    student: Student,
    timeout: float,
    wall: float,
    allowed: frozenset[str],
    beside: bool = False,
) -> tuple[Status, str]:
    """Run every code cell of ``nb`` in order; outputs go into ``nb``.

    allowed: the names test cells may look up in the student's process
    (:func:`student_names` of the source). beside: run the test cells too in the
    student's process, as stock nbgrader does (:mod:`~autograder.pipeline.course.placement`
    says when); their verdict is then read from their outputs.
    Returns ``(status, detail)``: ``("ok", "")`` or why the run stopped early.
    Test cells that never ran get an error output, so they can never earn points.
    """
    run = Execution(student, timeout, wall, allowed, read_by_instructor(nb) & allowed)
    count, stopped = 0, None
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            cell.outputs = []
            if stopped:
                if notebook.is_test(cell):
                    cell.outputs = [_error("NotGraded", f"not run: {stopped.detail}")]
                continue
            try:
                run.start_cell()
                instructor = notebook.is_test(cell) or notebook.is_locked(cell)
                if beside or not notebook.is_test(cell):
                    cell.outputs = run_student_cell(run, cell)
                if instructor and not beside:
                    trusted = run_trusted_cell(run, cell)
                    cell.outputs = cell.outputs + trusted if not notebook.is_test(cell) else trusted
            except Stop as stop:
                stopped = stop
                if notebook.is_test(cell) or not cell.outputs:
                    cell.outputs = [_error("NotGraded", f"not run: {stop.detail}")]
                continue
            count += 1
            cell.execution_count = count
    if stopped:
        return stopped.status, stopped.detail
    if run.timed_out:
        limit = f"{run.timeout:g} s"
        return (
            Status.TIMEOUT,
            f"ran longer than {limit} and was interrupted: {', '.join(run.timed_out)}",
        )
    return Status.OK, ""
