"""The course's nbgrader settings, in one place.

nbgrader only reads a file called ``nbgrader_config.py``; ours loads this one,
so the stock commands (``nbgrader generate_assignment``, ``autograde``,
``generate_feedback``, ``export``, ``formgrader``) and ``python -m autograder``
all grade with the same settings.
"""

import os

c = get_config()  # noqa: F821 -- provided by traitlets when it loads the file

# nbgrader's exchange (release, submit, fetch feedback), declared here alone: the
# hub reads it from here and hands it to every student's server. By default it is
# in the course folder, so formgrader finds it wherever the course is cloned; on a
# shared machine or a hub, where the course folder is the instructor's alone, set
# NBGRADER_EXCHANGE to a folder students can reach (docs/instructors.md). Or, on a hub
# whose students share no filesystem, ngshare's service is the exchange and no folder is
# (docs/graded-on-submit.md): NBGRADER_NGSHARE_URL names it, for the instructor's nbgrader
# commands (its plugin) and for the course's service alike. Its plugin reads the user's
# name when imported: JUPYTERHUB_USER, else USER.
if os.environ.get("NBGRADER_NGSHARE_URL"):
    from ngshare_exchange import configureExchange

    os.environ.setdefault("USER", os.environ.get("JUPYTERHUB_USER") or "instructor")
    configureExchange(c, os.environ["NBGRADER_NGSHARE_URL"])
    c.Serve.ngshare_url = os.environ["NBGRADER_NGSHARE_URL"]
    c.Serve.ngshare_instructors = [os.environ.get("HUB_INSTRUCTOR") or "instructor"]
else:
    c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "exchange"
    )

c.CourseDirectory.course_id = "tiny-gpt-08"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.CourseDirectory.solution_directory = "solutions"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# A student may delete a test cell; it is put back from the source, so its
# points are still at stake (and still lost if the answer is wrong).
c.OverwriteCells.add_missing_cells = True

# Seconds one cell may run before the kernel is interrupted and the cell fails.
c.Execute.timeout = 30
# Timestamps in the outputs would make the executed solutions differ run to run.
c.Execute.record_timing = False

# Output kept per cell in the graded notebook and the feedback page.
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 100

# Feedback shows hidden tests' messages, never their code.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Paid once in the grading sandbox, before any student: numpy's lazy imports and
# IPython's display. The lesson's pictures are SVG text (lab_checks.heatmaps_svg):
# no plotting library is loaded. The modules preloaded are the notebook's own
# imports (c.Autograder.preload unset); limits (c.Autograder.wall, .memory, .jobs)
# keep their defaults.
c.Autograder.warm_up = """
import numpy as np
from IPython.display import display

np.random.default_rng(0).normal(size=2)
"""
