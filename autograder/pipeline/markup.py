"""What a student wrote, made safe to show on a page that opens offline.

A feedback page is opened by TAs, in formgrader's origin too, so nothing a
student wrote may become live markup there. Rendered Markdown (a written
answer, or any Markdown cell a student added) goes through :func:`clean`: an
allow-list of the tags and attributes Markdown produces, as nbconvert's own
``clean_html`` does for outputs (``bleach``), so ``<script>``, event handlers
(``onerror=``), ``javascript:`` links, ``<svg onload>`` and ``<iframe srcdoc>``
are shown as text or dropped, and no image loads from the network. Then
:func:`render_maths` turns ``$...$`` and ``$$...$$`` into MathML, which
browsers draw themselves: the page loads no MathJax from the network.
"""

from __future__ import annotations

import html
import re

import bleach
from latex2mathml.converter import convert

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
    """An image keeps its text, and a source only when it loads nothing from the network."""
    if name == "src":
        return not re.match(r"\s*([a-z][a-z0-9+.-]*:|//)", value, re.IGNORECASE)
    return name in ("alt", "title", "class", "id")


ATTRIBUTES = {
    "*": ["class", "id", "title"],
    "a": ["href", "title"],
    "img": _image_attribute,
    "th": ["align"],
    "td": ["align"],
}
PROTOCOLS = frozenset({"http", "https", "mailto"})

# $$display$$ first, then $inline$ (not $$, not an escaped \$, not spanning paragraphs).
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
_INLINE = re.compile(r"(?<![\\$])\$(?!\$)([^$<>\n]{1,500}?)(?<!\\)\$(?!\$)")
_CODE = re.compile(r"(<(pre|code)\b.*?</\2>)", re.DOTALL)


def clean(rendered: str) -> str:
    """``rendered`` (HTML from Markdown) with only the allow-listed tags and attributes."""
    return bleach.clean(
        rendered, tags=TAGS, attributes=ATTRIBUTES, protocols=PROTOCOLS, strip_comments=True
    )


def _mathml(tex: str, display: bool) -> str:
    try:
        return convert(html.unescape(tex), display="block" if display else "inline")
    except Exception:  # not LaTeX this converter knows: show it as it was written
        return html.escape(f"$${tex}$$" if display else f"${tex}$", quote=False)


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
    """Rendered Markdown as a page may show it: cleaned, then its maths drawn."""
    return render_maths(clean(rendered))
