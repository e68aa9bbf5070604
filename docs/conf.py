"""Sphinx configuration: the course's documentation (``make docs``)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

project = "tiny-gpt 8: Many heads at once"
author = "the course's authors"
copyright = "2026, the course's authors"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_generated/README.md"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# Every reference must resolve: a moved module or a dead link fails the build (-W).
nitpicky = True
nitpick_ignore_regex = [
    # base classes from the standard library and other projects: not documented here
    (r"py:class", r"(ctypes|collections|datetime|enum|io|tqdm|nbconvert|nbgrader|traitlets)\..*"),
    (r"py:class", r".*\._\w+"),  # a private base class
]
autodoc_typehints = "none"  # the docstrings say what shapes and units mean
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": True}

html_theme = "alabaster"
html_title = project
html_static_path: list[str] = []
