"""Grading nbgrader courses: a sandboxed, resumable batch grader and its course tools.

Commands (:mod:`autograder.cli`): ``grade`` a class, ``serve`` (grade each
hand-in as it arrives through the exchange), ``check`` one notebook before
submitting, ``extend`` and ``remove`` (a TA's decisions), ``status``,
``export`` to an LMS, ``gradescope``, ``generate`` the release, solutions and
sample class from the source, ``corpus`` to show what the hidden tests catch.
Every command takes ``--assignment`` (an assignment folder under ``source/``;
the only one by default): the engine knows nbgrader, not any lab.

Three layers; imports flow one way, tools and serve -> pipeline -> sandbox
(``tests/test_layers.py`` checks it), with :mod:`autograder.diagnosis` beside
the lowest:

- :mod:`autograder.tools` and :mod:`autograder.serve`: the commands built on the
  pipeline (generate, the corpus and its golden file, stock nbgrader
  comparison, the self-check, Gradescope; the graded-on-submit service, which
  grades and records through the same workers, recording and locks as
  ``grade``);
- :mod:`autograder.pipeline`: grading a class, one folder per role, read in the
  order a grade passes through (see :mod:`autograder.pipeline` and the docs'
  architecture page);
- :mod:`autograder.sandbox`: everything that runs or talks to untrusted
  student code (launcher, the student's side, the data-only wire).

Importing the package does nothing else: each entry point starts the process
with :func:`autograder.startup.start`.

Why the verdicts are computed outside the student's process
-----------------------------------------------------------
Stock nbgrader runs the hidden tests in the student's own kernel, after the
student's code. Whatever that code did to the kernel (an input transformer
that blanks later cells, a patched ``np.allclose``, an exception handler that
swallows failures, a replaced ``AssertionError``) decides the verdict, and no
list of forbidden words can catch every obfuscated variant. So here the test
cells never run in the student's process: they run in the grader's, and reach
the student's work only through :mod:`~autograder.sandbox.wire`, which carries
data (numbers, strings, tuples, lists, numpy arrays) and nothing executable. A
student function becomes a proxy whose call sends arrays over and brings the
result back; its mistakes are judged by numpy as imported here. This keeps one
set of test cells for stock nbgrader, the students' notebook and this grader,
and the scores equal stock nbgrader's for every honest submission.

The sandbox then keeps student code from everything else: bubblewrap with a
read-only system and nothing of the course, an unprivileged user with no
capabilities, fresh namespaces and a fresh writable tmpfs per student, no
network, resource limits (see :mod:`autograder.sandbox.launcher`).
"""

__version__ = "0.2.0"  #: the engine's own version, apart from any course it grades
