"""Where Claude Code keeps its files, beside ours.

The person's own: ``~/.claude`` (or ``$CLAUDE_CONFIG_DIR``, Claude Code's own variable for
it): ``settings.json``, ``agents/*.md``, ``CLAUDE.md``. The project's: ``.claude/settings.json``
(shared), ``.claude/settings.local.json`` (personal), ``.claude/agents/*.md``, ``CLAUDE.md``,
``.claude/CLAUDE.md``, ``CLAUDE.local.md``. What comes with the project is a project file
for the trust boundary, whichever product wrote it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CONFIG_DIR_VAR", "claude_dir", "project_claude_dir"]

CONFIG_DIR_VAR = "CLAUDE_CONFIG_DIR"


def claude_dir() -> Path:
    """The person's Claude Code directory (it may not exist)."""
    override = os.environ.get(CONFIG_DIR_VAR)
    return Path(override).expanduser() if override else Path.home() / ".claude"


def project_claude_dir(project: Path) -> Path:
    """The project's ``.claude`` directory (it may not exist)."""
    return Path(project) / ".claude"
