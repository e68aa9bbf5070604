"""Do the README and the docs say what is true, and can every command in them run?"""

import functools
import re
import shlex
from pathlib import Path

import pytest

from autograder import cli
from autograder.pipeline.course import notebook

from . import lab

README = lab.ROOT / "README.md"
DOCS = lab.ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
MAX_README_LINES = 150


RUNNABLE = ("python -m autograder", "make ", "nbgrader ")


def _commands(page: Path) -> list[str]:
    """Every command of ``page``: its bash blocks' lines, and inline code that is a command.

    Comments and prompts are stripped; inline code counts when it starts like one
    of :data:`RUNNABLE` (``python -m autograder grade submissions.zip`` in a sentence).
    """
    lines, inside = [], False
    text = page.read_text()
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = line.strip() in ("```bash", "```sh", "```shell") and not inside
            continue
        if inside and line.strip() and not line.strip().startswith("#"):
            lines.append(line.split("  #")[0].strip().removeprefix("$ "))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for span in re.findall(r"`([^`\n]+)`", prose.replace("\n", " ")):
        if span.startswith(RUNNABLE):
            lines.append(span.strip())
    return lines


def _subcommands() -> set[str]:
    import argparse

    top = cli.parser()
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return set(commands.choices)


@functools.cache
def _pip_options(command: str) -> frozenset[str]:
    """The options ``pip COMMAND --help`` lists (empty: no such command)."""
    import subprocess
    import sys

    shown = subprocess.run(
        [sys.executable, "-m", "pip", command, "--help"], capture_output=True, text=True
    )
    if shown.returncode != 0:
        return frozenset()
    return frozenset(re.findall(r"(?<![\w-])(--?[\w-]+)", shown.stdout))


