"""The project's ``.codingcode`` directory keeps what the agent writes for itself out of git.

As tools' own folders do (``.pytest_cache``, ``.mypy_cache``), it holds a ``.gitignore`` of ``*``,
written the first time the agent writes there: the audit log, the sessions, the undo checkpoints,
the servers' logs and ``settings.local.json`` never show in the person's ``git status``. What a
project shares from it (``settings.json``, ``agents/``, ``commands/``, ``skills/``) is named after
the ``*``, so it can still be committed. A ``.gitignore`` already there (the person's) is left alone.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["IGNORE_FILE", "keep_out_of_git"]

OWN_DIR = ".codingcode"

IGNORE_FILE = """\
# Written by codingcode-jupyter, as tools' own folders do: what the agent keeps here for itself
# (audit.jsonl, sessions/, checkpoints/, logs/, settings.local.json) stays out of git.
# The files a project shares are not ignored.
*
!settings.json
!agents/
!agents/**
!commands/
!commands/**
!skills/
!skills/**
"""


def keep_out_of_git(path: Path) -> None:
    """Before writing ``path`` (a file or directory under a project's ``.codingcode``): give that
    directory its ``.gitignore`` if it has none. Never raises; a path elsewhere is left alone."""
    own = next((p for p in (Path(path), *Path(path).parents) if p.name == OWN_DIR), None)
    if own is None:
        return
    ignore = own / ".gitignore"
    if os.path.lexists(ignore):
        return
    try:
        own.mkdir(parents=True, exist_ok=True)
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError:
        return  # there already (a race), or not writable: the writes that follow say so
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(IGNORE_FILE)
