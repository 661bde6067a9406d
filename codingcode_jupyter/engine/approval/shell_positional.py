"""A `sh -c SCRIPT NAME WORDS...` script's positional parameters, filled in with the words that follow it.

Bash gives the words after the script to it as ``$0`` (NAME), ``$1``... and ``"$@"``: a script of
only ``"$@"`` (or ``exec "$@"``, ``$*``...) runs those words as its command, which is how a
command hides behind a shell that seems to run nothing (``bash -c '"$@"' _ sudo id``).
:func:`forwarded` recognises such a script, so the wrapper peeler can take the words as the
command whatever the nesting; :func:`fill_positional` writes the words into any other script
(quoted as bash would split them), so the script is judged as what it runs. A script that moves
its parameters (``shift``, ``set --``, ``getopts``), defines functions (whose ``$@`` is their
own) or expands them in ways not read here (``${@:2}``, ``${1:-x}``) is left as it is: its
parameters stay unknown, and unresolved.
"""

from __future__ import annotations

import re
import shlex

__all__ = ["forwarded", "fill_positional"]

# The whole script forwards its words: `"$@"`, `exec "$@"`, `$*`, `"${@}"`... (a trailing `;` allowed).
_FORWARD = re.compile(r"\s*(?:exec\s+(?:--\s+)?)?(\"?)\$(?:[@*]|\{[@*]\})\1\s*;?\s*")
# What changes or shadows the positional parameters: then they are not the words after the script.
_MOVES = re.compile(r"(?:^|[\s;&|(){}`])(?:shift|getopts|function)(?=$|[\s;&|()])|\(\s*\)")
_SET = re.compile(r"(?:^|[\s;&|(){}`])set(?=$|[\s;&|()])([^;&|\n)]*)")
# `$@ $* $# $0-$9`, `${@} ${*} ${#} ${N}`.
_SIMPLE = re.compile(r"\$(?:([@*#0-9])|\{([@*#]|[0-9]+)\})")


def forwarded(script: str) -> str | None:
    """"@" or "*" when ``script`` does nothing but run its words (``"$@"``, ``exec $*``...), else None."""
    match = _FORWARD.fullmatch(script)
    if match is None:
        return None
    return "*" if "*" in script else "@"


def _moves_parameters(script: str) -> bool:
    if _MOVES.search(script):
        return True
    for match in _SET.finditer(script):
        words = match.group(1).split()
        # `set -e`, `set -eu -o pipefail` only set options; `set --`, `set a b` replace the parameters.
        for index, word in enumerate(words):
            if word in ("--", "-") or not re.fullmatch(r"[-+][A-Za-z]+", word) and words[index - 1:index] not in (
                    ["-o"], ["+o"]):
                return True
    return False


def _in_double(word: str) -> str:
    return word.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")


def _unquoted(words: list[str]) -> str:
    # Unquoted, bash splits each value into fields at blanks.
    return " ".join(shlex.quote(field) for word in words for field in word.split())


def _expansion(key: str, name: str, words: list[str], quoted: bool) -> str:
    if key == "#":
        return str(len(words))
    if key in ("@", "*"):
        if not quoted:
            return _unquoted(words)
        if key == "*":
            return _in_double(" ".join(words))
        # "$@": one word per parameter, the quote closed and opened again between them.
        return '" "'.join(_in_double(word) for word in words)
    index = int(key)
    value = name if index == 0 else (words[index - 1] if index <= len(words) else "")
    return _in_double(value) if quoted else _unquoted([value])


def _scan(script: str, name: str, words: list[str]) -> str | None:
    """The script with its parameters filled in, or None where one is expanded in a way not read here."""
    out: list[str] = []
    i, n, double = 0, len(script), False
    while i < n:
        ch = script[i]
        if ch == "\\" and i + 1 < n:
            out.append(script[i:i + 2])
            i += 2
            continue
        if ch == "'" and not double:
            end = script.find("'", i + 1)
            end = n - 1 if end < 0 else end
            out.append(script[i:end + 1])
            i = end + 1
            continue
        if ch == '"':
            double = not double
        elif ch == "$":
            simple = _SIMPLE.match(script, i)
            if simple is not None:
                key = simple.group(1) or simple.group(2)
                if key in ("@", "*") and not words:
                    return None  # `"$@"` with no words is no word at all: not written as text
                out.append(_expansion(key, name, words, double))
                i = simple.end()
                continue
            if script.startswith("${", i) and re.match(r"\$\{[#!]?[@*0-9]", script[i:]):
                return None  # `${@:2}`, `${1:-x}`, `${#1}`: not read here
        out.append(ch)
        i += 1
    return "".join(out)


def fill_positional(script: str, name: str, words: list[str]) -> str | None:
    """``script`` with ``$0`` as ``name`` and ``$1``... / ``"$@"`` as ``words`` written in, quoted as
    bash would split them; None when it has no parameters to fill or moves them (the module docstring)."""
    if not _SIMPLE.search(script) and "${" not in script:
        return None
    if _moves_parameters(script):
        return None
    filled = _scan(script, name, words)
    return filled if filled != script else None
