"""Naming the cause of a wrong answer, in the grader's trusted process.

- :mod:`~autograder.diagnosis.mutants` names a wrong answer by the one edit of
  the test's reference that gives its values (generated from the reference's
  source, never listed by hand);
- :mod:`~autograder.diagnosis.shapes` says what a wrong shape is, in the
  names of the lesson's sizes (flattened, transposed, joined on the wrong axis).

A course's hidden tests import them (``from autograder.diagnosis import
Mutants, shape_reason``); nothing here runs in a student's process (that
side explains crashes: :mod:`autograder.sandbox.crash_reasons`).
"""

from autograder.diagnosis.mutants import Edit, Mutants
from autograder.diagnosis.shapes import shape_reason

__all__ = ["Edit", "Mutants", "shape_reason"]
