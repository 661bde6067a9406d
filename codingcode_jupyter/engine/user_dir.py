"""The person's own directory: user-level settings, profiles, the trust store, and what the agent
keeps per project that commands must not read (undo's copies of files).

``~/.codingcode`` unless ``CODINGCODE_USER_DIR`` names another (tests, and people who keep
their configuration elsewhere). What is in it is the person's own, so it is trusted.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

__all__ = ["ENV_VAR", "checkpoints_dir", "legacy_checkpoints_dir", "project_data_dir", "user_dir"]

ENV_VAR = "CODINGCODE_USER_DIR"


def user_dir() -> Path:
    """The person's codingcode directory (it may not exist yet)."""
    override = os.environ.get(ENV_VAR)
    return Path(override).expanduser() if override else Path.home() / ".codingcode"


def project_data_dir(project: Path | str) -> Path:
    """What the agent keeps about one project outside it, named by the project's folder and a hash
    of its real path (two projects of one name stay apart)."""
    real = os.path.realpath(project)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(real) or "root")[:40]
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return user_dir() / "projects" / f"{name}-{digest}"


def checkpoints_dir(project: Path | str) -> Path:
    """Where the project's checkpoints live: outside the project, in the person's directory the
    sandbox hides, so a command can neither read a secret's earlier copy nor rewrite a manifest,
    and the project holds no hidden folder (under Landlock a hidden entry costs its parents the
    right to read what a command creates beside it)."""
    return project_data_dir(project) / "checkpoints"


def legacy_checkpoints_dir(project: Path | str) -> Path:
    """Where earlier versions kept them, inside the project."""
    return Path(project) / ".codingcode" / "checkpoints"