def _make_targets() -> set[str]:
    text = (lab.ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", text, re.M))


COMMANDS = [(page.name, line) for page in PAGES for line in _commands(page)]


def test_readme_fits_on_two_screens():
    """Is the README short enough to read at once, with the docs one link away?"""
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, len(lines)
    assert "make docs" in README.read_text()


#: a placeholder of the docs' commands, and a value of its kind to parse in its place
EXAMPLES = {
    "SUBMISSIONS": "submissions.zip",
    "ID": "08-multi-head",
    "N": "2",
    "S": "30",
    "DIR": "out",
    "tcp://HOST:8786": "tcp://127.0.0.1:8786",
    "HOST": "127.0.0.1",
    "ADDRESS": "tcp://127.0.0.1:8786",
    "FILE": "file.csv",
    "NAME": "name",
    "WORKSHEET": "worksheet.csv",
    "GRADEBOOK": "gradebook.csv",
}
SHELL = {"mkdir", "chmod"}  # coreutils the docs use on paths they name


def concrete(line: str) -> list[str]:
    """The words of ``line`` with each placeholder replaced by an example of its kind
    (``[--out DIR]`` -> ``--out out``); an unknown placeholder stays, and fails to parse."""
    words = shlex.split(line.replace("[", "").replace("]", "").replace("...", ""))
    return [EXAMPLES.get(word, word) for word in words]


def _click_command(name: str):
    """Dask's command ``name`` (scheduler, worker) as its click object, to parse options."""
    if name == "scheduler":
        from distributed.cli.dask_scheduler import main
    else:
        from distributed.cli.dask_worker import main
    return main


@pytest.mark.parametrize("page, line", COMMANDS, ids=[f"{p}:{c[:40]}" for p, c in COMMANDS])
def test_every_command_in_the_docs_parses(page, line):
    """Does every command the docs show still exist, with options the program accepts?

    Placeholders are replaced by examples of their kind; each kind of command is
    checked by what reads it (our parser, make's targets, nbgrader's and Dask's
    subcommands and options, the files and variables named), and a kind with no
    check fails here rather than passing unread.
    """
    words = concrete(line)
    env = []  # VAR=value words before the program: its environment
    while words and re.match(r"^[A-Z_]+=", words[0]):
        env.append(words.pop(0))
    program = Path(words[0]).name if words else ""
    if words[:3] == ["python", "-m", "autograder"] and len(words) <= 4:
        # the program or a command named in a sentence: it must exist
        assert words[3:] in ([], ["--version"]) or words[3] in _subcommands(), line
    elif words[:3] == ["python", "-m", "autograder"]:
        try:
            cli.parser().parse_args(words[3:])
        except SystemExit as exit:
            pytest.fail(f"{page}: `{line}` does not parse (exit {exit.code})")
    elif words[:3] == ["python", "-m", "pip"]:  # installing the engine: pip's options
        from autograder import __version__

        offered = _pip_options(words[3])
        assert offered, f"{line}: pip has no command {words[3]}"
        options = [w.split("=")[0] for w in words[4:] if w.startswith("-")]
        assert all(o in offered for o in options), f"{line}: pip {words[3]} has no {options}"
        wheels = [w for w in words[4:] if w.endswith(".whl")]
        assert all(w.endswith(f"-{__version__}-py3-none-any.whl") for w in wheels), line
    elif words[0] == "make":
        assert set(w for w in words[1:] if "=" not in w) <= _make_targets(), line
    elif words[0] == "nbgrader":
        from nbgrader.apps import NbGraderApp

        assert words[1] in NbGraderApp.subcommands, line
    elif program == "dask":
        import click

        try:
            _click_command(words[1]).make_context(f"dask {words[1]}", words[2:])
        except click.ClickException as error:
            pytest.fail(f"{page}: `{line}`: {error.format_message()}")
        import dask.config

        for setting in env:  # DASK_A__B__C=1 is dask's a.b.c setting: it must exist
            key = setting.split("=")[0].removeprefix("DASK_").lower().replace("__", ".")
            assert dask.config.get(key.replace("_", "-"), None) is not None, setting
    elif words[0] == "." or words[0] == "source":
        assert (lab.ROOT / words[1]).is_file(), f"{line}: no {words[1]} (after make setup)"
    elif words[0] == "export":
        name = words[1].split("=")[0]
        readers = [lab.ROOT / "course_config.py", *(lab.ROOT / "hub").rglob("*.py")]
        assert any(name in path.read_text() for path in readers), f"{line}: nothing reads {name}"
    elif words[0] == "python" and words[1].endswith(".py"):
        # a student's command, in the lab folder they were given
        assert (lab.ASSIGNMENT.release_dir / words[1]).is_file(), line
    elif words[0] in SHELL:
        import shutil

        assert shutil.which(words[0]), line
    else:
        pytest.fail(f"{page}: `{line}`: no check for this kind of command; add one here")


@pytest.mark.parametrize(
    "line",
    [
        "python -m autograder grade SUBMISSIONS --no-such-option",
        "python -m autograder grade SUBMISSIONS [--timeout WHEN]",
        ".venv/bin/dask worker tcp://HOST:8786 --no-such-option 1",
        "DASK_DISTRIBUTED__SCHEDULER__NO_SUCH_SETTING=1 .venv/bin/dask scheduler",
        "export NOTHING_READS_THIS=1",
        "make no-such-target",
        "python no_such_file.py",
        "rm -rf out",
        "python -m pip install dist/nbgrader_sandboxed_autograder-0.0.1-py3-none-any.whl",
        "python -m pip wheel --no-such-option .",
    ],
)
def test_a_wrong_command_in_the_docs_fails(line):
    """Would each kind of check catch a command that no longer works (so none passes unread)?"""
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        test_every_command_in_the_docs_parses("page.md", line)


def test_commands_are_found():
    """Do the docs show the quick start, grading and exports as commands (so the test bites)?"""
    shown = " | ".join(line for _, line in COMMANDS)
    for expected in (
        "make grade",
        "make test",
        "python -m autograder export canvas",
        "python -m autograder gradescope",
        "nbgrader release_assignment",
    ):
        assert expected in shown, expected


def test_corpus_counts_are_stated_truly(entries):
    """Does the README's layout state the corpus as it is? (counts in docs/corpus.md too)"""
    correct = sum(1 for e in entries.values() if not e.loses)
    mistakes = len(entries) - correct
    text = (DOCS / "instructors.md").read_text() + (DOCS / "corpus.md").read_text()
    assert f"{correct} correct styles and {mistakes} realistic mistakes" in text


def test_gradescope_points_are_stated_truly(source_nb):
    """Is the Gradescope assignment's worth, as the docs state it, what results.json counts?"""
    meta = [notebook.nbgrader_meta(c) for c in source_nb.cells]
    autograded = sum(m.get("points", 0) for m in meta if m.get("grade") and not m.get("solution"))
    written = sum(m.get("points", 0) for m in meta if m.get("grade") and m.get("solution"))
    total = autograded + written
    stated = f"({autograded:g} here: the {total:g} less the written answer's {written:g})"
    assert stated in (DOCS / "exports.md").read_text(), stated


def test_sample_class_size_is_stated_truly():
    """Is the sample class the size the README says?"""
    students = len(list((lab.ROOT / lab.SAMPLE_CLASS).iterdir()))
    words = {12: "twelve"}
    assert f"the {words.get(students, students)} students of `samples/class/`" in README.read_text()


@pytest.mark.slow
def test_quick_start_output_is_what_grading_prints(graded_samples):
    """Are the README's quick-start scores, count and mean what grading the sample class gives?"""
    text = README.read_text()
    block = text[text.index("student        score  status") :].split("```")[0]
    rows = {
        r["student_id"]: r
        for r in __import__("autograder.pipeline.results", fromlist=["x"]).read_csv(
            graded_samples["out"] / "grades.csv"
        )
    }
    for name, score, top in re.findall(r"^(\w+)\s+(\d+) / (\d+)\s+ok$", block, re.M):
        row = rows[graded_samples["ids"][name]]
        assert (float(row["score"]), float(row["max_score"])) == (float(score), float(top)), name
    done = graded_samples["done"].stdout
    count = re.search(r"graded (\d+) submission", block).group(1)
    mean = re.search(r"mean score ([\d.]+) / (\d+)", block).groups()
    assert f"graded {count} submission(s)" in done and f"mean score {mean[0]} / {mean[1]}" in done
