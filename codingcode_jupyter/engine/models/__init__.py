"""Model backends: the Anthropic SDK adapter and the offline demo model."""

from __future__ import annotations

import os

from .base import Model, ModelError, ModelRequest, ModelResponse
from .clients import has_api_key

__all__ = ["Model", "ModelError", "ModelRequest", "ModelResponse", "make_model", "resolve_model_name", "has_api_key"]

DEMO = "demo"


def resolve_model_name(requested: str | None) -> tuple[str, str | None]:
    """The model to use and, when we fell back to the demo, a one-line notice saying why.

    A Claude Code alias (``sonnet``, ``opus``, ``haiku``) becomes the model id it stands for.
    """
    from .aliases import resolve_alias

    requested = resolve_alias(requested) if requested != DEMO else requested
    if requested:
        return requested, None
    if not has_api_key():
        return DEMO, (
            "No ANTHROPIC_API_KEY is set, so this is the offline demo model playing a scripted session "
            "on your project. Set the key to use Claude: `%agent login` in a notebook (it never shows in the output)."
        )
    from .anthropic import DEFAULT_MODEL

    return os.environ.get("CODINGCODE_MODEL") or DEFAULT_MODEL, None


def make_model(name: str) -> Model:
    if name == DEMO:
        from .demo import DemoModel

        return DemoModel()
    from .anthropic import AnthropicModel

    return AnthropicModel(name)
