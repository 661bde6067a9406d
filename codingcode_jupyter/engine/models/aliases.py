"""Model aliases Claude Code's files use (``sonnet``, ``opus``, ``haiku``), in one table.

An agent file's ``model: haiku`` or a settings file's ``"model": "opus"`` names a model
family, not a model; the API needs an id. ``inherit`` (an agent file's) means the
dispatching agent's model. Anything else is taken as a model id as written.
"""

from __future__ import annotations

from .anthropic import DEFAULT_MODEL

__all__ = ["MODEL_ALIASES", "INHERIT", "resolve_alias"]

INHERIT = "inherit"

# The current model of each family. Kept here only: change a family's model in this one place.
MODEL_ALIASES: dict[str, str] = {
    "sonnet": DEFAULT_MODEL,
    "sonnet[1m]": DEFAULT_MODEL,
    "opus": "claude-opus-4-5",
    "opusplan": "claude-opus-4-5",
    "haiku": "claude-haiku-4-5",
    "default": DEFAULT_MODEL,
}


def resolve_alias(name: str | None) -> str | None:
    """The model id ``name`` stands for; None for None, "" and ``inherit``."""
    if name is None:
        return None
    text = name.strip()
    if not text or text.lower() == INHERIT:
        return None
    return MODEL_ALIASES.get(text.lower(), text)
