"""``python -m autograder`` and the ``autograder`` command: see :mod:`autograder.cli`."""

import sys

from autograder import startup

startup.start()  # before the command line's imports bring in nbformat (see startup.start)

with startup.loading():
    from autograder.cli import main

if __name__ == "__main__":
    sys.exit(main())
