"""The command line, run as a TA runs it but without its start-up: :func:`run_command_line`."""

import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path


class Ran(subprocess.CompletedProcess):
    """A completed process, and the pid it ran as (by which a grading run's sandboxes are found)."""

    pid: int


# A process that has imported the command line, as ``python -m autograder`` has before it
# parses its arguments; each run is a fork of it. Started on first use, once per pytest process.
_COMMAND_LINE = multiprocessing.get_context("forkserver")
_COMMAND_LINE.set_forkserver_preload(["autograder.__main__", "nbgrader.apps.nbgraderapp", __name__])


def run_command_line(
    argv: Sequence[str],
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    program: str = "autograder",
) -> Ran:
    """``python -m autograder *argv`` to its end, its output captured: what it did, and its pid.

    As a shell runs it in ``cwd`` (else this process's folder), but for the 2 s
    of imports every such process starts with: the run is a fork of a process
    that made them once (a ``multiprocessing`` fork server), given this
    process's environment, its exit status what the command returned. For what
    the command does once started; how it starts (Ctrl-C, a terminal, a
    missing package) is tested with the command itself.
    """
    command = [sys.executable, "-m", program, *argv]
    with tempfile.NamedTemporaryFile() as out, tempfile.NamedTemporaryFile() as err:
        where = (
            list(argv), dict(env if env is not None else os.environ), str(cwd or os.getcwd()),
            out.name, err.name, program,
        )  # fmt: skip
        running = _COMMAND_LINE.Process(target=_command_line, args=where)
        running.start()
        running.join(timeout)
        if running.exitcode is None:
            running.kill()
            running.join()
            raise subprocess.TimeoutExpired(command, timeout)
        texts = [
            Path(file.name).read_bytes().decode(errors="replace").replace("\r\n", "\n")
            for file in (out, err)
        ]
    done = Ran(command, running.exitcode, *texts)
    done.pid = running.pid
    return done


def run_nbgrader(argv: Sequence[str], timeout: float, cwd: Path, env: dict[str, str]) -> Ran:
    """``python -m nbgrader *argv`` as :func:`run_command_line` runs ours: a student's or an
    instructor's nbgrader command, with its environment ``env`` (``HOME``: whose)."""
    return run_command_line(argv, timeout, cwd, env, program="nbgrader")


def _command_line(
    argv: list[str], env: dict[str, str], cwd: str, out: str, err: str, program: str
) -> None:
    """In the forked process: become the command's process, then run it."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.dup2(handle, fd)
        os.close(handle)
    if program == "nbgrader":
        from nbgrader.apps.nbgraderapp import NbGraderApp

        NbGraderApp.launch_instance(argv)
        sys.exit(0)
    from autograder.__main__ import main

    sys.exit(main(argv))  # multiprocessing flushes stdout and stderr and exits with it


def interruptible(command: list[str], **popen: object) -> subprocess.Popen:
    """Start ``command`` in its own session as a terminal starts it: Ctrl-C (SIGINT) live.

    A command started in the background by a script (``make test &``, a CI
    runner) inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt; a test of what Ctrl-C does must not depend on how the
    suite itself was started.
    """
    return subprocess.Popen(
        command,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        **popen,  # type: ignore[arg-type]
    )
