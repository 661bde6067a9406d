"""Path patterns as rules and the sandbox read them: ``*`` within one name, ``**`` across
directories (``**/`` also matching none), ``?``, ``[...]`` (``[!...]`` negated), ``\\`` escaping.

One reading for both: a path a deny rule names is the path the sandbox hides or keeps read-only.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["GLOB_CHARS", "has_glob", "path_regex"]

GLOB_CHARS = frozenset("*?[")


def has_glob(pattern: str) -> bool:
    """Whether ``pattern`` holds a wildcard (an escaped one does not count)."""
    escaped = False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in GLOB_CHARS:
            return True
    return False


@lru_cache(maxsize=1024)
def path_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append(f"[{'^' + body[1:] if body.startswith('!') else body}]")
                i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out), re.DOTALL)
