"""Feedback pages in nbgrader's format, rendered where the submission was graded.

The page is nbgrader's own feedback template over the executed notebook, with
hidden tests' code removed (their messages stay). Scores come from the grading
that just happened (:class:`KnownGrades`, the stand-in for nbgrader's
``GetGrades``, which would read the same numbers back from the gradebook), so
pages render in the parallel workers instead of one after another.
"""

import re
from collections import OrderedDict
from pathlib import Path

import nbformat
import nbgrader
from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor
from traitlets.config import Config

from . import notebook

FORMGRADER = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
MAX_SHOWN_SOURCE = 64 * 2**10  # characters of one cell's text shown on the page
CACHED_ENTRIES = 512  # rendered cells remembered per process
CACHED_SOURCE = 16 * 2**10  # only texts up to this long are remembered


class BoundedCache(OrderedDict):
    """The most recently used rendered texts, at most :data:`CACHED_ENTRIES` of them."""

    def get_or_make(self, key, text, make):
        """``make()``, remembered under ``key`` when ``text`` is short enough to be shared."""
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = make()
        if len(text) <= CACHED_SOURCE:
            self[key] = value
            if len(self) > CACHED_ENTRIES:
                self.popitem(last=False)
        return value


class KnownGrades(NbGraderPreprocessor):
    """Put already computed points where nbgrader's feedback template looks for them.

    ``resources["nbgrader"]["points"]``: ``{grade_id: points or None}``.
    """

    def preprocess(self, nb, resources):
        earned = resources["nbgrader"]["points"]
        possible = notebook.points(nb)
        for cell in nb.cells:
            meta = notebook.nbgrader_meta(cell)
            if meta.get("solution") or meta.get("task"):
                meta["comment"] = None
            if meta.get("grade"):
                meta["score"] = earned.get(meta["grade_id"])
                meta["points"] = possible[meta["grade_id"]]
        resources["nbgrader"]["score"] = sum(p for p in earned.values() if p is not None)
        resources["nbgrader"]["max_score"] = sum(possible.values())
        resources["nbgrader"]["late_penalty"] = 0
        return nb, resources


def status_cell(status, detail):
    """A markdown cell that tells the student (and the TA) why grading was incomplete."""
    detail = detail[:1].upper() + detail[1:]
    return nbformat.v4.new_markdown_cell(
        f"> **Grading note: `{status}`.** {detail}. The points below are what the "
        "parts that could be graded earned; a TA has been told."
    )


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter, tuned for one notebook rendered for many students.

    Markdown and highlighted code are cached by their text: every student's
    notebook has the same prose and tests. The caches are bounded
    (:class:`BoundedCache`): a student's own long text is rendered, not kept.
    The exporter's last step, a BeautifulSoup pass that costs as much as the
    rest of the page, only adds alt text to images and ``tabindex`` to cells;
    two substitutions do the same.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._markdown, self._code = BoundedCache(), BoundedCache()
        self._highlight = Highlight2HTML(pygments_lexer="ipython3", parent=self)

    @pass_context
    def markdown2html(self, context, source):
        if context.get("cell", {}).get("attachments"):
            return super().markdown2html(context, source)
        return self._markdown.get_or_make(
            source, source, lambda: super(FeedbackExporter, self).markdown2html(context, source)
        )

    def _highlight_cached(self, source, language=None, metadata=None):
        return self._code.get_or_make(
            (source, language), source, lambda: self._highlight(source, language, metadata)
        )

    def from_notebook_node(self, nb, resources=None, **kw):
        """HTMLExporter.from_notebook_node, with the caches and without the soup."""
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", self._highlight_cached)
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


class Renderer:
    """Renders feedback pages; build one per process and reuse it."""

    def __init__(self, config):
        template = Config(config)
        template.HTMLExporter.template_name = "feedback"
        template.HTMLExporter.extra_template_basedirs = [str(FORMGRADER / "templates")]
        template.HTMLExporter.extra_template_paths = [
            str(FORMGRADER / "static" / "node_modules" / "bootstrap" / "dist" / "css")
        ]
        template.ClearHiddenTests.enforce_metadata = False
        # Student outputs may carry HTML; a <script> must not run in a TA's browser.
        template.HTMLExporter.sanitize_html = True
        self.exporter = FeedbackExporter(config=template)
        for preprocessor in (KnownGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor):
            self.exporter.register_preprocessor(preprocessor(config=template), enabled=True)

    def render(self, student_id, nb, points, status="ok", detail=""):
        """The feedback page (HTML) for one student's executed notebook (or None)."""
        nb = nbformat.v4.new_notebook() if nb is None else nbformat.from_dict(nb)
        for cell in nb.cells:
            if len(cell.get("source", "")) > MAX_SHOWN_SOURCE:
                hidden = len(cell.source) - MAX_SHOWN_SOURCE
                cell.source = (
                    cell.source[:MAX_SHOWN_SOURCE] + f"\n\n[{hidden:,} more characters not shown]"
                )
        if status != "ok":
            nb.cells.insert(0, status_cell(status, detail))
        resources = {"nbgrader": {"student": student_id, "points": points}}
        html, _ = self.exporter.from_notebook_node(nb, resources=resources)
        return html
