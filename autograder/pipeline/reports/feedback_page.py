"""Feedback pages, rendered where the submission was graded.

A page opens with a summary a student reads at a glance (:func:`summary`: each
answer's points, its failing tests with what they check and their messages,
"not attempted" for a stub, "awaiting a TA" or "graded by a TA" for a written
answer), then shows the executed notebooks (an assignment's notebooks one after
another). The ``feedback_page`` template extends nbgrader's feedback template.
The notebooks go through ``GenerateFeedback``'s
preprocessors as the course configures them (``ClearHiddenTests`` removes
hidden tests' code; their messages stay). Scores come from the grading that
just happened (:class:`KnownGrades`, the stand-in for nbgrader's ``GetGrades``,
which would read the same numbers back from the gradebook), so pages render in
the parallel workers instead of one after another.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.pipeline.course import internals, notebook
from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.notebook import Columns
from autograder.pipeline.reports import markup, template_cache

MAX_SHOWN_SOURCE = 64 * 2**10  #: characters of one cell's text shown on the page
CACHED_ENTRIES = 512  #: rendered cells remembered per process
CACHED_SOURCE = 16 * 2**10  #: only texts up to this long are remembered


class GradingStatus(Protocol):
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
        resources["nbgrader"]["late_penalty"] = resources["nbgrader"].get("late_penalty", 0)
        return nb, resources


TEMPLATES = Path(__file__).parent / "templates"  #: feedback_page: the summary, then the cells
NOT_ATTEMPTED_MARKDOWN = "YOUR ANSWER HERE"  #: nbgrader's stub for a written answer


def _sentence(text: str) -> str:
    """``text`` starting with a capital, unless it starts with a file's name (kept as it is)."""
    first = text.split(" ", 1)[0]
    return text if "." in first or "_" in first else text[:1].upper() + text[1:]


def grading_note(status: Any, detail: str) -> str:
    """What the page says when grading was incomplete, or a note beside a complete grading.

    "" when it was complete with nothing to say (a note: a renamed notebook, an
    old notebook format upgraded).
    """
    if str(status) == "ok":
        return f"Note: {_sentence(detail)}." if detail else ""
    detail = _sentence(detail)
    return (
        f"Grading note ({status}): {detail}. The points shown are what the parts that "
        "could be graded earned; a TA has been told."
    )


def unattempted(nb: Any, stubs: dict[str, str]) -> list[str]:
    """The answers of ``nb`` still holding their stub, or gone; in the release's order.

    stubs: ``{answer id: the text the release gives}``.
    """
    theirs = {notebook.grade_id(c): c for c in nb.cells if notebook.is_answer(c)}
    return [
        answer
        for answer, stub in stubs.items()
        if isinstance(answer, str)
        and (
            answer not in theirs
            or theirs[answer].source.strip() in (stub.strip(), NOT_ATTEMPTED_MARKDOWN)
        )
    ]


