"""One SDK client per environment and event loop, shared by every turn and subagent.

A fresh ``AsyncAnthropic`` per turn cost each turn a new TLS context (loading the CA
bundle: 25 to 60 ms of CPU) and a new connection (a TLS handshake with the API). Sharing
one keeps both for the process.

A client is reused only while what it read from the environment is unchanged (a key set
by ``%agent login`` makes a new one) and only on the event loop it first sent on: its
pooled connections belong to that loop, and a console runs each turn in a loop of its own.
A client made ahead of time (:func:`prepare`, on any thread) is taken by the first loop
that asks.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

__all__ = ["shared_client", "prepare", "forget"]

# What the SDK and its HTTP client read from the environment when a client is made.
_ENV_PREFIXES = ("ANTHROPIC_", "SSL_CERT_")
_ENV_NAMES = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"})


@dataclass
class _Entry:
    client: Any
    # The loop the client sent its first request on; None until then.
    loop: "weakref.ref[asyncio.AbstractEventLoop] | None" = None


_LOCK = threading.Lock()
_CLIENTS: dict[tuple[Any, ...], _Entry] = {}


def _key(max_retries: int) -> tuple[Any, ...]:
    env = tuple(sorted((name, value) for name, value in os.environ.items()
                       if name.startswith(_ENV_PREFIXES) or name.upper() in _ENV_NAMES))
    return (max_retries, env)


def _make(max_retries: int) -> Any:
    # Imported here: the SDK is heavy and `import codingcode_jupyter` must stay fast.
    from anthropic import AsyncAnthropic

    return AsyncAnthropic(max_retries=max_retries)


def shared_client(max_retries: int = 2) -> Any:
    """The client for the current environment on the running loop (made now if there is none)."""
    loop = asyncio.get_running_loop()
    key = _key(max_retries)
    with _LOCK:
        entry = _CLIENTS.get(key)
        if entry is not None:
            owner = entry.loop() if entry.loop is not None else None
            if entry.loop is None:
                entry.loop = weakref.ref(loop)
                return entry.client
            if owner is loop:
                return entry.client
    # Made outside the lock (tens of milliseconds); a race makes one client too many, never a wrong one.
    client = _make(max_retries)
    with _LOCK:
        _CLIENTS[key] = _Entry(client, weakref.ref(loop))
    return client


def prepare(max_retries: int = 2) -> None:
    """Make the current environment's client now (any thread), for the first turn to take."""
    key = _key(max_retries)
    with _LOCK:
        if key in _CLIENTS:
            return
    client = _make(max_retries)
    with _LOCK:
        _CLIENTS.setdefault(key, _Entry(client))


def forget() -> None:
    """Drop every shared client (tests; their connections close with them)."""
    with _LOCK:
        _CLIENTS.clear()
