"""Call timeouts that stop while a person answers a question the server asked."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager, contextmanager
from typing import AsyncIterator, Iterator

__all__ = ["CallClocks"]


class CallClocks:
    """Call timeouts that stop while a person answers a question the server asked.

    A server that asks for input during a call (elicitation, sampling approval) is waiting
    for the person, not hanging; its call must not time out meanwhile.
    """

    def __init__(self) -> None:
        self._running: set[asyncio.Timeout] = set()
        self._paused: dict[asyncio.Timeout, float] = {}
        self._waits = 0

    @asynccontextmanager
    async def limit(self, seconds: float) -> AsyncIterator[None]:
        async with asyncio.timeout(seconds) as timeout:
            if self._waits:
                timeout.reschedule(None)
                self._paused[timeout] = seconds
            else:
                self._running.add(timeout)
            try:
                yield
            finally:
                self._running.discard(timeout)
                self._paused.pop(timeout, None)

    @contextmanager
    def person_waiting(self) -> Iterator[None]:
        self._waits += 1
        if self._waits == 1:
            now = asyncio.get_running_loop().time()
            for timeout in list(self._running):
                when = timeout.when()
                if when is not None:
                    self._paused[timeout] = max(0.0, when - now)
                    timeout.reschedule(None)
            self._running.clear()
        try:
            yield
        finally:
            self._waits -= 1
            if self._waits == 0:
                now = asyncio.get_running_loop().time()
                for timeout, left in self._paused.items():
                    timeout.reschedule(now + left)
                    self._running.add(timeout)
                self._paused.clear()
