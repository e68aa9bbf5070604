"""The LMSs a class is graded from and exported to: one module each (its file names and
its grade file), and the totals they share (:mod:`~autograder.pipeline.lms.grades`)."""
