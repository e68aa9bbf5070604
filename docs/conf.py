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
exclude_patterns = ["_build", "_generated/*.md"]  # settings.md is included where it is read
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "substitution"]


def _bench_figures() -> dict[str, str]:
    """The figures prose quotes, read from what ``make bench`` recorded (never retyped)."""
    import re

    text = (Path(__file__).parent / "_generated" / "bench.txt").read_text()
    found = {
        "cpu_ratio": r"CPU ratio, stock / ours +: ([\d.]+)x",
        "wall_ratio_equal": r"wall ratio, \d+ cores each +: ([\d.]+)x",
        "wall_ratio_one_core": r"wall ratio, stock on 1 core +: ([\d.]+)x",
        "main_ms": r"ours, main process CPU +: (\d+) ms",
        "main_started_ms": r"ours, main process CPU +: \d+ ms per submission, of which (\d+) ms",
        "stock_ms": r"CPU ratio, stock / ours +: [\d.]+x +\(stock's cheaper run, (\d+) ms each\)",
        "ours_ms": r"ours, \d+ workers +[\d.]+ s +[\d.]+ s +(\d+) ms",
        "stock_whole_ms": r"stock, the whole job +[\d.]+ s +[\d.]+ s +(\d+) ms",
        "cpu_ratio_whole": r"CPU ratio, the whole job +: ([\d.]+)x",
    }
    figures = {}
    for name, pattern in found.items():
        match = re.search(pattern, text)
        if match is None:  # the build fails, naming what it could not find
            raise ValueError(f"docs/_generated/bench.txt has no {name} ({pattern})")
        figures[name] = match.group(1)
    return figures


myst_substitutions = _bench_figures()


def _settings_reference() -> None:
    """Write ``_generated/settings.md``: every ``c.Autograder`` and ``c.Serve`` setting, its
    kind, default and help, read from the classes that declare them, never retyped."""
    from traitlets import Enum

    from autograder.pipeline.settings import Autograder
    from autograder.serve.policy import Serve

    rows = ["| setting | kind | default | what it does |", "| --- | --- | --- | --- |"]
    traits = [(c.__name__, n, t) for c in (Autograder, Serve)
              for n, t in c.class_traits(config=True).items()]  # fmt: skip
    for owner, name, trait in traits:
        kind = type(trait).__name__
        if isinstance(trait, Enum):
            kind = " or ".join(f"`{v}`" for v in trait.values)
        default = trait.default_value
        shown = "unset" if default is None else f"`{default!r}`"
        said = trait.help.replace("|", "\\|").replace("\n", " ")
        rows.append(f"| `c.{owner}.{name}` | {kind} | {shown} | {said} |")
    out = Path(__file__).parent / "_generated" / "settings.md"
    text = "\n".join(rows) + "\n"
    if not out.is_file() or out.read_text() != text:
        out.write_text(text)


_settings_reference()

# Every reference must resolve: a moved module or a dead link fails the build (-W).
nitpicky = True
nitpick_ignore_regex = [
    # base classes from the standard library and other projects: not documented here
    (
        r"py:class",
        r"(ctypes|collections|datetime|enum|io|jinja2|tqdm|nbconvert|nbgrader|traitlets)\..*",
    ),
    (r"py:class", r".*\._\w+"),  # a private base class
]
autodoc_typehints = "none"  # the docstrings say what shapes and units mean
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": True}

html_theme = "alabaster"
pygments_style = "xcode"  # its colours keep 4.5:1 on the code blocks' background (WCAG AA)
html_title = project
html_static_path = ["_static"]  # custom.css: alabaster's footer at AA contrast


def _accessible(app: object, exception: Exception | None) -> None:
    """Mend two things every page of the theme gets wrong for WCAG 2.1 AA, after the build.

    A sidebar caption says role="heading" without a level (ARIA requires one),
    and a code block that scrolls cannot take the keyboard's focus.
    """
    if exception is not None:
        return
    out = Path(app.outdir)  # type: ignore[attr-defined]
    for page in out.rglob("*.html"):
        text = page.read_text()
        caption = '<p class="caption" role="heading">'
        mended = text.replace(caption, caption.replace(">", ' aria-level="2">'))
        code = '<div class="highlight"><pre>'
        mended = mended.replace(code, code.replace("<pre>", '<pre tabindex="0">'))
        if mended != text:
            page.write_text(mended)


def setup(app: object) -> None:
    """Sphinx's hook: mend the pages once they are written."""
    app.connect("build-finished", _accessible)  # type: ignore[attr-defined]
