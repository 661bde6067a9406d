"""``denyRead`` and ``denyWrite`` entries, which a person writes as paths and the person's deny rules
bring as patterns (engine/path_globs.py): a path, or a pattern whose wildcards end in ``/**`` (a
directory, whole), is taken as it is; another pattern inside the project is matched as the walk
lists each directory (:class:`.project_scan.ProjectScan`), so a file made later is covered from the
next command on; outside the project it is matched once, against what exists, within a bound."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..path_globs import has_glob, path_regex

__all__ = ["DenyPaths", "split_deny"]

# Entries looked at when a pattern outside the project is matched (a pattern under `/` would walk the disk).
_OUTSIDE_WALK_MAX = 20_000


@dataclass
class DenyPaths:
    literal: list[Path] = field(default_factory=list)
    inside: list[re.Pattern[str]] = field(default_factory=list)
    # What patterns outside the project matched when the sandbox was made.
    outside_found: list[Path] = field(default_factory=list)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _expand(project: Path, raw: str) -> str:
    path = os.path.expanduser(raw)
    return path if os.path.isabs(path) else os.path.join(project, path)


def _literal_prefix(pattern: str) -> str:
    """The directory part of ``pattern`` before its first wildcard."""
    cut = min((i for i, ch in enumerate(pattern) if ch in "*?[" and (i == 0 or pattern[i - 1] != "\\")),
              default=len(pattern))
    return _unescape(pattern[:cut].rsplit("/", 1)[0]) or "/"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def split_deny(entries: list[str], project: Path) -> DenyPaths:
    """Sort ``entries`` (``project`` real) as the module docstring says."""
    out = DenyPaths()
    root = str(project)
    for raw in entries:
        pattern = _expand(project, raw)
        if pattern.endswith("/**") and not has_glob(pattern[:-3]):
            pattern = pattern[:-3]
        if not has_glob(pattern):
            out.literal.append(Path(os.path.realpath(_unescape(pattern))))
            continue
        prefix = _literal_prefix(pattern)
        if _within(os.path.realpath(prefix), root) or _within(root, os.path.realpath(prefix)):
            out.inside.append(path_regex(pattern))
            if not _within(os.path.realpath(prefix), root):
                out.outside_found += _match_outside(pattern, prefix, root)
            continue
        out.outside_found += _match_outside(pattern, prefix, root)
    return out


def _match_outside(pattern: str, prefix: str, project: str) -> list[Path]:
    """What exists under ``prefix`` (not the project) that ``pattern`` covers, within the bound."""
    regex = path_regex(pattern)
    found: list[Path] = []
    seen = 0
    for directory, dirs, files in os.walk(prefix):
        if _within(directory, project):
            dirs[:] = []
            continue
        for name in [*dirs, *files]:
            seen += 1
            full = os.path.join(directory, name)
            if regex.fullmatch(full) or (name in dirs and regex.fullmatch(full + "/\0")):
                found.append(Path(full))
        dirs[:] = [d for d in dirs if not regex.fullmatch(os.path.join(directory, d) + "/\0")]
        if seen > _OUTSIDE_WALK_MAX:
            break
    return found
