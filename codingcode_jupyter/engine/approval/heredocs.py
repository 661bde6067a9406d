"""Here-documents cut out of a command line before it is parsed: their bodies are data.

Terminal agents write files with here-documents (``cat <<'EOF' > app.py`` ... ``EOF``) and run
scripts with them (``python3 - <<'EOF'``). bashlex cannot read a quoted delimiter (``<<'EOF'``,
the common form), and a body parsed as shell words is judged as words it is not. So each
here-document is cut out here, as bash reads it: its operator and delimiter word are replaced by
an input redirect from a placeholder name, and its body lines are removed. The walker
(:mod:`.shell_parse`) turns the placeholder back into a here-document redirect whose target is
the body, judged as the input of the program that reads it.

Bash's rules kept: the delimiter is the word after ``<<`` with its quotes removed, and any quote
or backslash in it means the body is not expanded; ``<<-`` strips leading tabs from the body and
the terminator line; the bodies follow the line that holds their operators, in order; a body with
no terminator runs to the end. ``<<<`` (a here-string) and ``<<`` inside arithmetic
(``$((1 << 2))``) are not here-documents.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import budget

__all__ = ["HereDoc", "cut_heredocs"]

_METACHARS = frozenset(" \t\n;&|<>()")


@dataclass(frozen=True)
class HereDoc:
    """One here-document: its body, and whether bash expands it (an unquoted delimiter)."""

    body: str
    delimiter: str
    literal: bool
    strip_tabs: bool
    # The terminator line was found (else the body runs to the end of the text, as bash reads it).
    complete: bool = True


def _delimiter_word(source: str, i: int) -> tuple[str, str, int]:
    """The word at ``i``: (as written, quotes removed, index after it)."""
    start, n = i, len(source)
    out: list[str] = []
    while i < n and source[i] not in _METACHARS:
        ch = source[i]
        if ch in "'\"":
            end = source.find(ch, i + 1)
            end = n if end < 0 else end
            out.append(source[i + 1:end])
            i = end + 1
        elif ch == "\\" and i + 1 < n:
            out.append(source[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return source[start:i], "".join(out), i


def _read_body(source: str, i: int, pending: tuple[str, bool]) -> tuple[str, bool, int]:
    """The body starting at ``i`` up to its terminator line: (body, terminated, index after it)."""
    delimiter, strip_tabs = pending
    lines: list[str] = []
    n = len(source)
    while i < n:
        budget.check()
        end = source.find("\n", i)
        line = source[i:] if end < 0 else source[i:end]
        next_i = n if end < 0 else end + 1
        shown = line.lstrip("\t") if strip_tabs else line
        if shown == delimiter:
            return "\n".join(lines), True, next_i
        lines.append(shown)
        i = next_i
    return "\n".join(lines), False, n


def cut_heredocs(source: str, token: str) -> tuple[str, dict[str, HereDoc]]:
    """``source`` with its here-documents cut out, and each one by the placeholder name
    (``token`` + its number) that stands for it in the text."""
    if "<<" not in source:
        return source, {}
    out: list[str] = []
    found: dict[str, HereDoc] = {}
    pending: list[tuple[str, str, bool, bool]] = []  # (placeholder, delimiter, literal, strip_tabs)
    quote: str | None = None  # "'", '"', "$'" or "`"
    arithmetic = 0  # depth of parentheses inside $(( )) / (( ))
    i, n = 0, len(source)
    word_start = True
    while i < n:
        if i % 4096 == 0:
            budget.check()
        ch = source[i]
        if quote is not None:
            i, quote = _quoted_char(source, i, quote, out)
            continue
        if ch == "\\" and i + 1 < n:
            out.append(source[i:i + 2])
            i += 2
            word_start = False
            continue
        if ch in "'\"`":
            quote = ch
        elif ch == "$" and source.startswith("$'", i):
            out.append("$'")
            quote, i, word_start = "$'", i + 2, False
            continue
        elif ch == "#" and word_start and not arithmetic:
            end = source.find("\n", i)
            end = n if end < 0 else end
            out.append(source[i:end])
            i = end
            continue
        elif source.startswith("((", i) and (arithmetic or word_start or source[i - 1:i] == "$"):
            arithmetic += 2
            out.append("((")
            i += 2
            continue
        elif ch == "(" and arithmetic:
            arithmetic += 1
        elif ch == ")" and arithmetic:
            arithmetic -= 1
        elif source.startswith("<<<", i):
            out.append("<<<")  # a here-string: its word is on the line
            i, word_start = i + 3, False
            continue
        elif ch == "<" and source.startswith("<<", i) and not arithmetic:
            after = _cut_operator(source, i, f"{token}{len(found) + len(pending)}", pending, out)
            if after is not None:
                i, word_start = after, False
                continue
        elif ch == "\n" and pending:
            out.append("\n")
            i = _cut_bodies(source, i + 1, pending, found)
            word_start = True
            continue
        out.append(ch)
        word_start = ch in " \t\n;&|()<>"
        i += 1
    for placeholder, delimiter, literal, strip_tabs in pending:
        # An operator on the last line: its body is empty (bash warns: delimited by end-of-file).
        found[placeholder] = HereDoc("", delimiter, literal, strip_tabs, complete=False)
    return "".join(out), found


def _quoted_char(source: str, i: int, quote: str, out: list[str]) -> tuple[int, str | None]:
    """The character at ``i`` inside ``quote``, kept as written: (index after it, the quote still open).

    A backslash carries the next character with it (so an escaped quote does not close), except
    between single quotes, where bash gives it no meaning."""
    ch = source[i]
    out.append(ch)
    if ch == "\\" and quote != "'" and i + 1 < len(source):
        out.append(source[i + 1])
        return i + 2, quote
    return i + 1, None if ch == quote[-1] else quote


def _cut_operator(source: str, i: int, placeholder: str, pending: list[tuple[str, str, bool, bool]],
                  out: list[str]) -> int | None:
    """The `<<` operator at ``i`` and its delimiter word, replaced in ``out`` by an input redirect
    from ``placeholder``, whose body is then ``pending``: the index after the word, or None when no
    word follows (the `<<` is then kept as written)."""
    strip_tabs = source.startswith("<<-", i)
    j = i + (3 if strip_tabs else 2)
    while j < len(source) and source[j] in " \t":
        j += 1
    written, delimiter, after = _delimiter_word(source, j)
    if not written:
        return None
    literal = any(c in written for c in "'\"\\")
    pending.append((placeholder, delimiter, literal, strip_tabs))
    out.append(f"< {placeholder}")
    return after


def _cut_bodies(source: str, i: int, pending: list[tuple[str, str, bool, bool]], found: dict[str, HereDoc]) -> int:
    """The bodies of the line's ``pending`` here-documents, which follow it in order, from ``i``
    into ``found`` (``pending`` is then empty): the index after the last one."""
    for placeholder, delimiter, literal, strip_tabs in pending:
        body, complete, i = _read_body(source, i, (delimiter, strip_tabs))
        found[placeholder] = HereDoc(body, delimiter, literal, strip_tabs, complete)
    pending.clear()
    return i
