"""A path a tool call can reach, resolved the way the filesystem will resolve it."""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .paths import canonical
from .shell_parse import expand_braces

__all__ = ["Access", "PathRef", "resolve_all", "candidates"]

Access = Literal["read", "write", "tree", "list", "unknown"]


@dataclass
class PathRef:
    """A path a call can reach: as written, resolved (None when unknowable), and how."""

    raw: str
    resolved: Path | None
    access: Access
    via: str
    # The command walks the whole tree under the path (`cp -r`, `tar c`, `zip -r`).
    recursive: bool = False


_GLOB = re.compile(r"[*?\[]")


def candidates(word: str) -> list[str]:
    """Path-like pieces of one argument: itself, the value of `--opt=value`, `-f/path`."""
    out = [word]
    if "=" in word:
        out.append(word.split("=", 1)[1])
    if word.startswith("-") and "/" in word:
        out.append(word[word.index("/"):])
    return [c for c in out if c]


def resolve_all(project: Path, raw: str, cwd: str | None, access: Access, via: str) -> list[PathRef]:
    refs: list[PathRef] = []
    for word in expand_braces(raw):
        if not os.path.isabs(os.path.expanduser(word)) and cwd is None:
            refs.append(PathRef(word, None, access, via))
            continue
        try:
            resolved = canonical(project, word, cwd)
        except (OSError, ValueError):
            refs.append(PathRef(word, None, access, via))
            continue
        refs.append(PathRef(word, resolved, access, via))
        if _GLOB.search(word):
            base = cwd if cwd is not None else str(project)
            pattern = os.path.join(base, os.path.expanduser(word))
            for match in glob.glob(pattern)[:200]:
                refs.append(PathRef(match, canonical(project, match), access, via))
    return refs
