"""Model text, code and diffs as HTML that reads like JupyterLab's own rendering.

Markdown goes through mistune with raw HTML escaped (model text never runs in the page);
fenced code is highlighted by pygments with JupyterLab's editor colours (``--jp-mirror-
editor-…`` variables), tables get borders, links open in a new tab so the notebook stays
where it is. Everything is styled inline: the same HTML is kept in the saved notebook and
must read the same on a page that has none of JupyterLab's stylesheets.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Any

import mistune
from mistune.renderers.html import HTMLRenderer

from . import theme
from .theme import var

__all__ = ["render_markdown", "highlight", "diff_html", "pre", "BLOCK_STYLE", "TEXT_STYLE"]

# Lines as JupyterLab's Markdown cells space them (the widget area's own line height is a
# control height, which double-spaces text).
TEXT_STYLE = f"line-height:{var('content-line-height', '1.6')};font-size:{var('content-font-size1', '14px')}"
# A block as wide as its column whatever its longest line: `width:0;min-width:100%` keeps a long line
# from widening the column (a widget's row sizes itself to its content's longest line, and the output
# area clips what is past its edge, scrollbar included); the line scrolls sideways inside the block.
FIT_WIDTH = "width:0;min-width:100%;box-sizing:border-box"
BLOCK_STYLE = (
    f"background:{theme.CODE_BG};border-radius:4px;padding:6px 8px;margin:4px 0;"
    f"font-family:{theme.MONO};font-size:{var('code-font-size', '13px')};line-height:1.45;"
    f"overflow-x:auto;white-space:pre;{FIT_WIDTH}"
)
_CELL_STYLE = f"border:1px solid {var('border-color1', '#bdbdbd')};padding:3px 8px"

# Token type (as pygments names it) -> the JupyterLab editor colour used for it. A token
# takes the colour of its nearest listed ancestor type (Name.Function -> Name.Function,
# Keyword.Constant -> Keyword).
_TOKEN_COLOURS = {
    "Keyword": ("mirror-editor-keyword-color", "#008000", "bold"),
    "Name.Builtin": ("mirror-editor-builtin-color", "#008000", ""),
    "Name.Function": ("mirror-editor-def-color", "#0000ff", ""),
    "Name.Class": ("mirror-editor-def-color", "#0000ff", "bold"),
    "Name.Decorator": ("mirror-editor-meta-color", "#aa22ff", ""),
    "Name.Tag": ("mirror-editor-tag-color", "#117700", ""),
    "Name.Attribute": ("mirror-editor-attribute-color", "#0000cc", ""),
    "Name.Variable": ("mirror-editor-variable-color", "#212121", ""),
    "Literal.String": ("mirror-editor-string-color", "#ba2121", ""),
    "Literal.Number": ("mirror-editor-number-color", "#008800", ""),
    "Comment": ("mirror-editor-comment-color", "#408080", "italic"),
    "Operator.Word": ("mirror-editor-keyword-color", "#008000", "bold"),
    "Operator": ("mirror-editor-operator-color", "#7800c2", ""),
    "Generic.Heading": ("mirror-editor-header-color", "#0000ff", "bold"),
    "Generic.Subheading": ("mirror-editor-header-color", "#0000ff", "bold"),
    "Generic.Inserted": ("success-color1", "#388e3c", ""),
    "Generic.Deleted": ("error-color1", "#d32f2f", ""),
    "Generic.Emph": ("content-font-color1", "inherit", "italic"),
    "Generic.Strong": ("content-font-color1", "inherit", "bold"),
}


def _style_of(token: Any) -> str:
    while token is not None and len(token):
        found = _TOKEN_COLOURS.get(".".join(token))
        if found:
            name, fallback, extra = found
            style = f"color:{var(name, fallback)}"
            if extra == "bold":
                style += ";font-weight:bold"
            elif extra == "italic":
                style += ";font-style:italic"
            return style
        token = token.parent
    return ""


@lru_cache(maxsize=64)
def _lexer(language: str = "", filename: str = "") -> Any:
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        if language:
            return get_lexer_by_name(language, stripnl=False, ensurenl=False)
        if filename:
            return get_lexer_for_filename(filename, stripnl=False, ensurenl=False)
    except ClassNotFound:
        pass
    return None


def highlight(code: str, language: str = "", filename: str = "") -> str:
    """``code`` as escaped HTML with coloured spans (plain escaped text when the language is unknown)."""
    lexer = _lexer(language.lower(), filename) if (language or filename) else None
    if lexer is None:
        return html.escape(code)
    out = []
    for token, value in lexer.get_tokens(code):
        style = _style_of(token)
        text = html.escape(value)
        out.append(f'<span style="{style}">{text}</span>' if style and value.strip() else text)
    return "".join(out)


def pre(body_html: str, *, extra: str = "") -> str:
    """A code block around already-escaped HTML."""
    return f'<pre class="cc-code" style="{BLOCK_STYLE};{extra}">{body_html}</pre>'


class _Renderer(HTMLRenderer):
    """mistune's HTML with JupyterLab-like code blocks, tables and links."""

    def block_code(self, code: str, info: str | None = None) -> str:
        language = (info or "").strip().split(None, 1)[0] if info and info.strip() else ""
        return pre(highlight(code, language)) + "\n"

    def codespan(self, text: str) -> str:
        return (f'<code style="background:{theme.CODE_BG};border-radius:3px;padding:0 .25em;'
                f'font-family:{theme.MONO};font-size:.92em">{html.escape(text)}</code>')

    def link(self, text: str, url: str, title: str | None = None) -> str:
        attrs: dict[str, object] = {"href": self.sanitize_url(url), "target": "_blank", "rel": "noopener noreferrer"}
        if title:
            attrs["title"] = title
        return f'<a{self.render_attrs(attrs)} style="color:{theme.LINK}">{text}</a>'

    def paragraph(self, text: str) -> str:
        return f'<p style="margin:0 0 .5em 0">{text}</p>\n'

    def heading(self, text: str, level: int, **attrs: Any) -> str:
        size = {1: "1.4em", 2: "1.25em", 3: "1.1em"}.get(level, "1em")
        return f'<h{level} style="font-size:{size};margin:.6em 0 .3em 0">{text}</h{level}>\n'

    def block_quote(self, text: str) -> str:
        return (f'<blockquote style="margin:.3em 0;padding:0 .8em;border-left:3px solid {theme.BORDER};'
                f'color:{theme.MUTED}">\n{text}</blockquote>\n')

    def list(self, text: str, ordered: bool, **attrs: Any) -> str:
        tag = "ol" if ordered else "ul"
        start = self.render_attrs({"start": attrs.get("start")}) if ordered and attrs.get("start") else ""
        return f'<{tag}{start} style="margin:.2em 0 .5em 0;padding-left:1.6em">\n{text}</{tag}>\n'


