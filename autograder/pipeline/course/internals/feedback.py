"""nbgrader's feedback page: its template, found where formgrader keeps it, and the
exporter that renders it, its highlighted code and prose kept between runs."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import nbgrader
import nbgrader.api
import nbgrader.dbutil
from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from traitlets.config import Config

FORMGRADER = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"


def feedback_template(config: Config) -> Config:
    """``config`` with nbgrader's own feedback template, found where formgrader keeps it.

    As nbgrader's converters do (``BaseConverter``), nbconvert's default
    preprocessors are off. nbconvert 7.17 validates every cell after every
    preprocessor, enabled or not (most of a page's time); the exporter this
    configures validates nothing (``FeedbackExporter._preprocess``), and an
    exporter of nbconvert's own given it validates once, after the last step.
    """
    template = Config(config)
    template.Exporter.default_preprocessors = []
    template.HTMLExporter.optimistic_validation = True
    template.HTMLExporter.template_name = "feedback"
    template.HTMLExporter.extra_template_basedirs = [str(FORMGRADER / "templates")]
    template.HTMLExporter.extra_template_paths = [
        str(FORMGRADER / "static" / "node_modules" / "bootstrap" / "dist" / "css")
    ]
    return template


def _version(distribution: str) -> str:
    """An installed distribution's version, or "" if it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ""


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter, tuned for one notebook rendered for many students.

    Markdown and highlighted code are cached by their text (bounded caches from
    ``make_cache``): every student's notebook has the same prose and tests. A
    template may cache whole cells too, with the filters ``cell_key``,
    ``cached_cell`` and ``remember_cell`` (the feedback page's does).
    ``clean`` turns nbconvert's HTML for Markdown into what a page may show
    (the feedback page passes :func:`~autograder.pipeline.reports.markup.safe_markdown_html`).
    nbconvert 7.17's last step, a BeautifulSoup pass that costs as much as the
    rest of the page, only adds alt text to images and ``tabindex`` to cells;
    two substitutions do the same. ``kept``: where compiled templates are kept
    between runs (:mod:`~autograder.pipeline.reports.template_cache`). Uses the
    exporter's private ``_init_resources`` and ``_nb_metadata``.
    """

    #: outputs nbconvert gives a fresh id on every page: a cell holding one is never reused
    FRESH_EVERY_TIME = ("application/javascript", "application/vnd.jupyter.widget-view+json")
    #: characters of a cell's HTML, at most, that are remembered (a page's cells: 1,400 median)
    MAX_CELL_HTML = 32 * 2**10

    def __init__(
        self,
        make_cache: Any,
        clean: Callable[[str], str],
        kept: jinja2.BytecodeCache | None = None,
        **kwargs: Any,
    ) -> None:
        self._kept = kept  # before nbconvert makes its environment, in super().__init__
        super().__init__(**kwargs)
        self._clean = clean
        self._markdown, self._code, self._cells = make_cache(), make_cache(), make_cache()
        self._css: dict[tuple[int, Any], list[str]] = {}  # (preprocessor, config_dir) -> header
        self._highlight = Highlight2HTML(pygments_lexer="ipython3", parent=self)

    def _create_environment(self) -> jinja2.Environment:
        """nbconvert's environment, keeping what it compiles in ``kept`` (if given)."""
        environment = super()._create_environment()
        environment.bytecode_cache = self._kept
        return environment

    def _preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        """The enabled preprocessors in turn, on ``nb`` and ``resources`` themselves.

        nbconvert's own deep-copies both, normalizes and validates the notebook
        after the last step. A page's notebook and resources are built for it
        alone (:meth:`~autograder.pipeline.reports.feedback_page.Renderer.render`),
        its cells were validated when the submission was read, and each output
        when it was made (``execute``); ``tests/engine/test_stages.py`` validates
        rendered pages' notebooks and compares the pages with nbconvert's. The
        CSS header, the same on every page, is made once per preprocessor and
        configuration folder.
        """
        for preprocessor in self._preprocessors:
            if type(preprocessor) is CSSHTMLHeaderPreprocessor and preprocessor.enabled:
                key = (id(preprocessor), resources.get("config_dir"))
                if key not in self._css:
                    self._css[key] = preprocessor._generate_header(resources)
                resources["inlining"] = {"css": self._css[key]}
                continue
            nb, resources = preprocessor(nb, resources)
        return nb, resources

    def _cell_key(self, cell: Any, *page: Any) -> str:
        """What a cell's HTML depends on, as text: the cell, and what of the page it shows
        (``page``, as the template says); "" for a cell whose HTML is made afresh each time."""
        for output in cell.get("outputs", []):
            if any(kind in output.get("data", {}) for kind in self.FRESH_EVERY_TIME):
                return ""
        try:
            return json.dumps([cell, page], sort_keys=True)
        except (TypeError, ValueError):
            return ""

    def _cached_cell(self, key: str) -> str:
        """The HTML a cell with this key was rendered to before; "" if none is remembered."""
        return str(self._cells.get(key, "")) if key else ""

    def _remember_cell(self, html: str, key: str) -> str:
        """``html``, remembered as the rendering of cells with this key (if not too long)."""
        if not key or len(html) > self.MAX_CELL_HTML:
            return html
        return str(self._cells.get_or_make(key, key, lambda: html))

    @pass_context
    def markdown2html(self, context: Any, source: str) -> str:
        """Markdown as HTML, made safe by ``clean``."""
        if context.get("cell", {}).get("attachments"):
            return self._clean(super().markdown2html(context, source))
        return self._markdown.get_or_make(
            source,
            source,
            lambda: self._clean(super(FeedbackExporter, self).markdown2html(context, source)),
        )

    def markdown_made(self, source: str) -> str | None:
        """The HTML :meth:`markdown2html` made of ``source`` this run, if it is remembered."""
        return self._markdown.get(source)

    def remember_markdown(self, source: str, html: str) -> None:
        """Take ``html`` as what :meth:`markdown2html` gives for ``source`` (kept from before)."""
        self._markdown.get_or_make(source, source, lambda: html)

    def markdown_making(self) -> str | None:
        """Everything Markdown's HTML depends on besides its text, as text: the versions that
        parse, highlight, sanitise and draw it, the exporter's options, and the code of this
        module and of ``clean``'s. None where it depends on files too (embedded images)."""
        if self.embed_images:
            return None
        module = sys.modules.get(getattr(self._clean, "__module__", ""))
        try:
            code = [
                hashlib.sha256(Path(path).read_bytes()).hexdigest()
                for path in (__file__, getattr(module, "__file__", None) or __file__)
            ]
        except OSError:
            return None
        made_by = ("nbconvert", "mistune", "nh3", "latex2mathml", "pygments")
        return json.dumps(
            {
                "versions": [_version(name) for name in made_by],
                "options": [self.anchor_link_text, self.exclude_anchor_links, self.lexer_options],
                "clean": getattr(self._clean, "__qualname__", repr(self._clean)),
                "code": code,
            },
            sort_keys=True,
            default=repr,
        )

    def highlighted(self, source: str, metadata: Any = None) -> str:
        """A code cell's text as the page's template highlights it, remembered for every page."""
        return self._highlight_cached(source, None, metadata)

    def remember_highlighted(self, source: str, html: str) -> None:
        """Take ``html`` as what :meth:`highlighted` gives for ``source`` (kept from before)."""
        self._code.get_or_make((source, None), source, lambda: html)

    def highlighting(self) -> str:
        """Everything the highlighted HTML depends on besides the code: versions and options."""
        import pygments  # noqa: PLC0415 (nbconvert imports it with its filters)

        lexers = ("IPython", "ipython_pygments_lexers", "nbconvert")
        return json.dumps(
            {
                "pygments": pygments.__version__,
                "lexer": self._highlight.pygments_lexer,
                "versions": [_version(name) for name in lexers],
                "options": self._highlight.extra_formatter_options,
            },
            sort_keys=True,
            default=repr,
        )

    #: Markdown that has the parser and the sanitiser build their common rules (both compile
    #: them on first use): a worker forked after :meth:`warm_markdown` starts with them
    WARM_MARKDOWN = (
        "# A heading\n\nSome *text*, **bold**, `code`, a [link](https://example.org), $x^2$ "
        "and\n\n$$y = 2x$$\n\n- one\n- two\n\n1. first\n\n> quoted\n\n```python\nx = 1\n```"
        "\n\n| a | b |\n| - | - |\n| 1 | 2 |\n"
    )

    def warm_markdown(self) -> None:
        """Build the Markdown parser's and the sanitiser's rules once, rendering nothing kept."""
        self._clean(super().markdown2html({}, self.WARM_MARKDOWN))

    def compile_lexer(self) -> None:
        """Build the highlighter's lexer once (pygments compiles its rules on first use)."""
        self._highlight(" ")

    def _highlight_cached(self, source: str, language: Any = None, metadata: Any = None) -> str:
        return self._code.get_or_make(
            (source, language), source, lambda: self._highlight(source, language, metadata)
        )

    def from_notebook_node(
        self, nb: Any, resources: Any = None, **kw: Any
    ) -> tuple[Any, dict[str, Any]]:
        """HTMLExporter.from_notebook_node, with the caches and without the soup."""
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", self._highlight_cached)
        self.register_filter("cell_key", self._cell_key)
        self.register_filter("cached_cell", self._cached_cell)
        self.register_filter("remember_cell", self._remember_cell)
        self.register_filter(
            "filter_data_type",
            WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources
            ),
        )
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        html = re.sub(
            r"<img(?![^>]*\balt=)",
            '<img alt="No description has been provided for this image"',
            html,
        )
        html = re.sub(
            r'(<div class="[^"]*\b(?:jp-Cell-inputWrapper|jp-OutputArea-output)\b[^"]*")',
            r'\1 tabindex="0"',
            html,
        )
        return html, resources
