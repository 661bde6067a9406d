"""Turning untrusted text (model output, tool input, file diffs) into safe HTML."""

from __future__ import annotations

import html
import json
import unicodedata
from typing import Any

__all__ = ["reveal", "h", "pretty_json", "short"]

# Characters a person cannot see or that reorder what they see: controls, formats (zero
# width, bidi overrides), private use, separators other than the plain space.
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"}


def reveal(text: str) -> str:
    """Escape invisible and direction-changing characters as ``\\u{...}`` so they show."""
    out = []
    for char in text:
        if char in "\n\t " or unicodedata.category(char) not in _HIDDEN_CATEGORIES:
            out.append(char)
        else:
            out.append(f"\\u{{{ord(char):04x}}}")
    return "".join(out)


def h(text: Any) -> str:
    """HTML-escaped, with hidden characters revealed."""
    return html.escape(reveal(str(text)), quote=True)


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def short(text: str, limit: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
