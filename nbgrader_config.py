"""nbgrader reads only this file name; the course's settings live in course_config.py."""

load_subconfig("course_config.py")  # noqa: F821 -- provided by traitlets
