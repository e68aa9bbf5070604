"""What every pytest run here starts with, before any plugin imports nbformat.

The engine is started as its entry points start it (:func:`autograder.startup.start`):
the tests call it in-process. nbval's plugin imports nbformat when it loads, so
it is loaded here, after the start, instead of by its entry point
(``-p no:nbval`` in pyproject.toml); otherwise every run pays jsonschema's
slow IRI checker, about 1.5 s.
"""

from autograder import startup

startup.start()

pytest_plugins = ["nbval.plugin"]
