"""The text of Claude Code's commands and skills: their ``allowed-tools`` and ``argument-hint`` as
written, and what is filled into their bodies when they are used (arguments, variables).

Shared by slash commands (:mod:`..commands`) and skills (:mod:`..skills`), which Claude Code
reads the same way.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

__all__ = ["allowed_tools_list", "hint_text", "fill_variables", "fill_arguments", "words_of", "shape_notes"]

_POSITIONAL = re.compile(r"\$(\d)")
_INDEXED = re.compile(r"\$ARGUMENTS\[(\d+)\]")
_VARIABLE = re.compile(r"\$\{(CLAUDE_PLUGIN_ROOT|CLAUDE_PLUGIN_DATA|CLAUDE_SKILL_DIR|CLAUDE_SESSION_ID)\}")


def allowed_tools_list(value: object) -> tuple[str, ...]:
    """``allowed-tools`` as rules: a list, Claude Code's comma-separated string, or the Agent Skills
    form, names separated by spaces (``Bash Read Grep Glob``). Neither a comma nor a space inside a
    rule's parentheses splits it (``Bash(git log:*)``)."""
    if isinstance(value, list):
        return tuple(str(item).strip() for item in value if str(item).strip())
    if not isinstance(value, str):
        return ()
    out, depth, word = [], 0, ""
    for ch in value:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and (ch == "," or ch.isspace()):
            out.append(word.strip())
            word = ""
        else:
            word += ch
    out.append(word.strip())
    return tuple(item for item in out if item)


def hint_text(value: object) -> str:
    """``argument-hint`` as the person wrote it: YAML reads ``[file]`` as a list, which is shown
    as written (``[file]``), not as Python shows a list."""
    if isinstance(value, list):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return "" if value is None else str(value)


# The shape each front matter field must have to be read; a value of another shape is left out.
_SHAPES: dict[str, tuple[tuple[type, ...], str]] = {
    "allowed-tools": ((str, list), "a list or a string of tools"),
    "model": ((str,), "a model name"),
    "disable-model-invocation": ((bool,), "true or false"),
    "user-invocable": ((bool,), "true or false"),
}


def shape_notes(fields: dict[str, object]) -> list[str]:
    """One note for each field of a command's or skill's front matter whose value cannot be read, which
    is then left out (``disable-model-invocation: "yes"`` must not pass for false without a word)."""
    return [f"'{key}': {value!r} is not {what}; " + (_DOUBT.get(key) or "left out") for key, (kinds, what) in _SHAPES.items()
            if (value := fields.get(key)) is not None and not isinstance(value, kinds)]


# Where a value in doubt is read the tighter way rather than left out.
_DOUBT = {"disable-model-invocation": "read as true: the model does not load it on its own"}


def words_of(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def fill_variables(text: str, *, skill_dir: Path | None = None, plugin_root: Path | None = None,
                   plugin_data: Path | None = None, session_id: str = "") -> str:
    """``text`` with ``${CLAUDE_PLUGIN_ROOT}``, ``${CLAUDE_PLUGIN_DATA}``, ``${CLAUDE_SKILL_DIR}`` and
    ``${CLAUDE_SESSION_ID}`` filled in where they are known (the others stay as written)."""
    values = {"CLAUDE_PLUGIN_ROOT": plugin_root, "CLAUDE_PLUGIN_DATA": plugin_data, "CLAUDE_SKILL_DIR": skill_dir,
              "CLAUDE_SESSION_ID": session_id or None}
    return _VARIABLE.sub(lambda m: str(values[m.group(1)]) if values[m.group(1)] else m.group(0), text)


def fill_arguments(body: str, arguments: str, *, append: bool = True) -> str:
    """``body`` with ``$ARGUMENTS``, ``$ARGUMENTS[N]`` (from 0) and ``$1``...``$9`` (from 1) filled in;
    ``append``: arguments a body does not name are added as ``ARGUMENTS: ...``."""
    words = words_of(arguments)
    named = "$ARGUMENTS" in body or bool(_POSITIONAL.search(body))
    body = _INDEXED.sub(lambda m: words[int(m.group(1))] if int(m.group(1)) < len(words) else "", body)
    body = body.replace("$ARGUMENTS", arguments)
    body = _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if 0 < int(m.group(1)) <= len(words) else "", body)
    if append and arguments and not named:
        body = f"{body}\n\nARGUMENTS: {arguments}"
    return body
