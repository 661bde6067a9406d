"""How many tokens a model can take, and a cheap local estimate of how many a request uses.

The window comes from a table kept here, overridden by the ``contextWindow`` setting or the
``CODINGCODE_CONTEXT_WINDOW`` environment variable (the variable wins: it is how tests and a
person at the kernel try a small window without editing files).
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from ..models.base import ModelRequest

__all__ = [
    "CONTEXT_WINDOWS",
    "DEFAULT_WINDOW",
    "ENV_VAR",
    "MIN_WINDOW",
    "ContextWindowError",
    "context_window",
    "estimate_tokens",
    "request_chars",
]

ENV_VAR = "CODINGCODE_CONTEXT_WINDOW"
DEFAULT_WINDOW = 200_000
# Below this a system prompt, the tool schemas and one answer no longer fit.
MIN_WINDOW = 4_000

# Matched by longest prefix, like the price table.
CONTEXT_WINDOWS: dict[str, int] = {
    "claude-": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3": 200_000,
    "demo": 200_000,
}

# Tokens per character of the JSON a request is sent as. JSON of English text and code runs
# 3.5-4.5 characters a token; non-ASCII is escaped (\\uXXXX), which over-counts on purpose.
CHARS_PER_TOKEN = 4.0


class ContextWindowError(ValueError):
    """A context window override that cannot be used; the message says where it came from."""


def _parse(value: Any, source: str) -> int:
    try:
        number = int(str(value).strip().replace("_", "").replace(",", ""))
    except ValueError:
        raise ContextWindowError(f"{source}: the context window must be a whole number of tokens, got {value!r}") from None
    if number < MIN_WINDOW:
        raise ContextWindowError(f"{source}: a context window of {number} tokens is too small (at least {MIN_WINDOW})")
    return number


def context_window(model: str, setting: int | None = None, env: Mapping[str, str] | None = None) -> int:
    """The window in tokens for ``model``: the env variable, else the setting, else the table."""
    raw = (os.environ if env is None else env).get(ENV_VAR, "").strip()
    if raw:
        return _parse(raw, f"environment variable {ENV_VAR}")
    if setting is not None:
        return _parse(setting, "setting contextWindow")
    best: tuple[str, int] | None = None
    for prefix, size in CONTEXT_WINDOWS.items():
        if model.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, size)
    return best[1] if best else DEFAULT_WINDOW


def request_chars(request: ModelRequest | dict[str, Any]) -> int:
    """Characters of the JSON body the request is sent as (what the estimate is made from)."""
    body = request.model_dump() if isinstance(request, ModelRequest) else request
    parts = {k: body.get(k) for k in ("system", "messages", "tools") if body.get(k)}
    return len(json.dumps(parts, ensure_ascii=True, separators=(",", ":")))


def estimate_tokens(request: ModelRequest | dict[str, Any], chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Input tokens of a request estimated from its size; no network."""
    return int(request_chars(request) / chars_per_token) + 1
