"""Answering a waiting future from a widget callback, whatever thread the click arrives on.

Under ipykernel 7 a button callback may run on a subshell thread, not the event loop's, so
the answer is set through ``loop.call_soon_threadsafe`` unless we are on that loop already.
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

__all__ = ["answer_from_click"]

T = TypeVar("T")


def answer_from_click(loop: asyncio.AbstractEventLoop, future: "asyncio.Future[T]", value: T) -> None:
    """Set ``future``'s result to ``value`` on ``loop`` (once; later answers are ignored)."""

    def resolve() -> None:
        if not future.done():
            future.set_result(value)

    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        resolve()
    else:
        loop.call_soon_threadsafe(resolve)
