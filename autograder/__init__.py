"""Grading for the tiny-gpt multi-head attention lab.

``python -m autograder generate`` rebuilds the generated course files
(:mod:`autograder.generate`).
"""
