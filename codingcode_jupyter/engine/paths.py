"""Resolving path arguments the way the filesystem will, before anything decides on them."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["resolve_path", "is_within", "is_under"]


def resolve_path(project: Path | str, path: str | Path) -> Path:
    """``path`` made absolute against ``project``, with ``~``, ``..``, ``//`` and symlinks resolved.

    Missing trailing components are kept as written (realpath's non-strict mode), so a file
    about to be created resolves through its existing, possibly symlinked, parents.
    """
    raw = os.path.expanduser(str(path))
    if not os.path.isabs(raw):
        raw = os.path.join(str(project), raw)
    return Path(os.path.realpath(raw))


def is_within(path: Path, root: Path) -> bool:
    root = Path(os.path.realpath(root))
    return is_under(path, root) or path == root


def is_under(path: Path, root: Path) -> bool:
    """``path`` lies strictly inside ``root`` (both absolute and normalised): a test on the text, where
    ``root in path.parents`` builds every parent (quadratic for a path of thousands of parts)."""
    top = str(root)
    return str(path).startswith(top if top.endswith("/") else top + "/") and path != root
