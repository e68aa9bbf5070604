"""The grader on Gradescope: ``python -m autograder gradescope [--out DIR]``.

One module per job: :mod:`.bundle` builds the zip, :mod:`.courses` makes the
course copies a run grades in, :mod:`.run` grades one submission in
Gradescope's container (``python -m autograder.tools.gradescope``),
and :mod:`.results_json` writes what it found as Gradescope's ``results.json``.

:func:`.bundle.build` writes ``DIR/autograder.zip``, the file an instructor uploads as
a Gradescope programming assignment's autograder:

- ``setup.sh``: run once by Gradescope (as root, on its Ubuntu image): installs
  Python 3.11+ and bubblewrap, then the course's pinned packages into
  ``/autograder/venv``;
- ``run_autograder``: run for every submission: grades the notebook in
  ``$GRADESCOPE_ROOT/submission/`` (default root ``/autograder``) with this
  grader, sandbox included, and writes ``$GRADESCOPE_ROOT/results/results.json``;
- ``course/``: the course's configuration, source and release folders (and
  its ``requirements.txt``, if it has one), and the grader as it is installed
  where the zip was built (the ``autograder`` package with a ``pyproject.toml``
  and ``constraints.txt`` written from the installed distribution:
  :mod:`autograder.tools.engine_dist`). Never the solutions, the sample class or the tests.
  Its gradebook, and ``visible-course/`` (the same course with the visible
  tests alone), come with the assignment recorded: a run copies them instead
  of recording it twice for every submission.

:func:`.run.run` (what ``run_autograder`` calls) writes Gradescope's results: one
test per graded cell (its ``grade_id`` and what it checks, points, the failure
message, ``visible`` for visible tests and ``after_published`` for hidden
ones), the written answer noted for manual grading, a summary as the top-level
output, and an instructor-only test with the grader's log (and a note when the
container forbids the sandbox). A ``results.json`` is written whatever
happens: an unreadable notebook, a missing one, or a grader that fails.
"""
