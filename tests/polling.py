"""Waiting for a condition in a test: the one polling helper, sync and async.

A test waits for something it can observe (a state, a file, a message), never for a length of
time: on a loaded machine a fixed sleep is either too short (a flaky failure) or too long (a
slow suite), and a sleep followed by "nothing happened" passes whether or not the code works.
``within`` is only the point where waiting becomes a failure; it never makes a test pass.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["eventually", "wait_until"]

T = TypeVar("T")

# What a timeout reports: a fixed text, or one computed then (the state at that moment).
What = str | Callable[[], str]

INTERVAL_S = 0.05


def _timed_out(what: What, within: float) -> AssertionError:
    text = what() if callable(what) else what
    return AssertionError(f"timed out after {within:g} s waiting for {text}")


def wait_until(condition: Callable[[], T], within: float = 10.0, what: What = "the condition", *,
               between: Callable[[], object] | None = None, interval: float = INTERVAL_S) -> T:
    """Call ``condition`` until it returns something truthy, and return that.

    ``between`` runs between two calls instead of a sleep (a kernel harness reading its
    messages); otherwise the helper sleeps ``interval``. After ``within`` seconds the test fails
    with an AssertionError naming ``what`` it waited for.
    """
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _timed_out(what, within)
        if between is not None:
            between()
        else:
            time.sleep(interval)


async def eventually(condition: Callable[[], T], within: float = 10.0, what: What = "the condition", *,
                     interval: float = INTERVAL_S) -> T:
    """:func:`wait_until` on an event loop: the loop runs (the code under test with it) while it waits."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _timed_out(what, within)
        await asyncio.sleep(interval)
