"""Where the organisation's managed settings files are (read by :mod:`.settings`, applied by :mod:`.managed`).

Ours, ``/etc/codingcode/managed-settings.json``, and Claude Code's,
``/etc/claude-code/managed-settings.json``, read the same way. ``CODINGCODE_MANAGED_DIR`` and
``CODINGCODE_CLAUDE_MANAGED_DIR`` move the directories (tests; images that keep their policy
elsewhere).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["FILE_NAME", "MANAGED_SOURCES", "managed_dir", "claude_managed_dir"]

FILE_NAME = "managed-settings.json"
# The settings sources of the managed files (their rules outrank the others').
MANAGED_SOURCES = frozenset({"managed", "claude-managed"})


def managed_dir() -> Path:
    """Where our managed file is: ``CODINGCODE_MANAGED_DIR``, else ``/etc/codingcode``."""
    return Path(os.environ.get("CODINGCODE_MANAGED_DIR") or "/etc/codingcode")


def claude_managed_dir() -> Path:
    """Where Claude Code's managed file is: ``CODINGCODE_CLAUDE_MANAGED_DIR``, else ``/etc/claude-code``."""
    return Path(os.environ.get("CODINGCODE_CLAUDE_MANAGED_DIR") or "/etc/claude-code")
