"""nbgrader's course as data: the assignment, its notebooks' cells, its gradebook.

And every reach into nbgrader's internals, in one module (:mod:`.internals`).
"""
