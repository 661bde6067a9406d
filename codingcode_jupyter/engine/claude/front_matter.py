"""The YAML front matter of a Markdown file (agents, commands, skills), read as Claude Code reads it.

Claude Code's own files carry front matter that strict YAML rejects: an unquoted ``: `` inside
a value (``description: Use this agent when...: examples``), or an ``argument-hint`` written
``[file] [mode]``. Claude Code loads those files: a line ``key: value`` whose value does not
parse on its own because it holds ``: `` is read as the plain text after ``key: ``. We do
the same, and say so in a note. An ``argument-hint: [file] [mode]`` (two flow lists, invalid)
Claude Code drops with the whole front matter; we read it as its text, also with a note; front matter that still cannot be read (a value continued on unindented lines, say) is
left out with a note naming the line, and the body still counts, as in Claude Code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["FrontMatter", "read_front_matter"]

_FENCE = re.compile(r"^---[ \t]*$")
# `[file] [mode]`: a bracketed word followed by more text (an unclosed `[a, b` stays an error).
_HINT = re.compile(r"^[\[{][^\]}]*[\]}]\s*\S")
_KEY_LINE = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:[ \t]+(\S.*?)[ \t]*$")


@dataclass
class FrontMatter:
    """What a file's front matter holds, its body, and how it was read."""

    fields: dict[str, Any]
    body: str
    # Whether the file starts with a front matter block at all.
    present: bool
    # How the front matter was read where strict YAML would not (one sentence each).
    notes: list[str] = field(default_factory=list)
    # The front matter could not be read even leniently (its fields are then empty).
    broken: bool = False


def _yaml_problem(error: yaml.YAMLError, first_line: int) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if mark is not None:
        return f"invalid YAML at line {mark.line + first_line}, column {mark.column + 1}: {problem}"
    return f"invalid YAML: {problem}"


def _alone(key: str, value: str) -> bool:
    """Whether ``key: value`` is valid YAML on its own line."""
    try:
        yaml.safe_load(f"{key}: {value}")
    except yaml.YAMLError:
        return False
    return True


def _quoted(front: str) -> tuple[str, list[str]]:
    """``front`` with each top-level ``key: text: more`` line, and ``key: [a] [b]``, quoted when not YAML on its own."""
    out, keys = [], []
    for line in front.splitlines():
        match = _KEY_LINE.match(line)
        value = match.group(2) if match else ""
        if match and (": " in value or _HINT.match(value)) and not _alone(match.group(1), value):
            out.append(f"{match.group(1)}: {json.dumps(match.group(2))}")
            keys.append(match.group(1))
        else:
            out.append(line)
    return "\n".join(out) + "\n", keys


def read_front_matter(text: str) -> FrontMatter:
    """The front matter and body of ``text`` (a file without front matter is all body)."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or not _FENCE.match(lines[0].rstrip("\r\n")):
        return FrontMatter({}, text.lstrip("\ufeff"), present=False)
    end = next((i for i in range(1, len(lines)) if _FENCE.match(lines[i].rstrip("\r\n"))), None)
    if end is None:
        return FrontMatter({}, "".join(lines[1:]), present=True, broken=True,
                           notes=["the front matter has no closing '---' line; it is not read"])
    front, body = "".join(lines[1:end]), "".join(lines[end + 1:])
    try:
        raw = yaml.safe_load(front)
        notes: list[str] = []
    except yaml.YAMLError as error:
        problem = _yaml_problem(error, 2)
        fixed, keys = _quoted(front)
        try:
            raw = yaml.safe_load(fixed) if keys else None
        except yaml.YAMLError:
            keys = []
        if not keys:
            return FrontMatter({}, body, present=True, broken=True,
                               notes=[f"the front matter is not read: {problem} "
                                      "(quote the value, or indent the lines that continue it)"])
        notes = [f"front matter: {problem}; read as Claude Code reads it: "
                 f"{', '.join(keys)} taken as the plain text after '{keys[0]}: '"]
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return FrontMatter({}, body, present=True, broken=True,
                           notes=["the front matter must be a mapping of 'key: value' lines; it is not read"])
    return FrontMatter({str(k): v for k, v in raw.items()}, body, present=True, notes=notes)
