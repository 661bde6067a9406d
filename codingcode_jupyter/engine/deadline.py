"""Awaiting something for at most some seconds, without losing a cancellation.

On Python 3.11, ``asyncio.wait_for`` returns the inner result and swallows a cancellation of
the waiting task that lands as the inner awaitable finishes (fixed in 3.12, where wait_for is
built on ``asyncio.timeout``). An interrupt sent just as a frontend rendered a card was lost
that way: the cell went on waiting for an answer. ``asyncio.timeout`` keeps the cancellation.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, TypeVar

__all__ = ["within"]

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """``await awaitable``, raising TimeoutError after ``seconds`` (None: no limit)."""
    async with asyncio.timeout(seconds):
        return await awaitable
