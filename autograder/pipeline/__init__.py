"""Grading a class: one folder per role, read in the order a student's grade passes through.

- :mod:`~autograder.pipeline.course`: nbgrader's course as data (the assignment,
  its cells, the gradebook, every reach into nbgrader's internals);
- :mod:`~autograder.pipeline.lms`: each LMS's file names and grade file, one module each;
- :mod:`~autograder.pipeline.submissions`: what the class handed in;
- :mod:`~autograder.pipeline.grading`: one submission, in a worker;
- :mod:`~autograder.pipeline.dispatch`: handing submissions to workers;
- :mod:`~autograder.pipeline.results`: what a grading gave, and where it is kept;
- :mod:`~autograder.pipeline.reports`: the pages and tables people read.

:mod:`~autograder.pipeline.grade` runs them (the class) and
:mod:`~autograder.pipeline.recording` keeps what each worker returns;
:mod:`~autograder.pipeline.settings` owns every limit's default.
"""
