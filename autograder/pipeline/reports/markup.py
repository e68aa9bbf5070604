"""What a student wrote, made safe to show on a page that opens offline.

A feedback page is opened by TAs, in formgrader's origin too, so nothing a
student wrote may become live markup there. Rendered Markdown (a written
answer, or any Markdown cell a student added) goes through :func:`clean`: an
allow-list of the tags and attributes Markdown produces, as nbconvert's own
``clean_html`` does for outputs (``bleach``), so ``<script>``, event handlers
(``onerror=``), ``javascript:`` links, ``<svg onload>`` and ``<iframe srcdoc>``
are shown as text or dropped, and no image in a student's Markdown loads
anything: it keeps its text, never a source. Then
:func:`render_maths` turns ``$...$`` and ``$$...$$`` into MathML, which
browsers draw themselves: the page loads no MathJax from the network. The
MathML is built as elements, kept only where its tags and attributes are
presentation (:data:`MATHML_TAGS`, :data:`MATHML_ATTRIBUTES`: no ``href``, no
``style``), its text escaped; and the final markup goes through the same
allow-list once more (:func:`safe_markdown_html`), so no step after the first
cleaning can bring markup back.
"""

from __future__ import annotations

import html
import re
from typing import Any
from xml.etree import ElementTree

import bleach
from latex2mathml.converter import convert_to_element

# What Markdown renders to, and nothing that runs.
TAGS = frozenset(
    {
        *bleach.ALLOWED_TAGS,
        *(f"h{level}" for level in range(1, 7)),
        "p", "div", "span", "pre", "code", "br", "hr", "img", "sup", "sub", "del",
        "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd",
    }
)  # fmt: skip


def _image_attribute(tag: str, name: str, value: str) -> bool:
    """An image a student's Markdown shows keeps its text and never a source.

    A source could load from the network: any URL, and any path once the page
    is served over HTTP (a browser reads ``/\\host/x`` and ``\\\\host\\x`` as
    ``//host/x``). The pictures a page shows are the notebook's own outputs,
    drawn from their data, not from a student's Markdown.
    """
    return name in ("alt", "title")


def _any_attribute(tag: str, name: str, value: str) -> bool:
    """A title, or a code block's highlighting classes: never an id, a style or a page's class.

    A class a student chose could borrow the page's own styles (a box that
    reads like a passed test); the highlighter's are short token names.
    """
    if name == "class":
        return all(
            re.fullmatch(r"highlight|language-[\w+-]{1,30}|[a-z]{1,3}", c) for c in value.split()
        )
    return name == "title"


ATTRIBUTES: dict[str, Any] = {
    "*": _any_attribute,
    "a": ["href", "title"],
    "img": _image_attribute,
    "th": ["align"],
    "td": ["align"],
    # no id: a student's heading must not take an anchor the page's own links point to
}
PROTOCOLS = frozenset({"http", "https", "mailto"})

#: the MathML elements maths may be drawn with: presentation only
MATHML_TAGS = frozenset(
    {
        "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup",
        "msubsup", "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable",
        "mtr", "mtd", "mstyle", "mpadded", "mphantom", "menclose", "mfenced",
        "mmultiscripts", "mprescripts", "none",
    }
)  # fmt: skip
#: the attributes those elements keep: layout, never a link, a style or a handler
MATHML_ATTRIBUTES = frozenset(
    {
        "xmlns", "display", "mathvariant", "stretchy", "fence", "separator", "lspace",
        "rspace", "minsize", "maxsize", "movablelimits", "accent", "accentunder",
        "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines",
        "frame", "linethickness", "scriptlevel", "displaystyle", "width", "height", "depth",
        "notation", "form", "largeop", "symmetric", "open", "close", "separators",
    }
)  # fmt: skip
MATHML_NS = "http://www.w3.org/1998/Math/MathML"

# $$display$$ first, then $inline$ (not $$, not an escaped \$, not spanning paragraphs).
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
_INLINE = re.compile(r"(?<![\\$])\$(?!\$)([^$<>\n]{1,500}?)(?<!\\)\$(?!\$)")
_CODE = re.compile(r"(<(pre|code)\b.*?</\2>)", re.DOTALL)


def clean(rendered: str, maths: bool = False) -> str:
    """``rendered`` (HTML from Markdown) with only the allow-listed tags and attributes.

    maths: also keep the MathML that :func:`render_maths` draws, with
    presentation attributes only.
    """
    tags, attributes = TAGS, ATTRIBUTES
    if maths:
        tags = TAGS | MATHML_TAGS
        attributes = {**ATTRIBUTES, **{tag: _mathml_attribute for tag in MATHML_TAGS}}
    return bleach.clean(
        rendered, tags=tags, attributes=attributes, protocols=PROTOCOLS, strip_comments=True
    )


def _mathml_attribute(tag: str, name: str, value: str) -> bool:
    if name == "xmlns":
        return value == MATHML_NS
    return name in MATHML_ATTRIBUTES and not re.search(r"[:()\\]", value)


def _presentation_only(element: ElementTree.Element) -> bool:
    """Strip every attribute but layout from ``element``'s tree; False if a tag is not MathML."""
    for node in element.iter():
        if node.tag not in MATHML_TAGS:
            return False
        # the converter writes characters as entities (&#x000A0;): text, escaped once on output
        node.text = html.unescape(node.text) if node.text else node.text
        node.tail = html.unescape(node.tail) if node.tail else node.tail
        for name, value in list(node.attrib.items()):
            if not _mathml_attribute(node.tag, name, value):
                del node.attrib[name]
    return True


def _mathml(tex: str, display: bool) -> str:
    """``tex`` drawn as MathML, its text escaped; as written (escaped) if that cannot be done."""
    written = html.escape(f"$${tex}$$" if display else f"${tex}$", quote=False)
    try:
        element = convert_to_element(html.unescape(tex), display="block" if display else "inline")
    except Exception:  # not LaTeX this converter knows: show it as it was written
        return written
    if not _presentation_only(element):
        return written
    return ElementTree.tostring(element, encoding="unicode", short_empty_elements=False)


def render_maths(cleaned: str) -> str:
    """``$...$`` and ``$$...$$`` in ``cleaned`` (sanitised HTML) as MathML; code left alone."""
    parts = _CODE.split(cleaned)
    out = []
    skip = 0
    for index, part in enumerate(parts):
        if skip:
            skip -= 1
            continue
        if index % 3 == 1:  # a whole <pre>/<code> element: its dollars are code
            out.append(part)
            skip = 1  # the tag name the split also returns
            continue
        part = _DISPLAY.sub(lambda m: _mathml(m.group(1), True), part)
        part = _INLINE.sub(lambda m: _mathml(m.group(1), False), part)
        out.append(part)
    return "".join(out)


def safe_markdown_html(rendered: str) -> str:
    """Rendered Markdown as a page may show it: cleaned, its maths drawn, cleaned again."""
    return clean(render_maths(clean(rendered)), maths=True)
