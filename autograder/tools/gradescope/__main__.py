"""``python -m autograder.tools.gradescope``: run_autograder's entry (:func:`.run.main`)."""

import sys

from autograder import startup

startup.start()  # before the imports below bring in nbformat

from autograder.tools.gradescope.run import main  # noqa: E402

sys.exit(main())
