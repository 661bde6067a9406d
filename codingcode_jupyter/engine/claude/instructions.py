"""``CLAUDE.md`` imports: ``@path/to/file`` pulls that file into the instructions, as in Claude Code.

A path is relative to the file that imports it, or absolute, or ``~/...``; imports nest up
to five deep; an ``@`` inside a code span or a fenced code block is text, not an import, and
so is an ``@`` right after a letter (an e-mail address). A file that does not exist is left
as written.

What is imported is sent to the model provider with the system prompt, so a file that came
with the project may import only files inside the project, and no file may import a dotenv
file or a credential store: those imports are refused and listed, never read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..secret_files import credential_store, is_env_file

__all__ = ["Imported", "expand_imports", "refusal", "MAX_DEPTH"]

MAX_DEPTH = 5
_IMPORT = re.compile(r"(?<![\w@`/])@((?:~/|\.{1,2}/|/)?[\w.\-~/]*[\w\-~]+(?:\.[\w-]+)?)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


@dataclass
class Imported:
    """A file's text with its imports appended, and what was imported or refused (and why)."""

    text: str
    imported: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def _candidates(text: str) -> list[str]:
    """The ``@path`` words of ``text`` outside code."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _IMPORT.finditer(_CODE_SPAN.sub("", line)):
            word = match.group(1).rstrip(".")
            if word and word not in found:
                found.append(word)
    return found


def refusal(target: Path, root: Path | None) -> str | None:
    """Why ``target`` (a real path) may not be read into instructions confined to ``root``, or None."""
    if is_env_file(target.name):
        return "a dotenv file holds secrets"
    if credential_store(target) is not None:
        return "a credential store"
    if root is not None and target != root and root not in target.parents:
        return "outside the project (a project's instructions may import only the project's files)"
    return None


def expand_imports(path: Path, text: str, *, root: Path | None, depth: int = 0,
                   seen: set[Path] | None = None) -> Imported:
    """``text`` (the contents of ``path``) with the files it imports appended, each once.

    ``root`` confines imports to a directory (the project, for the project's files); None
    lets the person's own files import from anywhere but secrets.
    """
    seen = seen if seen is not None else {Path(os.path.realpath(path))}
    result = Imported(text)
    if depth >= MAX_DEPTH:
        return result
    base = Path(path).parent
    for word in _candidates(text):
        target = Path(os.path.realpath(os.path.join(base, os.path.expanduser(word))))
        if not target.is_file():
            continue
        why = refusal(target, Path(os.path.realpath(root)) if root is not None else None)
        if why is not None:
            result.refused.append(f"@{word} in {path}: not imported, {why}")
            continue
        if target in seen:
            continue
        seen.add(target)
        try:
            inner = target.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        nested = expand_imports(target, inner, root=root, depth=depth + 1, seen=seen)
        result.text += f"\n\n<imported path=\"{word}\">\n{nested.text}\n</imported>"
        result.imported.append(str(target))
        result.imported.extend(nested.imported)
        result.refused.extend(nested.refused)
    return result
