"""Graded on submit: ``python -m autograder serve`` grades each hand-in as it arrives in
nbgrader's exchange and returns its page there (:mod:`.service`)."""
