"""Are compiled page templates kept between runs, and never trusted when they should not be?"""

import hashlib
import json
import os
from pathlib import Path

import jinja2
import pytest

from autograder.pipeline.course import internals
from autograder.pipeline.course.notebook import Columns
from autograder.pipeline.errors import Status
from autograder.pipeline.reports import class_report, feedback_page, template_cache
from autograder.pipeline.results import Graded

from . import toy


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """A cache folder of the test's own, in place of the user's; its templates folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    template_cache.kept_templates.cache_clear()
    template_cache.kept_html.cache_clear()
    yield tmp_path / "cache" / template_cache.FOLDER
    template_cache.kept_templates.cache_clear()
    template_cache.kept_html.cache_clear()


@pytest.fixture
def compiled(monkeypatch):
    """The names of the templates jinja2 compiles from their text, in order."""
    names = []
    original = jinja2.Environment.compile

    def compile(self, source, name=None, filename=None, *args, **kwargs):
        names.append(name)
        return original(self, source, name, filename, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", compile)
    return names


def _page(assignment):
    nb = toy.notebook(*toy.DOUBLE)
    graded = Graded("ada", "", Status.OK, "", {}, {}, {})
    return feedback_page.Renderer(assignment).render(
        "ada", {"toy.ipynb": nb}, Columns({"toy.ipynb": nb}), {}, graded
    )


def test_the_feedback_page_compiles_once_across_runs(tmp_path, cache_home, compiled):
    """Does a second renderer (a later run) load every template compiled by the first, and
    give the same page?"""
    assignment = toy.assignment(tmp_path / "course")
    first = _page(assignment)
    assert "index.html.j2" in compiled and "feedback/index.html.j2" in compiled, compiled
    assert list(cache_home.iterdir())
    compiled.clear()
    assert _page(assignment) == first
    assert compiled == []


def test_the_class_report_compiles_once_across_runs(cache_home, compiled):
    """Is the class report's template kept too?"""
    class_report._template()
    assert compiled == ["report.html.j2"]
    class_report._template()
    assert compiled == ["report.html.j2"]


def _render(folder, cache):
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), bytecode_cache=cache)
    return environment.get_template("t.j2").render(who="Ada")


def test_a_changed_template_is_compiled_again(tmp_path, cache_home):
    """Is a template whose text changed since it was kept compiled afresh, never served stale?"""
    (tmp_path / "t.j2").write_text("hello {{ who }}")
    assert _render(tmp_path, template_cache.kept_templates()) == "hello Ada"
    (tmp_path / "t.j2").write_text("goodbye {{ who }}")
    assert _render(tmp_path, template_cache.kept_templates()) == "goodbye Ada"


