"""What the MCP package's light half (config, manager, resources) shares with its client half.

Kept apart from :mod:`.client` and :mod:`.oauth` so a session can hold a manager, catch a
call's error and know where tokens live without importing the ``mcp`` SDK.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["McpCallError", "default_token_dir"]


class McpCallError(Exception):
    """A call that could not get a result from the server (not started, crashed, timed out)."""


def default_token_dir() -> Path:
    return Path.home() / ".codingcode" / "mcp-tokens"
