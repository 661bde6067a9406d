"""Colours and icons for the cell, from JupyterLab's theme variables.

Every colour is a ``--jp-…`` CSS variable, so the light, dark and high-contrast themes all
apply; the fallback after the comma is what a page without those variables (GitHub,
nbviewer, a plain HTML export) shows. Backgrounds are mixed from a theme colour and the
theme's own page colour, so they stay dark in a dark theme and light in a light one.
Icons are inline SVG drawn with ``currentColor``: no emoji font is needed.
"""

from __future__ import annotations

__all__ = ["var", "tint", "ROLE", "TEXT", "MUTED", "BORDER", "CODE_BG", "MONO", "icon", "ICONS"]


def var(name: str, fallback: str) -> str:
    """``var(--jp-name, fallback)``."""
    return f"var(--jp-{name}, {fallback})"


# Text that must stay readable on the tinted backgrounds below: the theme's strongest text colour.
TEXT = var("content-font-color0", "#000")
MUTED = var("ui-font-color2", "#616161")
BORDER = var("border-color2", "#e0e0e0")
PAGE = var("layout-color0", "#fff")
CODE_BG = var("layout-color2", "#eee")
MONO = var("code-font-family", "monospace")
LINK = var("content-link-color", "#0d47a1")

# The meaning of a state, as a theme colour.
ROLE = {
    "ok": var("success-color1", "#388e3c"),
    "bad": var("error-color1", "#d32f2f"),
    "warn": var("warn-color1", "#f57c00"),
    "info": var("brand-color1", "#1976d2"),
    "muted": MUTED,
}


def tint(role: str, percent: int = 16) -> str:
    """A background: the role's colour mixed into the page colour (readable under TEXT)."""
    return f"color-mix(in srgb, {ROLE[role]} {percent}%, {PAGE})"


_PATHS = {
    # 16x16 outlines, filled with the current text colour.
    "check": "M6.2 11.6 2.6 8l1.1-1.1 2.5 2.5 6.1-6.1L13.4 4.4z",
    "cross": "M4.3 3.2 8 6.9l3.7-3.7 1.1 1.1L9.1 8l3.7 3.7-1.1 1.1L8 9.1l-3.7 3.7-1.1-1.1L6.9 8 3.2 4.3z",
    "stop": "M4 4h8v8H4z",
    "dot": "M8 5.5a2.5 2.5 0 1 1 0 5 2.5 2.5 0 0 1 0-5z",
    "clock": "M8 1.5a6.5 6.5 0 1 1 0 13 6.5 6.5 0 0 1 0-13zm0 1.5a5 5 0 1 0 0 10A5 5 0 0 0 8 3zm-.7 1.5h1.4v3.2l2.4 1.4-.7 1.2-3.1-1.8z",
    "question": "M8 1.5a6.5 6.5 0 1 1 0 13 6.5 6.5 0 0 1 0-13zm0 1.5a5 5 0 1 0 0 10A5 5 0 0 0 8 3zm-.7 6.8h1.4v1.4H7.3zM8 4.6c1.3 0 2.3.8 2.3 2 0 .9-.6 1.3-1.1 1.6-.4.3-.5.4-.5.8v.2H7.3v-.3c0-.8.4-1.2.9-1.5.4-.3.6-.4.6-.8 0-.4-.3-.7-.8-.7s-.9.3-.9.8H5.7C5.7 5.4 6.7 4.6 8 4.6z",
    "info": "M8 1.5a6.5 6.5 0 1 1 0 13 6.5 6.5 0 0 1 0-13zm0 1.5a5 5 0 1 0 0 10A5 5 0 0 0 8 3zm-.7 4h1.4v4.5H7.3zm0-2.2h1.4v1.4H7.3z",
    "warn": "M8 1.5 15 14H1zm0 3L3.6 12.5h8.8zm-.7 2.5h1.4v3H7.3zm0 3.6h1.4V12H7.3z",
    "box": "M3 3h10v10H3zm1.4 1.4v7.2h7.2V4.4z",
    "boxcheck": "M3 3h10v10H3zm1.4 1.4v7.2h7.2V4.4zm1 3.4 1.6 1.6 3.2-3.2.9.9L7 9.7 4.5 7.2z",
    "play": "M5 3.5v9l7-4.5z",
}

ICONS = tuple(_PATHS)


def icon(name: str, role: str | None = None, title: str = "") -> str:
    """An inline SVG icon in the text colour (or the role's colour)."""
    colour = f"color:{ROLE[role]};" if role else ""
    label = f'<title>{title}</title>' if title else ""
    return (
        f'<svg class="cc-icon" width="1em" height="1em" viewBox="0 0 16 16" aria-hidden="{"false" if title else "true"}" '
        f'style="{colour}vertical-align:-0.125em;flex:none"><path fill="currentColor" d="{_PATHS[name]}"/>{label}</svg>'
    )
