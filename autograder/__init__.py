"""Grading for the tiny-gpt multi-head attention lab.

Commands (:mod:`autograder.cli`): ``grade`` a class, ``check`` one notebook
before submitting, ``generate`` the release, solutions and sample class from
the source, ``corpus`` to show what the hidden tests catch.

Grading runs as an ordered list of stages, one module each:

1. :mod:`~autograder.collect` finds one submission per student;
2. :mod:`~autograder.sanitize` reads and inspects it, then runs stock
   nbgrader's sanitising preprocessors;
3. :mod:`~autograder.execute` runs it: the student's cells in a sandboxed
   process (:mod:`~autograder.sandbox`, :mod:`~autograder.student`), the test
   cells here;
4. :mod:`~autograder.score` post-processes and scores it with nbgrader's own
   ``determine_grade``;
5. :mod:`~autograder.record` writes the autograded notebook, the gradebook and
   the feedback page; :mod:`~autograder.report` writes the CSV and summary.

:mod:`~autograder.grade` states that order and runs stages 2 to 4 in worker
processes (:mod:`~autograder.worker`), stage 5 in the main process.

Why the verdicts are computed outside the student's process
-----------------------------------------------------------
Stock nbgrader runs the hidden tests in the student's own kernel, after the
student's code. Whatever that code did to the kernel (an input transformer
that blanks later cells, a patched ``np.allclose``, an exception handler that
swallows failures, a replaced ``AssertionError``) decides the verdict, and no
list of forbidden words can catch every obfuscated variant. So here the test
cells never run in the student's process: they run in the grader's, and reach
the student's work only through :mod:`~autograder.wire`, which carries data
(numbers, strings, tuples, lists, numpy arrays) and nothing executable. A
student function becomes a proxy whose call sends arrays over and brings the
result back; its mistakes are judged by numpy as imported here. This keeps one
set of test cells for stock nbgrader, the students' notebook and this grader,
and the scores equal stock nbgrader's for every honest submission.

The sandbox then keeps student code from everything else: bubblewrap with a
read-only system and nothing of the course, fresh namespaces per student, no
network, resource limits (see :mod:`~autograder.sandbox`).
"""

import sys

# nbformat validates notebooks with jsonschema, which on import builds a parser
# for IRI strings from the optional ``rfc3987-syntax`` package (installed with
# Jupyter). That takes over a second, in every process that validates a
# notebook, and the notebook schema has no IRI fields. Marking the module
# absent makes jsonschema skip that checker; nothing else changes.
sys.modules.setdefault("rfc3987_syntax", None)
