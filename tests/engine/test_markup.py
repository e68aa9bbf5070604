"""Is what a student wrote shown as text on a page, never as live markup, maths drawn offline?"""

import html
from html.parser import HTMLParser

import pytest

from autograder.pipeline.reports import markup

ATTACKS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(2)">',
    '<a href="javascript:alert(3)">click</a>',
    '<svg onload="alert(4)"></svg>',
    '<iframe srcdoc="&lt;script&gt;alert(5)&lt;/script&gt;"></iframe>',
    '<img src="https://example.org/beacon.png">',
    '<img src="//example.org/beacon.png">',
    '<object data="x.swf"></object>',
    '<a href="data:text/html,<script>alert(6)</script>">x</a>',
    '<p style="background:url(https://example.org/x)">x</p>',
]


class Elements(HTMLParser):
    """Every element and attribute of a piece of HTML, as a browser would parse it."""

    def __init__(self, text):
        super().__init__()
        self.found = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def live(text):
    """What of ``text`` would run or load: tags, handlers, scripted or network URLs."""
    found = []
    for tag, attrs in Elements(text).found:
        if tag in ("script", "iframe", "svg", "object", "embed", "style", "link", "meta"):
            found.append(tag)
        for name, value in attrs.items():
            value = (value or "").strip().lower()
            if name.startswith("on") or name == "style":
                found.append(f"{tag} {name}")
            if name in ("href", "src") and value.startswith(("javascript:", "data:", "vbscript:")):
                found.append(f"{tag} {name}={value}")
            if name == "src" and value.startswith(("http:", "https:", "//")):
                found.append(f"{tag} loads {value}")
    return found


@pytest.mark.parametrize("attack", ATTACKS)
def test_nothing_live_survives(attack):
    """Does no tag that runs, no handler, no javascript: or network URL survive cleaning?"""
    assert live(attack) != []  # each attack is live before cleaning
    cleaned = markup.safe_markdown_html(f"<p>before {attack} after</p>")
    assert live(cleaned) == [], cleaned
    assert "before" in cleaned and "after" in cleaned


def test_markdown_keeps_its_shape():
    """Do headings, tables, code, emphasis and links a student may write stay as they are?"""
    rendered = (
        "<h2>Notes</h2><p><em>a</em> <strong>b</strong> <code>c</code> "
        '<a href="https://example.org">d</a></p><table><thead><tr><th align="left">x</th></tr>'
        "</thead><tbody><tr><td>1</td></tr></tbody></table><pre><code>$x$</code></pre>"
    )
    assert markup.clean(rendered) == rendered


def test_a_students_heading_takes_no_anchor():
    """A heading keeps its text but no id: it cannot take the anchor a test's link points to."""
    assert markup.clean('<h3 id="test_head">passed</h3>') == "<h3>passed</h3>"


@pytest.mark.parametrize(
    "source",
    [
        "/\\127.0.0.1:9/x.png",  # a browser reads \ as / in an http(s) URL: //host
        "\\\\127.0.0.1:9\\x.png",
        "//127.0.0.1:9/x.png",
        "https://example.org/beacon.png",
        "fake.png",
        " data:image/png;base64,iVBORw0KGgo=",
        "data:image/svg+xml;base64,PHN2Zz4=",
        "data:text/html;base64,PHNjcmlwdD4=",
        'data:image/png;base64,iVBORw0KGgo="/><img src=//x',
        "DATA:image/png;base64,iVBORw0KGgo=%0a",
        "data:image/png;base64,iVBORw0KGgo=",  # the notebook's pictures are its outputs
    ],
)
def test_an_image_in_markdown_loads_nothing(source):
    """Is every source of an image a student's Markdown shows dropped, its text kept?"""
    cleaned = markup.clean(f'<img alt="mine" src="{html.escape(source)}">')
    assert "src" not in cleaned and 'alt="mine"' in cleaned, cleaned


def test_what_looks_like_a_tag_is_shown_as_typed():
    """Is text a student typed that looks like a tag kept, as text, not silently dropped?"""
    typed = "shape <T, d_model>, and <script>alert(1)</script> <mytag>x</mytag>"
    cleaned = markup.safe_markdown_html(f"<p>{typed}</p>")
    assert live(cleaned) == [], cleaned
    assert html.unescape(cleaned) == f"<p>{typed}</p>", cleaned
