"""Can everyone read the pages students and TAs read? WCAG 2.1 AA, checked by axe-core.

axe-core (from npm, installed by ``make setup`` beside the environment, as the
hub's proxy is) runs in headless Chromium on every page a person reads: the
feedback pages of the sample class (with their mistakes), the class report and
the documentation site, each with the ``wcag2a``, ``wcag2aa``, ``wcag21a`` and
``wcag21aa`` rules. Beside axe: every figure says in words what it shows, and
each page reads without sideways scrolling at 200% zoom (half the width).
"""

import subprocess
import sys
from pathlib import Path

import pytest

from autograder.pipeline import results

from ..engine import browser
from . import lab

pytestmark = [pytest.mark.slow, pytest.mark.browser]

AXE = Path(sys.prefix) / "node" / "node_modules" / "axe-core" / "axe.min.js"
RULES = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
CHECK = (
    f"axe.run(document, {{runOnly: {{type: 'tag', values: {RULES!r}}}, "
    # only the violations are gathered in full: the same rules run, in a sixth less time
    "resultTypes: ['violations']})"
    ".then(r => r.violations.map(v => v.id + ' (' + v.nodes.length + '): '"
    " + v.nodes.slice(0, 2).map(n => n.target.join(' ')).join(', ')))"
)
PLACEHOLDER = "No description has been provided for this image"
ZOOMED = 640  # CSS pixels: a 1280-pixel window at 200% zoom


@pytest.fixture(scope="module")
def docs_site():
    """The documentation site, built as ``make docs`` builds it, in the same folder.

    Sphinx rebuilds only what changed since: nothing, when ``make test`` has
    just run ``make docs`` (about 1 s rather than 12 s of CPU).
    """
    out = lab.ROOT / "docs" / "_build" / "html"
    built = subprocess.run(
        [str(Path(sys.executable).with_name("sphinx-build")), "-W", "-n", "--keep-going", "-q",
         "-b", "html", str(lab.ROOT / "docs"), str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def _pages(graded_samples, docs_site) -> list[Path]:
    out = graded_samples["out"]
    return [
        *sorted((out / "feedback").glob("*.html")),
        out / "report.html",
        *sorted(docs_site.glob("*.html")),
    ]


def _feedback_kinds(graded_samples) -> list[Path]:
    """One feedback page of each kind the sample class gives: full marks, mistakes, and
    the lowest score (answers not attempted). Every page comes from one template, and
    axe takes seconds on each."""
    rows = results.read_csv(graded_samples["out"] / "grades.csv")
    by_score = sorted(rows, key=lambda r: float(r["score"]))
    top = float(by_score[-1]["max_score"])
    chosen = {by_score[0]["student_id"], by_score[-1]["student_id"]}
    chosen |= {next(r["student_id"] for r in by_score if 0 < float(r["score"]) < top)}
    return [graded_samples["out"] / "feedback" / f"{sid}.html" for sid in sorted(chosen)]


def _served_pages(graded_samples, into: Path) -> list[Path]:
    """What ``serve`` returns before the due date: a page whose hidden tests' messages wait
    (a student with mistakes), opened by its notice; and a short page (a kept hand-in)."""
    from autograder.pipeline.course import notebook
    from autograder.pipeline.course.assignment import find_assignment
    from autograder.pipeline.reports import feedback_page
    from autograder.serve import pages

    a = find_assignment(graded_samples["course"])
    rows = results.read_csv(graded_samples["out"] / "grades.csv")
    top = max(float(r["score"]) for r in rows)
    sid = next(r["student_id"] for r in rows if 0 < float(r["score"]) < top)
    saved = results.ClassFolder(graded_samples["out"]).state.outcome(sid)
    columns = notebook.Columns({n: notebook.read(a.source(n)) for n in a.notebooks})
    hidden = pages.hidden_cells(a)
    executed = {
        n: pages.early(notebook.read(a.autograded(sid, n)), hidden[n], a.config)
        for n in a.notebooks
    }
    early = feedback_page.Renderer(a).render(
        sid, executed, columns, saved.points, saved, saved.comments, saved.late_penalty,
        ["Your hand-in, graded on submit: attempt 2.", "You have 1 attempt left."],
        "2026-12-10 17:00:00 UTC",
    )  # fmt: skip
    assert pages.HIDDEN_MESSAGE in early  # a student with mistakes fails a hidden test
    kept = pages.notice_page(f"{a.id}: your hand-in, {sid}", ["Kept, but not graded now."])
    into.mkdir(parents=True, exist_ok=True)
    (into / "early.html").write_text(early)
    (into / "kept.html").write_text(kept)
    return [into / "early.html", into / "kept.html"]


def test_every_page_passes_axe(graded_samples, docs_site, tmp_path):
    """Does axe-core find no WCAG 2.1 A or AA violation on the pages people read?

    Three feedback pages (full marks, mistakes, the lowest score), the two
    kinds of page ``serve`` returns before the due date, the class report, and
    every page of the documentation but the API reference, which autodoc
    writes in the same theme and markup (and which takes axe 20 s).
    """
    assert AXE.is_file(), f"no axe-core at {AXE}: run make setup"
    script = AXE.read_text()
    docs = [p for p in sorted(docs_site.glob("*.html")) if p.name != "reference.html"]
    served = _served_pages(graded_samples, tmp_path / "served")
    pages = [*_feedback_kinds(graded_samples), *served, graded_samples["out"] / "report.html",
             *docs]  # fmt: skip
    assert len(pages) > 15
    found = {}
    with browser.Browser() as chromium, chromium.tab() as tab:
        for page in pages:
            tab.go(page.as_uri())
            tab.run(script)
            violations = tab.run(CHECK)
            if violations:
                found[page.name] = violations
    assert found == {}


def test_figures_say_what_they_show(graded_samples):
    """Does each figure of a feedback page carry words for what it shows, not a placeholder?"""
    pages = sorted((graded_samples["out"] / "feedback").glob("*.html"))
    seen = []
    with browser.Browser() as chromium, chromium.tab() as tab:
        for page in pages:
            tab.go(page.as_uri())
            alts = tab.run("[...document.querySelectorAll('img')].map(i => i.alt)")
            # a student whose notebook crashed early shows fewer figures, or none
            assert all(alt and alt != PLACEHOLDER for alt in alts), (page.name, alts)
            seen += alts
    for figure in ("heatmaps of hand-written attention shares", "heatmaps of attention shares"):
        assert any(figure in alt for alt in seen), f"no page describes the {figure}"


def test_pages_read_at_200_percent_zoom(graded_samples, docs_site):
    """At 200% zoom (640 CSS pixels), does every page fit its width, with no sideways scroll?"""
    wide = {}
    with browser.Browser() as chromium, chromium.tab(width=ZOOMED) as tab:
        for page in _pages(graded_samples, docs_site):
            tab.go(page.as_uri())
            width = tab.run("document.documentElement.scrollWidth")
            if width > ZOOMED + 1:
                wide[page.name] = width
    assert wide == {}