def _table(renderer: Any, text: str) -> str:
    return f'<table style="border-collapse:collapse;margin:.4em 0">\n{text}</table>\n'


def _table_cell(renderer: Any, text: str, align: str | None = None, head: bool = False) -> str:
    tag = "th" if head else "td"
    style = _CELL_STYLE + (f";text-align:{align}" if align in ("left", "right", "center") else "")
    if head:
        style += f";background:{theme.CODE_BG}"
    return f'  <{tag} style="{style}">{text}</{tag}>\n'


def _make() -> Any:
    renderer = _Renderer(escape=True)
    md = mistune.create_markdown(escape=True, renderer=renderer, plugins=["strikethrough", "table", "url"])
    # After the plugin, which registers its own plain table renderers.
    renderer.register("table", _table)
    renderer.register("table_cell", _table_cell)
    return md


_markdown = _make()


def render_markdown(text: str) -> str:
    """Model text as safe HTML (hidden characters shown as ``\\u{…}``)."""
    from .widgets._text import reveal

    return f'<div class="cc-md" style="{TEXT_STYLE}">{_markdown(reveal(text))}</div>'


_FILE = re.compile(r"^\+\+\+ (?:b/)?(.+?)\s*$", re.M)

# Lines of a diff: kind -> (background role or None, prefix shown).
_DIFF_ROLES = {"+": "ok", "-": "bad"}


def diff_html(diff: str, *, max_height: str = "28em") -> str:
    """A unified diff, each line on its own tinted row, its code highlighted for the file's language.

    Long lines scroll sideways rather than wrap mid-word; the text colour is the theme's
    strongest, so it keeps its contrast on the tinted rows in every theme.
    """
    from .widgets._text import reveal

    match = _FILE.search(diff)
    filename = match.group(1) if match else ""
    rows = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind, role, body = "file", None, html.escape(reveal(line))
        elif line.startswith("@@"):
            kind, role, body = "hunk", None, html.escape(reveal(line))
        elif line[:1] in ("+", "-"):
            kind = "add" if line[0] == "+" else "del"
            role = _DIFF_ROLES[line[0]]
            body = html.escape(line[0]) + highlight(reveal(line[1:]), filename=filename)
        elif line.startswith("\\"):
            kind, role, body = "note", None, html.escape(line)
        else:
            kind, role, body = "ctx", None, html.escape(line[:1]) + highlight(reveal(line[1:]), filename=filename)
        background = f"background:{theme.tint(role)};" if role else ""
        colour = theme.MUTED if kind in ("file", "hunk", "note") else theme.TEXT
        rows.append(f'<div class="cc-diff-{kind}" style="{background}color:{colour};padding:0 8px;min-height:1.45em">'
                    f"{body or ' '}</div>")
    return (
        f'<div class="cc-diff" style="border:1px solid {theme.BORDER};border-radius:4px;margin:4px 0;{FIT_WIDTH};'
        f'max-height:{max_height};overflow:auto;font-family:{theme.MONO};font-size:{var("code-font-size", "13px")};'
        f'line-height:1.45;white-space:pre;background:{theme.PAGE}">'
        f'<div style="display:inline-block;min-width:100%">{"".join(rows)}</div></div>'
    )
