"""Grading one submission, in a worker: read, inspect, sanitise, execute in the sandbox, score."""
