"""What a student wrote, made safe to show on a page that opens offline.

A feedback page is opened by TAs, in formgrader's origin too, so nothing a
student wrote may become live markup there. Rendered Markdown (a written
answer, or any Markdown cell a student added) goes through :func:`clean`: an
allow-list of the tags and attributes Markdown produces, as nbconvert's own
``clean_html`` keeps for outputs, applied by ``nh3`` (the maintained binding of
the Rust sanitizer ammonia; nbconvert's bleach is archived). A tag outside the
list is shown as the text the student typed (``<script>``, ``<T, d_model>``);
event handlers (``onerror=``), ``javascript:`` links, ``<svg onload>`` and
``<iframe srcdoc>`` never become markup, and no image in a student's Markdown loads
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
from xml.etree import ElementTree

import nh3
from latex2mathml.converter import convert_to_element

# What Markdown renders to, and nothing that runs (bleach's list, which nbconvert's is, first).
TAGS = frozenset(
    {
        "a", "abbr", "acronym", "b", "blockquote", "code", "em", "i", "li", "ol", "strong", "ul",
        *(f"h{level}" for level in range(1, 7)),
        "p", "div", "span", "pre", "br", "hr", "img", "sup", "sub", "del",
        "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd",
    }
)  # fmt: skip

#: the attributes each tag keeps ("*": any tag). An image keeps its text and never a source:
#: a source could load from the network (any URL, and any path once the page is served
#: over HTTP: a browser reads ``/\\host/x`` and ``\\\\host\\x`` as ``//host/x``); the
#: pictures a page shows are the notebook's own outputs, drawn from their data. No id: a
#: student's heading must not take an anchor the page's own links point to.
ATTRIBUTES: dict[str, set[str]] = {
    "*": {"class", "title"},
    "a": {"href", "title"},
    "img": {"alt", "title"},
    "th": {"align"},
    "td": {"align"},
}
PROTOCOLS = frozenset({"http", "https", "mailto"})


def _class(value: str) -> bool:
    """A code block's highlighting classes, never a page's own class.

    A class a student chose could borrow the page's own styles (a box that
    reads like a passed test); the highlighter's are short token names.
    """
    return all(
        re.fullmatch(r"highlight|language-[\w+-]{1,30}|[a-z]{1,3}", c) for c in value.split()
    )


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
        attributes = {**ATTRIBUTES, **{tag: set(MATHML_ATTRIBUTES) for tag in MATHML_TAGS}}
    return nh3.clean(
        _as_text(rendered, tags),
        tags=set(tags),
        attributes=attributes,
        attribute_filter=_kept,
        url_schemes=set(PROTOCOLS),
        strip_comments=True,
        link_rel=None,  # a student's link is shown as written, as nbconvert shows one
    )


_TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)")


def _as_text(rendered: str, tags: frozenset[str]) -> str:
    """``rendered`` with every tag not in ``tags`` written as text (``&lt;tag``).

    The sanitizer drops a tag it does not allow; what a student typed that looks
    like one (``<T, d_model>``, ``<script>``) is shown as they typed it instead, as
    nbconvert's bleach shows it. The sanitizer still runs after this on
    everything, so a tag this misses is dropped, never kept.
    """
    return _TAG.sub(lambda m: m.group() if m.group(2).lower() in tags else "&lt;" + m.group()[1:],
                    rendered)  # fmt: skip


def _kept(tag: str, name: str, value: str) -> str | None:
    """``value`` if the attribute ``name`` of ``tag`` may stay, else None (dropped)."""
    if tag in MATHML_TAGS:
        return value if _mathml_attribute(tag, name, value) else None
    if name == "class":
        return value if _class(value) else None
    return value


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