def summary(
    notebooks: dict[str, Any],
    columns: Columns,
    points: dict[str, float | None],
    comments: dict[str, str],
    stubs: dict[str, dict[str, str]],
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """What a student reads first: every answer, its points and its failing tests.

    notebooks: ``{name: executed notebook or None}``; points: ``{column: points}``
    (None: a TA has not graded it yet); stubs: ``{name: {answer id: release text}}``.
    Returns ``(answers, cells)``: one dict per answer, in notebook order (see the
    ``feedback_page`` template for the keys), and ``{column or answer id: what a
    cell's heading says}``.
    """
    answers: list[dict[str, Any]] = []
    cells: dict[str, dict[str, Any]] = {}
    for name, nb in notebooks.items():
        if nb is None:
            continue
        ids = [a for a in stubs.get(name, {}) if isinstance(a, str)]
        found = {a: _answer(a, name, columns, points, comments) for a in ids}
        above = None  # the answer cell nearest above: what a test named otherwise grades
        for cell in nb.cells:
            if notebook.is_answer(cell) and notebook.grade_id(cell) in found:
                above = notebook.grade_id(cell)
            if not notebook.is_test(cell):
                continue
            test = columns.of.get((name, notebook.grade_id(cell)), notebook.grade_id(cell))
            earned, possible = points.get(test), columns.possible.get(test, 0.0)
            passed = earned is not None and earned >= possible
            cells[test] = {"state": "passed" if passed else "failed", "earned": earned}
            cells[test]["possible"] = possible
            owner = notebook.answer_of(str(notebook.grade_id(cell)), ids) or above
            if owner is None:
                continue
            found[owner]["earned"] = (found[owner]["earned"] or 0.0) + (earned or 0.0)
            found[owner]["possible"] += possible
            if not passed:
                found[owner]["failing"].append(
                    {
                        "id": test,
                        "checks": notebook.what_it_checks(cell.source),
                        "message": _message(cell),
                    }
                )
        skipped = set(unattempted(nb, stubs.get(name, {})))
        for answer_id, answer in found.items():
            if answer_id in skipped:
                answer["state"] = "not attempted"
            elif answer["manual"]:
                graded = answer["earned"] is not None
                answer["state"] = "graded by a TA" if graded else "awaiting a TA"
            elif answer["failing"]:
                answer["state"] = "failing"
            if not answer["manual"]:
                cells[answer_id] = dict(answer, state=_heading(answer))
            answers.append(answer)
    for answer in answers:
        if answer["manual"]:
            cells[answer["anchor"]] = dict(answer, state=_heading(answer))
    return answers, cells


def _answer(
    answer_id: str,
    name: str,
    columns: Columns,
    points: dict[str, float | None],
    comments: dict[str, str],
) -> dict[str, Any]:
    """An answer's summary before its tests are counted: a manual answer has its own points."""
    column = columns.of.get((name, answer_id))
    manual = column is not None and column not in columns.test_columns
    return {
        "id": answer_id,
        "anchor": column or answer_id,
        "earned": points.get(column) if manual and column else None,
        "possible": columns.possible[column] if manual and column else 0.0,
        "state": "done",
        "manual": manual,
        "comment": comments.get(column or answer_id) or comments.get(answer_id, ""),
        "failing": [],
    }


def _heading(answer: dict[str, Any]) -> str:
    """What an answer cell's heading says about it."""
    if answer["state"] == "failing":
        count = len(answer["failing"])
        return f"{count} test{'s' if count != 1 else ''} failing"
    if answer["state"] == "done" and not answer["possible"]:
        return "no tests of its own"  # nothing failed, and nothing was checked
    return "all tests pass" if answer["state"] == "done" else answer["state"]


def _message(cell: Any) -> str:
    """The error a failing test cell showed, ``"AssertionError: ..."``, or ""."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    return ""


class PageNotebook(nbformat.NotebookNode):
    """A notebook made for one page, which nbconvert may change in place: copying it
    (``copy.deepcopy``, as nbconvert does before and while preprocessing) gives itself."""

    def __deepcopy__(self, memo: dict[int, Any]) -> PageNotebook:
        return self


def _magic(cell: Any) -> bool:
    """Is ``cell`` highlighted as a cell magic's language (its metadata says which)?"""
    return bool(cell.get("metadata", {}).get("magics_language"))


class _Unknown:
    """The grading status of a page rendered to warm up: nothing to say."""

    status, detail = "ok", ""


class Renderer:
    """Renders feedback pages; build one per process and reuse it."""

    def __init__(self, assignment: Assignment) -> None:
        config = assignment.config
        self.stubs = {
            name: notebook.answers(notebook.read(assignment.release(name)))
            for name in assignment.notebooks
        }
        template = internals.feedback_template(config)
        template.HTMLExporter.template_name = "feedback_page"
        template.HTMLExporter.extra_template_basedirs = [
            str(TEMPLATES),
            *template.HTMLExporter.extra_template_basedirs,
        ]
        # So that feedback_page can extend nbgrader's by name, 'feedback/index.html.j2'.
        template.HTMLExporter.extra_template_paths = [
            *template.HTMLExporter.extra_template_paths,
            *template.HTMLExporter.extra_template_basedirs,
        ]
        template.ClearHiddenTests.enforce_metadata = False
        # Student outputs may carry HTML; a <script> must not run in a TA's browser.
        template.HTMLExporter.sanitize_html = True
        self.exporter = internals.FeedbackExporter(
            BoundedCache,
            markup.safe_markdown_html,
            template_cache.kept_templates(),
            config=template,
        )
        for step in internals.feedback_steps(config):
            if issubclass(step, internals.GRADES_FROM_GRADEBOOK):
                step = KnownGrades
            self.exporter.register_preprocessor(step(config=template), enabled=True)

    def warm_up(self, notebooks: dict[str, Any], columns: Columns) -> None:
        """Compile the template and render what ``notebooks`` share with every page, for nothing.

        notebooks: ``{name: notebook}``, the release students start from. Its
        prose is rendered as a page, and every code cell's text highlighted (the
        read-only code, the tests as shown, an answer left as released), so a
        worker forked after this starts with the caches filled instead of paying
        for them with its first page. A code cell is not rendered whole: on a
        student's page it has outputs and an execution count, so it never is
        the release's cell (a third of the release's page, for no page). The
        highlighted code and the prose's HTML an earlier run kept are taken
        instead of made again (:mod:`~.template_cache`); a sample text still
        builds the Markdown parser's rules, which a student's own prose needs.
        """
        code = [cell for cell in self.page(notebooks, columns).cells if cell.cell_type == "code"]
        self._highlight_kept(sorted({c.source for c in code if not _magic(c)}))
        for cell in code:
            self.exporter.highlighted(cell.source, cell.metadata)
        self.exporter.compile_lexer()  # for every worker forked after this
        prose = {}
        for name, nb in notebooks.items():
            prose[name] = nbformat.from_dict(nb)
            prose[name].cells = [c for c in prose[name].cells if c.cell_type != "code"]
        markdown = sorted(
            {
                cell.source
                for nb in prose.values()
                for cell in nb.cells
                if cell.cell_type == "markdown"
                and not cell.get("attachments")
                and len(cell.source) <= CACHED_SOURCE  # what the exporter remembers
            }
        )
        made_by = self.exporter.markdown_making()
        saved = self._load_kept(markdown, made_by, self.exporter.remember_markdown)
        self.exporter.warm_markdown()  # for a student's own prose, in every worker forked after
        self.render("", prose, columns, {}, _Unknown())
        if not saved and made_by is not None:
            made = {source: self.exporter.markdown_made(source) for source in markdown}
            self._save_kept({s: html for s, html in made.items() if html is not None}, made_by)

    def _highlight_kept(self, sources: list[str]) -> None:
        """Have the course's code ``sources`` highlighted as a run before kept them, or
        highlight them and keep them (:class:`~.template_cache.KeptHTML`)."""
        made_by = self.exporter.highlighting()
        if not self._load_kept(sources, made_by, self.exporter.remember_highlighted):
            self._save_kept({s: self.exporter.highlighted(s) for s in sources}, made_by)

    @staticmethod
    def _load_kept(
        sources: list[str], made_by: str | None, remember: Callable[[str, str], None]
    ) -> bool:
        """Hand ``remember`` the HTML a run before kept for exactly the course's ``sources``
        as ``made_by`` makes it (None: not to be kept); whether it was kept."""
        kept = template_cache.kept_html()
        if kept is None or made_by is None or not sources:
            return True  # nothing to load, and nothing to save after
        known = kept.load(sources, made_by)
        for source, html in known.items():
            remember(source, html)
        return bool(known)

    @staticmethod
    def _save_kept(made: dict[str, str], made_by: str | None) -> None:
        """Keep ``made`` ({course text: its HTML}) for later runs."""
        kept = template_cache.kept_html()
        if kept is not None and made_by is not None and made:
            kept.save(made, made_by)

    def render(
        self,
        student_id: str,
        notebooks: dict[str, Any],
        columns: Columns,
        points: dict[str, float | None],
        graded: GradingStatus,
        comments: dict[str, str] | None = None,
        late_penalty: float = 0.0,
        notice: list[str] | None = None,
        hidden_until: str = "",
    ) -> str:
        """The feedback page (HTML) for one student's executed notebooks.

        notebooks: ``{notebook file name: executed notebook, or None}``;
        points: ``{column: points}``, None for an answer a TA has not graded yet;
        comments: ``{column or answer cell id: the TA's comment}``;
        late_penalty: points taken off for a late submission (the total shown
        is what is left, as in the gradebook); notice: sentences the page opens
        with (which attempt this is, whether it counts); hidden_until: when the
        hidden tests' messages are shown, for a page whose notebooks had them
        taken out ("": they are shown).
        """
        nb = self.page(notebooks, columns)
        comments = comments or {}
        answers, cells = summary(notebooks, columns, points, comments, self.stubs)
        names = ", ".join(notebooks)
        raw = sum(p for p in points.values() if p is not None)
        lab = {
            "title": f"{names}: feedback for {student_id}",
            "student": student_id,
            "score": max(0.0, raw - late_penalty),
            "raw_score": raw,
            "late_penalty": late_penalty,
            "max_score": sum(columns.possible.values()),
            "note": grading_note(graded.status, graded.detail),
            "notice": list(notice or []),
            "hidden_until": hidden_until,
            "answers": answers,
            "cells": cells,
        }
        resources = {
            "nbgrader": {
                "student": student_id,
                "points": points,
                "comments": comments,
                "late_penalty": late_penalty,
            },
            "lab": lab,
        }
        html, _ = self.exporter.from_notebook_node(nb, resources=resources)
        return str(html)

    @staticmethod
    def page(notebooks: dict[str, Any], columns: Columns) -> Any:
        """One notebook to render: each executed notebook in turn, under its name if several.

        Graded cells carry their column as ``grade_id``; long texts are cut. The
        page is built of copies, for this page alone: nbconvert's own deep
        copies of it (three per page, a third of its time) are skipped.
        """
        page = PageNotebook(nbformat.v4.new_notebook())
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