@pytest.mark.parametrize("damage", [b"", b"j2 not jinja", b"\x00" * 40, b"half", b"garbled"])
def test_a_damaged_file_is_compiled_again(tmp_path, cache_home, compiled, damage):
    """Does a kept file that is empty, foreign or truncated cost a compile, not the page?"""
    (tmp_path / "t.j2").write_text("hello {{ who }}")
    _render(tmp_path, template_cache.kept_templates())
    kept = template_cache.kept_templates().directory
    for entry in os.scandir(kept):
        with open(entry.path, "r+b") as handle:
            good = handle.read()
            handle.seek(0)
            handle.truncate()
            magic = len(jinja2.bccache.bc_magic)
            handle.write(
                {b"half": good[: len(good) // 2], b"garbled": good[:magic] + b"\xff" * 30}.get(
                    damage, damage
                )
            )
    compiled.clear()
    assert _render(tmp_path, template_cache.kept_templates()) == "hello Ada"
    assert compiled == ["t.j2"]


def test_a_folder_gone_from_under_the_cache_still_renders(tmp_path, cache_home):
    """Is a kept file that cannot be written (its folder gone) no more than a miss?"""
    (tmp_path / "t.j2").write_text("hello {{ who }}")
    cache = template_cache.kept_templates()
    cache.directory = str(tmp_path / "gone")
    assert _render(tmp_path, cache) == "hello Ada"


def test_no_cache_in_a_folder_others_may_write_in(cache_home):
    """Is a templates folder that group or others may write in left unused?"""
    cache_home.mkdir(parents=True)
    cache_home.chmod(0o777)
    assert template_cache.kept_templates() is None


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_no_cache_in_a_folder_another_user_owns(cache_home):
    """Is a templates folder owned by someone else left unused (its code would run here)?"""
    cache_home.mkdir(parents=True, mode=0o700)
    os.chown(cache_home, 65534, 65534)
    assert template_cache.kept_templates() is None


def test_no_cache_where_the_folder_cannot_be_made(tmp_path, monkeypatch):
    """Without a usable cache folder (here a file stands in its way), are pages still made?"""
    (tmp_path / "cache").write_text("a file, not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    template_cache.kept_templates.cache_clear()
    try:
        assert template_cache.kept_templates() is None
        assert "Score" in _page(toy.assignment(tmp_path / "course"))
    finally:
        template_cache.kept_templates.cache_clear()


class _Counting:
    """nbconvert's highlighter, noting each text it highlights in ``seen``."""

    def __init__(self, highlight, seen):
        self.highlight, self.seen = highlight, seen

    def __call__(self, source, *args):
        self.seen.append(source)
        return self.highlight(source, *args)

    def __getattr__(self, name):
        return getattr(self.highlight, name)


def _warm_renderer(assignment, highlighted):
    """A new renderer (a new run's), warmed on the release; each text it highlights itself
    is added to ``highlighted``."""
    renderer = feedback_page.Renderer(assignment)
    renderer.exporter._highlight = _Counting(renderer.exporter._highlight, highlighted)
    release = toy.notebook(*toy.DOUBLE)
    renderer.warm_up({"toy.ipynb": release}, Columns({"toy.ipynb": release}))
    return renderer


def _student_page(renderer):
    nb = toy.notebook(*toy.DOUBLE)
    nb.cells[0].source = "def double(v):\n    return v * 2"
    graded = Graded("ada", "", Status.OK, "", {}, {}, {})
    return renderer.render("ada", {"toy.ipynb": nb}, Columns({"toy.ipynb": nb}), {}, graded)


def test_the_releases_code_is_highlighted_once_across_runs(tmp_path, cache_home):
    """Does a later run take the release's highlighted code from the first, highlight only
    what a student wrote, and give the same page? Is a student's code never kept?"""
    assignment = toy.assignment(tmp_path / "course")
    first, later = [], []
    page = _student_page(_warm_renderer(assignment, first))
    code = [c.source for c in toy.notebook(*toy.DOUBLE).cells]
    assert set(code) <= set(first)
    again = _warm_renderer(assignment, later)
    assert [s for s in later if s.strip()] == []  # the lexer is built on a blank, no more
    assert _student_page(again) == page
    assert [s for s in later if s.strip()] == ["def double(v):\n    return v * 2"]
    (kept,) = (cache_home.parent / "html").iterdir()
    assert set(json.loads(kept.read_text())) == set(code)


def test_highlighting_made_otherwise_is_done_afresh(tmp_path, cache_home, monkeypatch):
    """Is code kept by another pygments, lexer or style highlighted again, not reused?"""
    assignment = toy.assignment(tmp_path / "course")
    _warm_renderer(assignment, [])
    made_by = internals.FeedbackExporter.highlighting
    monkeypatch.setattr(
        internals.FeedbackExporter, "highlighting", lambda self: made_by(self) + " newer"
    )
    later = []
    _warm_renderer(assignment, later)
    assert [s for s in later if s.strip()]


@pytest.mark.parametrize("damage", ["", "[1, 2]", '{"x": "<b>"}', "{not json"])
def test_a_damaged_highlights_file_is_highlighted_again(tmp_path, cache_home, damage):
    """Does an empty, foreign or truncated file cost a highlight, never the page?"""
    assignment = toy.assignment(tmp_path / "course")
    page = _student_page(_warm_renderer(assignment, []))
    for kept in (cache_home.parent / "html").iterdir():
        kept.write_text(damage)
    later = []
    assert _student_page(_warm_renderer(assignment, later)) == page
    assert len([s for s in later if s.strip()]) > 1


@pytest.fixture
def rendered(monkeypatch):
    """Each Markdown text nbconvert renders to HTML, in order (what a kept one saves)."""
    from nbconvert.exporters import HTMLExporter

    texts = []
    original = HTMLExporter.markdown2html

    def markdown2html(self, context, source):
        texts.append(source)
        return original(self, context, source)

    monkeypatch.setattr(HTMLExporter, "markdown2html", markdown2html)
    return texts


def _lesson_renderer(assignment):
    """A new run's renderer, warmed on the lesson's release (prose, code and a written answer)."""
    renderer = feedback_page.Renderer(assignment)
    release = toy.notebook(*toy.LESSON)
    renderer.warm_up({"toy.ipynb": release}, Columns({"toy.ipynb": release}))
    return renderer


def _written_answer_page(renderer, answer="Because $2 \\cdot 2 = 4$, *twice*."):
    nb = toy.notebook(*toy.LESSON)
    nb.cells[-1].source = answer
    graded = Graded("ada", "", Status.OK, "", {}, {}, {})
    return renderer.render("ada", {"toy.ipynb": nb}, Columns({"toy.ipynb": nb}), {}, graded)


def test_the_releases_prose_is_rendered_once_across_runs(tmp_path, cache_home, rendered):
    """Does a later run take the release's prose as HTML from the first, render only what a
    student wrote, and give the same page? Is a student's text never kept?"""
    assignment = toy.assignment(tmp_path / "course")
    prose = {c.source for c in toy.LESSON if c.cell_type == "markdown"}
    page = _written_answer_page(_lesson_renderer(assignment))
    assert prose <= set(rendered)
    rendered.clear()
    again = _lesson_renderer(assignment)
    # nothing of the release rendered again; the parser built once, for a student's prose
    assert rendered == [internals.FeedbackExporter.WARM_MARKDOWN]
    rendered.clear()
    assert _written_answer_page(again) == page
    assert rendered == ["Because $2 \\cdot 2 = 4$, *twice*."]
    kept = [json.loads(f.read_text()) for f in (cache_home.parent / "html").iterdir()]
    assert prose in [set(texts) for texts in kept]
    assert not any("*twice*" in text for texts in kept for text in texts)


def test_prose_made_otherwise_is_rendered_afresh(tmp_path, cache_home, rendered, monkeypatch):
    """Is prose kept by another parser, sanitiser or its code rendered again, not reused?"""
    assignment = toy.assignment(tmp_path / "course")
    _lesson_renderer(assignment)
    made_by = internals.FeedbackExporter.markdown_making
    monkeypatch.setattr(
        internals.FeedbackExporter, "markdown_making", lambda self: made_by(self) + " newer"
    )
    rendered.clear()
    _lesson_renderer(assignment)
    assert "# Doubling and counting\n\nTwo small functions." in rendered


def test_what_prose_is_made_by_names_the_sanitiser_and_its_code(tmp_path):
    """Another sanitising function, or another text of this module, makes other HTML: the
    name the kept HTML is found by must differ."""
    from autograder.pipeline.reports import markup

    def plain(html):
        return html

    ours = internals.FeedbackExporter(dict, markup.safe_markdown_html)
    other = internals.FeedbackExporter(dict, plain)
    assert ours.markdown_making() != other.markdown_making()
    code = Path(markup.__file__).read_bytes()
    assert hashlib.sha256(code).hexdigest() in str(ours.markdown_making())
    ours.embed_images = True  # then the HTML depends on image files too: never kept
    assert ours.markdown_making() is None


def test_prose_with_embedded_images_is_not_kept(tmp_path, cache_home, rendered, monkeypatch):
    """Where pages embed images (their files may change between runs), prose is rendered
    every run."""
    monkeypatch.setattr(internals.FeedbackExporter, "embed_images", True)
    assignment = toy.assignment(tmp_path / "course")
    _lesson_renderer(assignment)
    rendered.clear()
    _lesson_renderer(assignment)
    assert "# Doubling and counting\n\nTwo small functions." in rendered
