"""Feedback pages in nbgrader's format, rendered where the submission was graded.

The page is nbgrader's own feedback template over the executed notebook (an
assignment's notebooks one after another), through ``GenerateFeedback``'s
preprocessors as the course configures them (``ClearHiddenTests`` removes
hidden tests' code; their messages stay). Scores come from the grading that
just happened (:class:`KnownGrades`, the stand-in for nbgrader's ``GetGrades``,
which would read the same numbers back from the gradebook), so pages render in
the parallel workers instead of one after another.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets.config import Config

from . import internals, notebook
from .notebook import Columns

MAX_SHOWN_SOURCE = 64 * 2**10  # characters of one cell's text shown on the page
CACHED_ENTRIES = 512  # rendered cells remembered per process
CACHED_SOURCE = 16 * 2**10  # only texts up to this long are remembered


class Graded(Protocol):
    """What a page says about grading as a whole: a status and why."""

    status: Any
    detail: str


class BoundedCache(OrderedDict):
    """The most recently used rendered texts, at most :data:`CACHED_ENTRIES` of them."""

    def get_or_make(self, key: Any, text: str, make: Callable[[], str]) -> str:
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

    ``resources["nbgrader"]["points"]``: ``{column: points or None}``, and each
    graded cell's ``grade_id`` is its column (see :meth:`Renderer.page`).
    """

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        earned = resources["nbgrader"]["points"]
        comments = resources["nbgrader"].get("comments", {})
        possible = notebook.points(nb)
        for cell in nb.cells:
            meta = notebook.nbgrader_meta(cell)
            if meta.get("solution") or meta.get("task"):
                meta["comment"] = comments.get(meta.get("grade_id"))
            if meta.get("grade"):
                meta["score"] = earned.get(meta["grade_id"])
                meta["points"] = possible[meta["grade_id"]]
        resources["nbgrader"]["score"] = sum(p for p in earned.values() if p is not None)
        resources["nbgrader"]["max_score"] = sum(possible.values())
        resources["nbgrader"]["late_penalty"] = 0
        return nb, resources


def status_cell(status: Any, detail: str) -> Any:
    """A markdown cell that tells the student (and the TA) why grading was incomplete."""
    detail = detail[:1].upper() + detail[1:]
    return nbformat.v4.new_markdown_cell(
        f"> **Grading note: `{status}`.** {detail}. The points below are what the "
        "parts that could be graded earned; a TA has been told."
    )


def awaiting(html: str, grade_id: str, possible: float) -> str:
    """``html`` with an ungraded written answer's "Score: 0.0 / N" read as awaiting a TA.

    nbgrader's template prints a missing score as 0, which reads as a fail; the
    summary line and the cell's heading say "awaiting a TA" instead.
    """
    anchor = re.escape(grade_id)
    note = f"awaiting a TA ({possible:g} points)"
    html = re.sub(
        rf'(<a href="#{anchor}">[^<]*</a>) \(Score: [0-9.]+ / [0-9.]+\)', rf"\1 ({note})", html
    )
    return re.sub(
        rf'(<a name="{anchor}"></a>.*?)Score: [0-9.]+ / [0-9.]+',
        lambda m: m.group(1) + note[:1].upper() + note[1:],
        html,
        count=1,
        flags=re.DOTALL,
    )


class Renderer:
    """Renders feedback pages; build one per process and reuse it."""

    def __init__(self, config: Config) -> None:
        template = internals.feedback_template(config)
        template.ClearHiddenTests.enforce_metadata = False
        # Student outputs may carry HTML; a <script> must not run in a TA's browser.
        template.HTMLExporter.sanitize_html = True
        self.exporter = internals.FeedbackExporter(BoundedCache, config=template)
        for step in internals.feedback_steps(config):
            if issubclass(step, internals.GRADES_FROM_GRADEBOOK):
                step = KnownGrades
            self.exporter.register_preprocessor(step(config=template), enabled=True)

    def warm_up(self) -> None:
        """Compile the template, so the first student's page is no slower than the rest."""
        self.exporter.from_notebook_node(
            nbformat.v4.new_notebook(), resources={"nbgrader": {"student": "", "points": {}}}
        )

    def render(
        self,
        student_id: str,
        notebooks: dict[str, Any],
        columns: Columns,
        points: dict[str, float | None],
        graded: Graded,
        comments: dict[str, str] | None = None,
    ) -> str:
        """The feedback page (HTML) for one student's executed notebooks.

        notebooks: ``{notebook file name: executed notebook, or None}``;
        points: ``{column: points}``, None for an answer a TA has not graded yet;
        comments: ``{column: the TA's comment}``.
        """
        nb = self.page(notebooks, columns)
        if str(graded.status) != "ok":
            nb.cells.insert(0, status_cell(graded.status, graded.detail))
        resources = {
            "nbgrader": {"student": student_id, "points": points, "comments": comments or {}}
        }
        html, _ = self.exporter.from_notebook_node(nb, resources=resources)
        manual = set(columns.possible) - set(columns.test_columns)
        for column in sorted(c for c in manual if points.get(c) is None):
            html = awaiting(html, column, columns.possible[column])
        return html

    @staticmethod
    def page(notebooks: dict[str, Any], columns: Columns) -> Any:
        """One notebook to render: each executed notebook in turn, under its name if several.

        Graded cells carry their column as ``grade_id``; long texts are cut.
        """
        page = nbformat.v4.new_notebook()
        for name, nb in notebooks.items():
            if len(notebooks) > 1:
                page.cells.append(nbformat.v4.new_markdown_cell(f"# {name}"))
            if nb is None:
                continue
            nb = nbformat.from_dict(nb)
            page.metadata = page.metadata or nb.metadata
            for cell in nb.cells:
                meta = notebook.nbgrader_meta(cell)
                if meta.get("grade"):
                    meta["grade_id"] = columns.of.get((name, meta["grade_id"]), meta["grade_id"])
                if len(cell.get("source", "")) > MAX_SHOWN_SOURCE:
                    hidden = len(cell.source) - MAX_SHOWN_SOURCE
                    cell.source = (
                        cell.source[:MAX_SHOWN_SOURCE]
                        + f"\n\n[{hidden:,} more characters not shown]"
                    )
                page.cells.append(cell)
        return page
