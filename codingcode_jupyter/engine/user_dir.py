"""The person's own directory: user-level settings, profiles, the trust store.

``~/.codingcode`` unless ``CODINGCODE_USER_DIR`` names another (tests, and people who keep
their configuration elsewhere). What is in it is the person's own, so it is trusted.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_dir", "ENV_VAR"]

ENV_VAR = "CODINGCODE_USER_DIR"


def user_dir() -> Path:
    """The person's codingcode directory (it may not exist yet)."""
    override = os.environ.get(ENV_VAR)
    return Path(override).expanduser() if override else Path.home() / ".codingcode"
