"""``autograder.zip``: what an instructor uploads as a Gradescope assignment's autograder."""

from __future__ import annotations

import logging
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import nbformat

from autograder.pipeline.course import dependencies, notebook
from autograder.pipeline.course.assignment import Assignment, find_assignment
from autograder.pipeline.course.gradebook import ensure_gradebook, sources_hash, sqlite_url
from autograder.pipeline.files import write_atomic
from autograder.tools import engine_dist
from autograder.tools.gradescope.courses import BUILT_FROM, copy_course, visible_only

_log = logging.getLogger(__name__)

COURSE_REQUIREMENTS = "requirements.txt"  #: the course's own packages, installed beside it

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq bubblewrap python3 python3-venv python3-pip >/dev/null
PYTHON=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    # Gradescope's Ubuntu 22.04 image has Python 3.10; the grader needs 3.11 or newer.
    apt-get install -y -qq software-properties-common >/dev/null
    add-apt-repository -y ppa:deadsnakes/ppa
    apt-get update -qq
    apt-get install -y -qq python3.11 python3.11-venv >/dev/null
    PYTHON=python3.11
fi
"$PYTHON" -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet --upgrade pip
/autograder/venv/bin/pip install --quiet --constraint course/constraints.txt --editable ./course
if [ -f course/requirements.txt ]; then  # the course's own packages
    /autograder/venv/bin/pip install --quiet --constraint course/constraints.txt \
        --requirement course/requirements.txt
fi
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission; it writes results/results.json.
# Gradescope unpacks autograder.zip into $ROOT/source/, copies this script to
# $ROOT/run_autograder and runs it from $ROOT: the course is in source/course/.
# GRADESCOPE_ROOT (default /autograder) and AUTOGRADER_PYTHON let a test run it elsewhere.
ROOT="${GRADESCOPE_ROOT:-/autograder}"
COURSE="$ROOT/source/course"
PYTHON="${AUTOGRADER_PYTHON:-/autograder/venv/bin/python}"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"  # only what this run's grader writes counts
cd "$COURSE" && "$PYTHON" -m autograder.tools.gradescope --root "$ROOT" --course "$COURSE"
status=$?
if [ "$status" != 0 ] || [ ! -s "$ROOT/results/results.json" ]; then
    # The grader could not even start: still tell the student, and the instructor, why.
    why="The autograder could not finish (exit status $status). Please tell your instructor."
    printf '{"score": 0, "output": "%s", "stdout_visibility": "hidden", "tests": []}\\n' \\
        "$why" > "$ROOT/results/results.json"
fi
exit 0
"""


def build(
    *,
    out: Path | str = "gradescope",
    assignment: str | None = None,
    course: Path | str | None = None,
) -> int:
    """Write ``out/autograder.zip`` for ``assignment``; prints where it is."""
    chosen = find_assignment(course, assignment)
    target = Path(out) / "autograder.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gradescope-build-") as staging:
        staged = _staged_course(chosen, Path(staging) / "course")
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable, as Gradescope runs them
                archive.writestr(info, text)
            for path in sorted(staged.rglob("*")):
                if path.is_file():
                    archive.write(path, f"course/{path.relative_to(staged)}")
    _log.info(f"wrote {target}: upload it as the autograder of a Gradescope programming assignment")
    return 0


def _staged_course(chosen: Assignment, into: Path) -> Path:
    """``into``: the zip's ``course/``, its gradebooks recorded once here, not on every run.

    The config, the grader's package, the source as grading needs it (no
    solution) and the release; ``gradebook.db`` with the assignment recorded, and
    :data:`VISIBLE`, the visible-tests twin a run also grades in, recorded too.
    Each gradebook is stamped with what it recorded (a run that finds a stamp
    that does not match records again).
    """
    extra = (COURSE_REQUIREMENTS,) if (chosen.root / COURSE_REQUIREMENTS).is_file() else ()
    copy_course(chosen, into, extra)
    engine_dist.write(into)  # the engine as installed here, pinned: for any course
    for name in chosen.notebooks:
        grading = grading_copy(
            notebook.read(chosen.source(name)), notebook.read(chosen.release(name))
        )
        (into / chosen.source(name).relative_to(chosen.root)).write_text(nbformat.writes(grading))
    course = find_assignment(into, chosen.id)
    ensure_gradebook(course, sqlite_url(into / "gradebook.db"))
    visible = visible_only(course, into)
    ensure_gradebook(visible, sqlite_url(visible.root / "gradebook.db"))
    write_atomic(visible.root / BUILT_FROM, sources_hash(course))
    return into


def grading_copy(source_nb: Any, release_nb: Any) -> Any:
    """The source as grading needs it: its tests (hidden ones too), no solution.

    Each answer cell holds the release's stub instead of the instructor's
    answer, so a student who reads the bundle in Gradescope's container finds
    no solution to copy; a name the answer binds and the stub does not is bound
    to None after it, since the grader takes from the student exactly the names
    the source's answers bind (:func:`~autograder.pipeline.grading.execute.student_names`).
    """
    stubs = notebook.answers(release_nb)
    copy = nbformat.from_dict(source_nb)
    for cell in copy.cells:
        if not (notebook.is_answer(cell) and notebook.grade_id(cell) in stubs):
            continue
        stub = stubs[notebook.grade_id(cell)]
        if cell.cell_type == "code":
            missing = sorted(dependencies.binds(cell.source) - dependencies.binds(stub))
            stub += "".join(f"\n{name} = None  # the answer binds it" for name in missing)
        cell.source = stub
    return copy
