"""What every test runs with: the engine started as its entry points start it."""

from autograder import startup

# As every entry point does, before nbformat is imported: the tests call the engine in-process.
startup.start()
