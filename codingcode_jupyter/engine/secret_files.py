"""Which file names hold secrets by convention: one predicate shared by the rules and the sandbox.

The built-in rule that asks before touching `.env` files and the sandbox that hides them
must agree on the name, or a file is asked about but readable by commands (or hidden but
allowed): `.env`, and `.env` followed by `.`, `-` or `_` (`.env.local`, `.env-production`,
`.env_test`). `.envrc` (direnv) and `env.py` are code, not dotenv files.
"""

from __future__ import annotations

__all__ = ["is_env_file"]


def is_env_file(name: str) -> bool:
    """True for a dotenv file's base name (`.env`, `.env.local`, `.env-prod`, `.env_test`)."""
    return name == ".env" or (name.startswith(".env") and len(name) > 4 and name[4] in ".-_")
