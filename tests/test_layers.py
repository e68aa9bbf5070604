"""Do imports flow one way through the package's layers, with no cycle and no lab in them?

tools -> pipeline -> sandbox, and ``autograder.log`` (the route of what the grader
says) below them all: a module may import its own layer or one below, never one
above; only the sandbox's launcher starts the student-side module; and no module
imports another that (through others) imports it back.
"""

import ast
import re
from pathlib import Path

import pytest

from .lab import lab
from .lab.lab import ROOT

PACKAGE = ROOT / "autograder"
LAYERS = {
    "log": -1,
    "startup": -1,
    "sandbox": 0,
    "diagnosis": 0,  # what a course's hidden tests import: nothing of the grading machinery
    "pipeline": 1,
    "tools": 2,
    "serve": 2,
}  # the package's own top level: 3


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The autograder modules ``path`` imports (``from . import x`` counts as ``pkg.x``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("autograder")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            if not prefix.startswith("autograder"):
                continue
            for alias in node.names:
                candidate = f"{prefix}.{alias.name}"
                where = ROOT / Path(*candidate.split("."))
                is_module = where.with_suffix(".py").exists() or (where / "__init__.py").exists()
                found.add(candidate if is_module else prefix)
    return found


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
GRAPH = {name: imports(path) & set(MODULES) for name, path in MODULES.items()}


def layer(name: str) -> int:
    parts = name.split(".")
    return LAYERS.get(parts[1], 3) if len(parts) > 1 else 3


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_flow_down(name):
    """Does this module import only its own layer or the layers below it?"""
    upward = sorted(other for other in GRAPH[name] if layer(other) > layer(name))
    assert upward == [], f"{name} imports a higher layer: {upward}"


#: pipeline/'s rooms from the ground up: a room may use its own or those below it, so a
#: student's grade reads in order (docs/architecture.md)
PIPELINE_FLOORS = [
    ("errors", "files", "locks"),
    ("course",),
    ("settings", "results"),
    ("lms", "reports"),
    ("submissions",),
    ("grading",),
    ("dispatch",),
    ("recording",),
    ("grade",),
]


def pipeline_floor(name: str) -> int:
    """The floor of a pipeline module (its room: the folder or module below pipeline/)."""
    room = name.split(".")[2]
    (floor,) = [i for i, rooms in enumerate(PIPELINE_FLOORS) if room in rooms]
    return floor


PIPELINE = sorted(n for n in MODULES if n.startswith("autograder.pipeline.") and n.count(".") >= 2)


@pytest.mark.parametrize("name", PIPELINE)
def test_the_pipeline_reads_in_order(name):
    """Does this pipeline module use only its own room or the rooms a grade passed through?"""
    mine = pipeline_floor(name)
    above = sorted(
        other
        for other in GRAPH[name]
        if other.startswith("autograder.pipeline.")
        and other.count(".") >= 2
        and pipeline_floor(other) > mine
    )
    assert above == [], f"{name} uses rooms a grade reaches later: {above}"


def test_only_the_launcher_starts_the_student_side():
    """Is the student-side module imported by the launcher alone (in the grader)?"""
    users = sorted(
        name
        for name, targets in GRAPH.items()
        if "autograder.sandbox.student" in targets
        and name not in ("autograder.sandbox.launcher", "autograder.sandbox.student")
    )
    assert users == []


#: what ``grade`` and ``serve`` must do the same way, and the one module that does each: a
#: second place that does it is a second orchestrator growing apart from the first
ONE_PLACE = {
    r"ProcessPoolExecutor\(": ("forks grading workers", {"autograder.pipeline.dispatch.pools"}),
    r"fcntl\.flock\(": ("takes a lock", {"autograder.pipeline.locks"}),
    r"class_report\.render\(": ("writes the class report", {"autograder.pipeline.recording"}),
    r"results\.write_csv\(": ("writes grades.csv", {"autograder.pipeline.recording"}),
}


def _doing_it(pattern: str) -> set[str]:
    return {name for name, path in MODULES.items() if re.search(pattern, path.read_text())}


@pytest.mark.parametrize("pattern", sorted(ONE_PLACE))
def test_grade_and_serve_share_one_pipeline(pattern):
    """Does one module fork the workers, take locks, write the class report and grades.csv,
    for ``grade`` and ``serve`` alike?"""
    what, allowed = ONE_PLACE[pattern]
    assert _doing_it(pattern) == allowed, f"only {sorted(allowed)} {what}"


def test_the_one_place_rule_sees_a_second_place(tmp_path, monkeypatch):
    """Would the rule above catch serve forking its own pool again (as it once did)?"""
    copy = tmp_path / "service.py"
    copy.write_text(MODULES["autograder.serve.service"].read_text() + "\nProcessPoolExecutor(2)\n")
    monkeypatch.setitem(MODULES, "autograder.serve.service", copy)
    assert "autograder.serve.service" in _doing_it(r"ProcessPoolExecutor\(")


def test_no_import_cycle():
    """Does no module import itself back through others?"""

    def reach(start: str) -> set[str]:
        seen, todo = set(), list(GRAPH[start])
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo += GRAPH.get(current, ())
        return seen

    packages = {n for n, p in MODULES.items() if p.name == "__init__.py"}
    cycles = sorted(n for n in MODULES if n not in packages and n in reach(n) - packages)
    assert cycles == []


def _lab_names() -> re.Pattern[str]:
    """This lab's assignment id, notebook name and answer names, as one pattern."""
    import nbformat

    source = lab.ASSIGNMENT.source(lab.NOTEBOOK)
    answers = [
        c.metadata.nbgrader["grade_id"]
        for c in nbformat.read(source, 4).cells
        if c.metadata.get("nbgrader", {}).get("solution")
    ]
    stem = lab.NOTEBOOK.removesuffix(".ipynb")
    return re.compile(
        "|".join(
            [re.escape(lab.ASSIGNMENT.id), re.escape(stem)]
            + [rf"(?<!<)(?<!</)\b{a}\b" for a in answers]
        )
    )  # (an answer named like an HTML tag, <head>, is not named by the tag)


def test_the_engine_knows_no_lab():
    """Does no module of the engine name this lab's assignment, notebook or answers?"""
    pattern = _lab_names()
    found = [
        f"{name}: {match.group()}"
        for name, path in MODULES.items()
        for match in pattern.finditer(path.read_text())
    ]
    assert found == []


TEMPLATES = sorted(path for path in (ROOT / "autograder").rglob("templates/**/*") if path.is_file())
PLOTTING = ("matplotlib", "numpy", "seaborn", "plotly")


def test_the_engine_assumes_no_lab_library():
    """Does the engine leave what a course loads to the course?

    Its templates (the student README, the pages) name no library and no
    ``lab-`` class; the sandbox's student side imports none of numpy or the
    plotting libraries itself (the course's ``c.Autograder.preload`` does).
    """
    assert len(TEMPLATES) >= 3
    found = [
        f"{path.name}: {word}"
        for path in TEMPLATES
        for word in (*PLOTTING, "lab-")
        if word in path.read_text()
    ]
    found += [
        f"{module} imports {name} (a student's process loads it)"
        for module, name in _student_side_imports()
        if name.split(".")[0] in PLOTTING
    ]
    assert found == []


def _student_side_imports() -> list[tuple[str, str]]:
    """``(module, what it imports at its top level)`` for every module of the package a
    student's process loads: the sandbox's student side and what it imports, transitively.
    An import inside a function runs only when called, and counts only there."""
    seen, todo, found = set(), ["autograder.sandbox.student"], []
    while todo:
        module = todo.pop()
        if module in seen or module not in MODULES:
            continue
        seen.add(module)
        for node in ast.parse(MODULES[module].read_text()).body:
            if isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports nothing at run time
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                base = node.module or ""
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            found += [(module, name) for name in names]
            todo += [name for name in names if name in MODULES]
    assert len(seen) >= 4, seen  # student, wire, figures, outputs, ...
    return found


def test_the_guard_sees_what_the_student_side_imports():
    """Would the rule above catch numpy imported where student.py imports it from (wire.py)?"""
    imported = {(module, name) for module, name in _student_side_imports()}
    assert ("autograder.sandbox.student", "autograder.sandbox.wire") in imported
    assert any(module == "autograder.sandbox.wire" for module, _ in imported)


ENGINE_TESTS = sorted((ROOT / "tests" / "engine").rglob("*.py"))


def test_engine_tests_know_no_lab():
    """Do the engine's tests (tests/engine/) grade toy courses, naming nothing of this lab?

    Neither its assignment, notebook or answers, nor the lab's test modules
    (tests/lab/: its course, corpus, hostile class and fixtures).
    """
    pattern = _lab_names()
    assert len(ENGINE_TESTS) >= 8
    found = []
    for path in ENGINE_TESTS:
        text = path.read_text()
        found += [f"{path.name}: {m.group()}" for m in pattern.finditer(text)]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (
                (node.module or "").startswith(("tests.lab", "lab"))
                or (node.level >= 2)  # from .. import: the tests' shared folder or above
            ):
                found.append(f"{path.name}: imports {'.' * node.level}{node.module or ''}")
    assert found == []


def test_nbgrader_internals_in_one_module():
    """Do nbgrader's private parts appear only in pipeline/course/internals/?"""
    reaches = ("get_alembic_version", "session.commit", "node_modules", "_init_resources")
    found = [
        f"{name}: {reach}"
        for name, path in MODULES.items()
        for reach in reaches
        if reach in path.read_text() and not name.startswith("autograder.pipeline.course.internals")
    ]
    assert found == []


# Modules outside pipeline/results/ that write files, and why what they write is
# no grading result. Everything else that writes a file, a CSV or the gradebook
# fails test_only_the_results_module_writes_results.
WRITES_NO_RESULT = {
    "autograder.pipeline.course.notebook": "nbformat.write: a notebook (corpus, sample class)",
    "autograder.pipeline.course.internals.database": "nbgrader's steps, run by results.Recorder",
    "autograder.pipeline.files": "the one atomic writer, write_atomic, for whoever calls it",
    "autograder.sandbox.launcher": "the sandbox's cgroup and process limits",
    "autograder.sandbox.isolation": "the student's own process: its scratch and helper files",
    "autograder.tools.generate": "the release, solutions and sample class",
    "autograder.tools.golden": "stock nbgrader's results on the corpus, and the page's table",
    "autograder.tools.gradescope.bundle": "autograder.zip and the course staged in it",
    "autograder.tools.gradescope.courses": "the course copied, visible tests alone, to grade in",
    "autograder.tools.gradescope.run": "results.json from a run's outcome, in Gradescope's folder",
    "autograder.pipeline.lms.grades": "the LMS's files, filled from the gradebook",
    "autograder.serve.inbound": "a hand-in's own files, copied from the exchange to be graded",
    "autograder.serve.ngshare": "a hand-in's own files, downloaded from ngshare to be graded",
    "autograder.pipeline.course.gradebook": "the stamp of the source the gradebook recorded",
    "autograder.pipeline.course.records": "a TA's records (extensions, removals) beside the course",
    "autograder.pipeline.course.extensions": "the extensions file, as agreed with nbgrader",
    "autograder.tools.extend": "the course's extensions file, as the TA changes it",
    "autograder.tools.engine_dist": "the engine's pyproject.toml and pins, for a bundle",
    "autograder.pipeline.lms.exported": "what an LMS export wrote, for status to compare",
    "autograder.pipeline.recording": "a dry run's scratch copy of the gradebook and its stamp",
    "autograder.pipeline.reports.template_cache": "the compiled page template, cached",
    "autograder.tools.check": "the notebook and its helpers, copied to a scratch folder",
    "autograder.tools.nbgrader_cli": "a scratch copy of the course for stock nbgrader",
    "autograder.tools.remove": "a removed student's folders moved aside, never rewritten",
}
WRITERS = re.compile(
    r"\.write_text\(|\.write_bytes\(|csv\.writer|open\([^)]*['\"][wa]b?['\"]|nbformat\.write\("
    r"|write_atomic\(|shutil\.(copy|copyfile|copy2|move)\(|os\.replace\("
    r"|update_or_create_|\.(manual_score|auto_score|late_submission_penalty)\s*=|(?<!results\.)Recorder\("
)


@pytest.mark.parametrize(
    "line",
    [
        'path.write_text("x")',
        "path.write_bytes(b'x')",
        "csv.writer(handle)",
        "open(path, 'w')",
        'open(path, "ab")',
        "nbformat.write(nb, path)",
        "write_atomic(folder / 'page.html', html)",
        "shutil.copyfile(page, target)",
        "shutil.move(str(a), b)",
        "os.replace(tmp, final)",
        "gb.update_or_create_grade(...)",
        "grade.manual_score = 3",
        "Recorder(course)",
    ],
)
def test_the_writers_pattern_sees_every_way_to_write(line):
    """Would the one-writer rule below see this write (it once missed write_atomic, so
    serve's pages and remove's rows were written unseen outside pipeline/results/)?"""
    assert WRITERS.search(line)


def test_only_the_results_module_writes_results():
    """Does nothing outside pipeline/results/ write a grade, a page, the CSV or the state?

    Every other module that writes a file says what and why in WRITES_NO_RESULT.
    """
    found = sorted(
        name
        for name, path in MODULES.items()
        if not name.startswith("autograder.pipeline.results")
        and name not in WRITES_NO_RESULT
        and WRITERS.search(path.read_text())
    )
    assert found == []
    unused = sorted(n for n in WRITES_NO_RESULT if not WRITERS.search(MODULES[n].read_text()))
    assert unused == []  # the list says only what is true
