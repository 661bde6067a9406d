"""Where the organisation's managed settings files are (read by :mod:`.settings`, applied by :mod:`.managed`).

Ours, ``/etc/codingcode/managed-settings.json``, and Claude Code's,
``/etc/claude-code/managed-settings.json``, read the same way. ``CODINGCODE_MANAGED_DIR`` and
``CODINGCODE_CLAUDE_MANAGED_DIR`` move the directories (tests; images that keep their policy
elsewhere).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["FILE_NAME", "MCP_FILE_NAME", "DROP_IN_DIR", "MANAGED_SOURCES", "managed_dir", "claude_managed_dir",
           "managed_mcp_files", "drop_in_files"]

FILE_NAME = "managed-settings.json"
# The MCP servers the organisation provides, beside the managed settings; while one exists it has
# exclusive control: no other server starts.
MCP_FILE_NAME = "managed-mcp.json"
# Beside the managed file: fragments (*.json, read in name order after it, as Claude Code reads them) that
# teams of an organisation deploy separately. Each is a managed layer of its own, "claude-managed.d/NAME".
DROP_IN_DIR = "managed-settings.d"


class _ManagedSources(frozenset[str]):
    """The settings sources of the managed files (their rules outrank the others'), drop-ins included."""

    def __contains__(self, source: object) -> bool:
        return isinstance(source, str) and (frozenset.__contains__(self, source)
                                            or frozenset.__contains__(self, source.partition(".d/")[0]))


MANAGED_SOURCES = _ManagedSources({"managed", "claude-managed"})


# The system-wide directories by platform, where an administrator (or a device manager) puts the
# policy and a person cannot write: Claude Code's are where Claude Code looks for its own file.
_OURS = {"darwin": "/Library/Application Support/codingcode", "win32": r"C:\ProgramData\codingcode"}
_CLAUDE = {"darwin": "/Library/Application Support/ClaudeCode", "win32": r"C:\Program Files\ClaudeCode"}


def managed_dir() -> Path:
    """Where our managed file is: ``CODINGCODE_MANAGED_DIR``, else ``/etc/codingcode`` (Linux;
    ``/Library/Application Support/codingcode`` on macOS, ``C:\\ProgramData\\codingcode`` on Windows)."""
    return Path(os.environ.get("CODINGCODE_MANAGED_DIR") or _OURS.get(sys.platform, "/etc/codingcode"))


def claude_managed_dir() -> Path:
    """Where Claude Code's managed file is: ``CODINGCODE_CLAUDE_MANAGED_DIR``, else ``/etc/claude-code``
    (Linux; ``/Library/Application Support/ClaudeCode`` on macOS, ``C:\\Program Files\\ClaudeCode`` on Windows)."""
    return Path(os.environ.get("CODINGCODE_CLAUDE_MANAGED_DIR") or _CLAUDE.get(sys.platform, "/etc/claude-code"))


def managed_mcp_files() -> list[Path]:
    """The ``managed-mcp.json`` files that exist: Claude Code's, then ours."""
    return [path for path in (claude_managed_dir() / MCP_FILE_NAME, managed_dir() / MCP_FILE_NAME) if path.exists()]


def drop_in_files(directory: Path) -> list[Path]:
    """The drop-in fragments of a managed directory in the order they apply (hidden files left out)."""
    try:
        found = [path for path in (directory / DROP_IN_DIR).iterdir()
                 if path.suffix == ".json" and not path.name.startswith(".") and path.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda path: path.name)
