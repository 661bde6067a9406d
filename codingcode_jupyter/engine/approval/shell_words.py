"""Bash's rules for words, without its parser: quote removal, brace expansion, the pieces of a line
between operators, and tolerant word splitting for lines bashlex cannot read."""

from __future__ import annotations

import re
import shlex

from .. import budget

__all__ = ["blank_arithmetic", "RESERVED_WORDS", "blank_time", "quote_word", "dequote", "expand_braces", "unquote_raw", "option_cluster_has",
           "split_segments", "tolerant_words"]


# bashlex does not implement the `time` keyword; blank it out (same length keeps positions)
# where it starts a command, the wrapper list handles /usr/bin/time separately.
_TIME_KEYWORD = re.compile(r"(^|[;&|(){}\n]\s*|!\s+)time(\s+-p)?(?=\s)")


def blank_time(source: str) -> str:
    return _TIME_KEYWORD.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), source)


def quote_word(word: str) -> str:
    return shlex.quote(word) if _AMBIGUOUS.search(word) else word


_AMBIGUOUS = re.compile(r"[\s'\"\\]")


def dequote(raw: str) -> str | None:
    """Bash quote removal of a word without expansions; None when its quotes do not close."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        elif ch == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                return None
            out.append(raw[i + 1:end])
            i = end + 1
        elif ch == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
                    if raw[i + 1] != "\n":
                        out.append(raw[i + 1])
                    i += 2
                else:
                    out.append(raw[i])
                    i += 1
            if i >= n:
                return None
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def expand_braces(word: str, limit: int = 64) -> list[str]:
    """Bash brace expansion (`{a,b}`, `{a..c}`, `{1..3}`), capped at ``limit`` words."""
    depth, start = 0, -1
    for i, ch in enumerate(word):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = word[start + 1:i]
                parts, level, last = [], 0, 0
                for j, c in enumerate(inner):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(inner[last:j])
                        last = j + 1
                parts.append(inner[last:])
                if len(parts) < 2:
                    sequence = _sequence(inner)
                    if sequence is None:
                        continue
                    parts = sequence
                out: list[str] = []
                for part in parts:
                    for tail in expand_braces(part + word[i + 1:], limit):
                        out.append(word[:start] + tail)
                        if len(out) >= limit:
                            return out
                return out
    return [word]


def _sequence(inner: str) -> list[str] | None:
    match = re.fullmatch(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])", inner)
    if not match:
        return None
    a, b = match.groups()
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        lo, hi = int(a), int(b)
        step = 1 if hi >= lo else -1
        return [str(v) for v in range(lo, hi + step, step)][:64]
    if a.isalpha() and b.isalpha():
        step = 1 if ord(b) >= ord(a) else -1
        return [chr(v) for v in range(ord(a), ord(b) + step, step)][:64]
    return None


def unquote_raw(text: str) -> str:
    """The raw text of a word with quotes and backslashes dropped, as a second opinion."""
    return re.sub(r"\\(.)", r"\1", text).replace("'", "").replace('"', "")


def option_cluster_has(args: list[str], letter: str) -> int | None:
    """Index of the first short-option cluster containing ``letter`` (e.g. `-lc`)."""
    for i, arg in enumerate(args):
        if arg == "--" or not arg.startswith("-") or arg.startswith("--"):
            if arg.startswith("--"):
                continue
            return None
        if letter in arg[1:]:
            return i
    return None


RESERVED_WORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in", "case", "esac",
                       "select", "function", "coproc", "time", "!", "{", "}", "[[", "]]", "(", ")", ";;"})


def split_segments(source: str, *, pipes: bool = True) -> list[str]:
    """The pieces of a line between operators (`;`, `&&`, `||`, newlines, `$(`, backquotes, parentheses, and
    with ``pipes`` also `|`), read even when a quote never closes: the unclosed rest is one piece."""
    segments: list[str] = []
    current: list[str] = []
    i, n = 0, len(source)
    quote: str | None = None

    def cut() -> None:
        text = "".join(current).strip()
        if text:
            segments.append(text)
        current.clear()

    while i < n:
        if i % 4096 == 0:
            budget.check()
        ch = source[i]
        if quote:
            current.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < n:
                current.append(source[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == "\\" and i + 1 < n:
            current.append(source[i:i + 2])
            i += 2
            continue
        elif ch == "|" and not pipes and not source.startswith("||", i) and (i == 0 or source[i - 1] != "|"):
            current.append(ch)
        elif ch in ";&|\n()`" or source.startswith("$(", i):
            cut()
            if source.startswith("$(", i):
                i += 1
        else:
            current.append(ch)
        i += 1
    cut()
    return segments


def tolerant_words(source: str) -> list[str]:
    """Words of one piece, quotes removed; an unclosed quote runs to the end."""
    words: list[str] = []
    current: list[str] = []
    started = False
    i, n = 0, len(source)
    while i < n:
        if i % 4096 == 0:
            budget.check()
        ch = source[i]
        if ch in " \t":
            if started:
                words.append("".join(current))
                current, started = [], False
            i += 1
            continue
        started = True
        if ch in "'\"":
            end = source.find(ch, i + 1)
            end = n if end < 0 else end
            current.append(source[i + 1:end])
            i = end + 1
        elif ch == "\\" and i + 1 < n:
            current.append(source[i + 1])
            i += 2
        elif ch in "<>":
            # A redirect: its target is still a word the rules see.
            if current:
                words.append("".join(current))
                current = []
            while i < n and source[i] in "<>&0123456789":
                i += 1
            started = False
        else:
            current.append(ch)
            i += 1
    if started:
        words.append("".join(current))
    return [w for w in words if w]


def blank_arithmetic(source: str) -> tuple[str, list[str]]:
    """``source`` with each arithmetic expansion `$((...))` (and `$[...]`) outside single quotes
    replaced by a number, which is what it expands to, and the expressions replaced. bashlex
    cannot read them; the caller judges what an expression may run."""
    if "$((" not in source and "$[" not in source:
        return source, []
    out: list[str] = []
    found: list[str] = []
    i, n = 0, len(source)
    single = False
    while i < n:
        ch = source[i]
        if single:
            single = ch != "'"
        elif ch == "\\" and i + 1 < n:
            out.append(source[i:i + 2])
            i += 2
            continue
        elif ch == "'":
            single = True
        elif source.startswith("$((", i) or source.startswith("$[", i):
            close = "))" if source[i + 1] == "(" else "]"
            depth, j = 0, i + (3 if close == "))" else 2)
            while j < n:
                if source[j] in "([":
                    depth += 1
                elif depth and source[j] in ")]":
                    depth -= 1
                elif source.startswith(close, j):
                    break
                j += 1
            if j < n:
                found.append(source[i + (3 if close == "))" else 2):j])
                out.append("1")
                i = j + len(close)
                continue
        out.append(ch)
        i += 1
    return "".join(out), found
