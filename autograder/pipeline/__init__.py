"""The grading pipeline: one module per stage, run in the order :mod:`.grade` states.

collect -> sanitize -> execute -> score -> record -> report, with
:mod:`.worker` running sanitize to score (and the feedback page) in worker
processes, and :mod:`.internals` holding every reach into nbgrader's internals.
"""
