"""The YAML front matter of a Markdown file (agents, commands, skills), read as Claude Code reads it.

Claude Code's own files carry front matter that strict YAML rejects: an unquoted ``: `` inside
a value (``description: Use this agent when...: examples``), or an ``argument-hint`` written
``[file] [mode]``. Claude Code loads those files: a line ``key: value`` whose value does not
parse on its own because it holds ``: `` is read as the plain text after ``key: ``. We do
the same, and say so in a note. An ``argument-hint: [file] [mode]`` (two flow lists, invalid)
Claude Code drops with the whole front matter; we read it as its text, also with a note.

A value continued on unindented lines (``description: Use this agent when... Examples:`` followed
by ``<example>`` and ``user: "..."`` lines at the margin, as Anthropic's own plugin-dev agents are
written) is read when the caller names the keys its kind of file has: a line starting with one
of those keys starts a field, every other line continues the one before (so ``user:`` inside an
example is text). What still cannot be read is left out with a note naming the line, and the
body still counts, as in Claude Code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Collection

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


def _field_value(key: str, lines: list[str]) -> Any:
    """One field's value from its first line's text and the lines that continue it: YAML when the
    field reads as YAML on its own, else its plain text."""
    block = f"{key}:{(' ' + lines[0]) if lines[0] else ''}\n" + "".join(f"{line}\n" for line in lines[1:])
    try:
        parsed = yaml.safe_load(block)
    except yaml.YAMLError:
        parsed = None
    if isinstance(parsed, dict) and list(parsed) == [key]:
        return parsed[key]
    return "\n".join(lines).strip()


def _by_keys(front: str, keys: Collection[str]) -> tuple[dict[str, Any], list[str]] | None:
    """The fields of ``front`` split at the lines that start one of ``keys`` (every other line
    continues the field before it), and the keys whose value ran on over unindented lines; None
    when the text before the first such line is not empty."""
    fields: list[tuple[str, list[str]]] = []
    for line in front.splitlines():
        match = re.match(r"^([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*$", line)
        if match and match.group(1) in keys:
            fields.append((match.group(1), [match.group(2) or ""]))
        elif fields:
            fields[-1][1].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            return None
    continued = [key for key, lines in fields if any(line[:1] not in (" ", "\t", "") for line in lines[1:])]
    return {key: _field_value(key, lines) for key, lines in fields}, continued


def read_front_matter(text: str, keys: Collection[str] = ()) -> FrontMatter:
    """The front matter and body of ``text`` (a file without front matter is all body); ``keys``:
    the fields this kind of file has, for values continued on unindented lines (see the module
    docstring)."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or not _FENCE.match(lines[0].rstrip("\r\n")):
        return FrontMatter({}, text.lstrip("\ufeff"), present=False)
    end = next((i for i in range(1, len(lines)) if _FENCE.match(lines[i].rstrip("\r\n"))), None)
    if end is None:
        return FrontMatter({}, "".join(lines[1:]), present=True, broken=True,
                           notes=["the front matter has no closing '---' line; it is not read"])
    front, body = "".join(lines[1:end]), "".join(lines[end + 1:])
    keys_known = frozenset(keys)
    try:
        raw = yaml.safe_load(front)
        notes: list[str] = []
    except yaml.YAMLError as error:
        problem = _yaml_problem(error, 2)
        fixed, quoted = _quoted(front)
        try:
            raw = yaml.safe_load(fixed) if quoted else None
        except yaml.YAMLError:
            quoted = []
        split = _by_keys(front, keys) if not quoted and keys_known else None
        if split is not None and split[1]:
            fields, continued = split
            return FrontMatter(fields, body, present=True, notes=[
                f"front matter: {problem}; read as Claude Code reads it: {', '.join(continued)} continued on the "
                "unindented lines after it, taken as its text"])
        if not quoted:
            return FrontMatter({}, body, present=True, broken=True,
                               notes=[f"the front matter is not read: {problem} "
                                      "(quote the value, or indent the lines that continue it)"])
        notes = [f"front matter: {problem}; read as Claude Code reads it: "
                 f"{', '.join(quoted)} taken as the plain text after '{quoted[0]}: '"]
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return FrontMatter({}, body, present=True, broken=True,
                           notes=["the front matter must be a mapping of 'key: value' lines; it is not read"])
    return FrontMatter({str(k): v for k, v in raw.items()}, body, present=True, notes=notes)
