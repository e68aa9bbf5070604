"""Where the course's pieces live: one place for every path the tools share.

All paths are relative to the repository root, the nbgrader course root.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "08-multi-head"
NOTEBOOK = "multi_head.ipynb"

SOURCE = Path("source") / ASSIGNMENT / NOTEBOOK
RELEASE = Path("release") / ASSIGNMENT / NOTEBOOK
SOLUTION = Path("solutions") / ASSIGNMENT / NOTEBOOK

# Files nbgrader needs to run the stock commands in a course folder.
CONFIG_FILES = ("nbgrader_config.py", "course_config.py")

SAMPLE_ROSTER = Path("samples") / "roster.toml"
SAMPLE_CLASS = Path("samples") / "class"
CORPUS = Path("tests") / "corpus"


def submission_path(student_id):
    """Where nbgrader expects a student's notebook, below a submissions folder."""
    return Path(student_id) / ASSIGNMENT / NOTEBOOK


def nbgrader_resources(student_id, db_url):
    """The ``resources`` nbgrader's preprocessors expect for one student's notebook."""
    return {
        "nbgrader": {
            "notebook": Path(NOTEBOOK).stem,
            "assignment": ASSIGNMENT,
            "student": student_id,
            "db_url": db_url,
        }
    }


def tool_environment():
    """``os.environ`` with this interpreter's ``bin/`` first on PATH.

    nbgrader runs ``alembic`` and ``jupyter`` by name, so a virtual environment
    that was not activated must still be found.
    """
    import os
    import sys

    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env
