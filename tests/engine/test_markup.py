"""Is what a student wrote shown as text on a page, never as live markup, maths drawn offline?"""

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
        '<h2 id="notes">Notes</h2><p><em>a</em> <strong>b</strong> <code>c</code> '
        '<a href="https://example.org">d</a></p><table><thead><tr><th align="left">x</th></tr>'
        "</thead><tbody><tr><td>1</td></tr></tbody></table><pre><code>$x$</code></pre>"
    )
    assert markup.clean(rendered) == rendered


def test_maths_is_mathml_and_code_is_left_alone():
    """Is $...$ drawn as MathML (no MathJax), but a dollar in code kept as written?"""
    shown = markup.render_maths("<p>so $q = x W_q$ and $$\\frac{a}{b}$$</p><code>$5$</code>")
    assert shown.count("<math") == 2 and 'display="block"' in shown
    assert "<code>$5$</code>" in shown and "$q" not in shown


def test_maths_it_cannot_read_stays_text():
    """Is LaTeX the converter cannot read shown as the student wrote it, not lost?"""
    assert markup.render_maths("<p>$\\frac{$</p>") == "<p>$\\frac{$</p>"
