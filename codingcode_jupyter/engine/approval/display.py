"""Text shown to a person deciding on a call, with invisible and look-alike Unicode escaped.

A command such as ``rm -rf ./build\u202e`` or ``ѕudo`` (a Cyrillic ``ѕ``) must not read as
something else: invisible characters (format, control, odd spaces) are always shown as
``\\u{XXXX}``, and a non-ASCII letter is escaped when its word also holds ASCII letters
(mixed scripts) or when it normalises to ASCII (fullwidth forms).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = ["escape_unicode", "escape_value", "has_invisible"]

_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp", "Mn", "Me"})
_WORD = re.compile(r"[^\s/\\'\"`=,;:()\[\]{}<>|&]+")


def _invisible(ch: str) -> bool:
    if ch in "\n\t":
        return False
    category = unicodedata.category(ch)
    if ch.isascii():
        return category == "Cc"
    return category in _INVISIBLE_CATEGORIES or (category == "Zs" and ch != " ")


# Parts of an emoji that draw nothing alone but belong to the picture before them: the variation
# selectors (`⚠️` is U+26A0 U+FE0F), the keycap (`1️⃣`), the joiner between two pictures (`👩‍💻`).
_EMOJI_SELECTORS = frozenset("\ufe0e\ufe0f")
_KEYCAP, _JOINER = "\u20e3", "\u200d"


def _picture(ch: str) -> bool:
    return unicodedata.category(ch) in ("So", "Sk") and not ch.isascii()


def _emoji_part(text: str, index: int) -> bool:
    """The invisible character at ``index`` is part of the emoji drawn by what is around it."""
    ch, before = text[index], text[index - 1] if index else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if ch in _EMOJI_SELECTORS:
        return bool(before) and (_picture(before) or before in "0123456789#*")
    if ch == _KEYCAP:
        return before in _EMOJI_SELECTORS or (bool(before) and before in "0123456789#*")
    if ch == _JOINER:
        return bool(before) and bool(after) and (_picture(before) or before in _EMOJI_SELECTORS) and _picture(after)
    return False


def _hidden_at(text: str, index: int) -> bool:
    return _invisible(text[index]) and not _emoji_part(text, index)


def has_invisible(text: str) -> bool:
    """True when ``text`` holds a character a person cannot see (an emoji's own parts are seen)."""
    if text.isascii():
        return any(_invisible(ch) for ch in text)
    return any(_hidden_at(text, index) for index in range(len(text)))


def _foreign(ch: str) -> bool:
    """A non-ASCII letter from another script than Latin (Cyrillic `а`, Greek `ο`...)."""
    return not ch.isascii() and ch.isalpha() and not unicodedata.name(ch, "").startswith("LATIN")


def _escape(ch: str) -> str:
    return f"\\u{{{ord(ch):04X}}}"


def escape_unicode(text: str) -> str:
    """``text`` with invisible characters and look-alike letters shown as ``\\u{XXXX}``."""
    if text.isascii() and text.isprintable():
        return text  # nothing to escape: no control character, no other script (most text, checked fast)
    shown = "".join(_escape(ch) if _hidden_at(text, index) else ch for index, ch in enumerate(text))

    def fix_word(match: re.Match[str]) -> str:
        word = match.group(0)
        mixed = any(c.isascii() and c.isalpha() for c in word) and any(_foreign(c) for c in word)
        return "".join(
            _escape(c) if not c.isascii() and ((mixed and _foreign(c)) or unicodedata.normalize("NFKC", c).isascii())
            else c for c in word
        )

    return _WORD.sub(fix_word, shown)


def escape_value(value: Any) -> Any:
    """A JSON-like value with every string escaped for display."""
    if isinstance(value, str):
        return escape_unicode(value)
    if isinstance(value, dict):
        return {escape_unicode(str(k)): escape_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_value(v) for v in value]
    return value
