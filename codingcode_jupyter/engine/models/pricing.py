"""Prices per million tokens, kept in one place. Unknown models cost None (not zero)."""

from __future__ import annotations

from ..events import Usage

__all__ = ["PRICES", "cost_usd"]

# (input, output, cache write, cache read) USD per million tokens; matched by prefix.
PRICES: dict[str, tuple[float, float, float, float]] = {
    "claude-opus-4-1": (15.0, 75.0, 18.75, 1.50),
    "claude-opus-4": (15.0, 75.0, 18.75, 1.50),
    "claude-opus-4-5": (5.0, 25.0, 6.25, 0.50),
    "claude-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-haiku": (1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": (0.80, 4.0, 1.0, 0.08),
    "claude-3-haiku": (0.25, 1.25, 0.30, 0.03),
    "claude-3-5-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-3-7-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-3-opus": (15.0, 75.0, 18.75, 1.50),
    "demo": (0.0, 0.0, 0.0, 0.0),
}


def _price(model: str) -> tuple[float, float, float, float] | None:
    best = None
    for prefix, price in PRICES.items():
        if model.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, price)
    return best[1] if best else None


def cost_usd(model: str, usage: Usage) -> float | None:
    """USD for ``usage`` on ``model`` from the table; None when the model is not in it."""
    price = _price(model)
    if price is None:
        return None
    inp, out, write, read = price
    return (
        usage.input_tokens * inp
        + usage.output_tokens * out
        + usage.cache_creation_input_tokens * write
        + usage.cache_read_input_tokens * read
    ) / 1_000_000
