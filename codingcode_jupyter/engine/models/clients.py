"""One SDK client per environment and event loop, shared by every turn and subagent.

A fresh ``AsyncAnthropic`` per turn cost each turn a new TLS context (loading the CA
bundle: 25 to 60 ms of CPU) and a new connection (a TLS handshake with the API). Sharing
one keeps both for the process.

A client is reused only while what it read from the environment is unchanged (a key set
by ``%agent login`` makes a new one) and only on the event loop it first sent on: its
pooled connections belong to that loop, and a console runs each turn in a loop of its own.
A client made ahead of time (:func:`prepare`, on any thread) is taken by the first loop
that asks.

Its idle connections are kept for minutes, not the HTTP client's default 5 s: a person
reads an answer and writes the next cell for longer than that, and each new connection to
the API is a TCP and TLS handshake the next turn waits for. A connection the server closed
meanwhile is seen as closed before it is reused. :func:`preconnect` opens the first one
ahead of time (the notebook does it while the person writes the first cell).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

__all__ = ["shared_client", "prepare", "preconnect", "forget", "KEEPALIVE_S", "has_api_key"]

log = logging.getLogger(__name__)

# How long an idle connection to the API stays open for the next turn.
KEEPALIVE_S = 300.0
# The longest the connection made ahead of time may take; it is only a head start.
PRECONNECT_TIMEOUT_S = 10.0

# What the SDK and its HTTP client read from the environment when a client is made.
_ENV_PREFIXES = ("ANTHROPIC_", "SSL_CERT_")
_ENV_NAMES = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"})


@dataclass
class _Entry:
    client: Any
    # The client's connection pool (the SDK's default HTTP client, made here so it is ours to use).
    http: Any
    # The loop the client sent its first request on; None until then.
    loop: "weakref.ref[asyncio.AbstractEventLoop] | None" = None


_LOCK = threading.Lock()
_CLIENTS: dict[tuple[Any, ...], _Entry] = {}


def has_api_key() -> bool:
    """An API key (or auth token) for the Anthropic API is in the environment."""
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def _key(max_retries: int) -> tuple[Any, ...]:
    env = tuple(sorted((name, value) for name, value in os.environ.items()
                       if name.startswith(_ENV_PREFIXES) or name.upper() in _ENV_NAMES))
    return (max_retries, env)


def _make(max_retries: int) -> _Entry:
    # Imported here: the SDK is heavy and `import codingcode_jupyter` must stay fast.
    from anthropic import DEFAULT_CONNECTION_LIMITS, AsyncAnthropic, DefaultAsyncHttpxClient

    limits = type(DEFAULT_CONNECTION_LIMITS)(
        max_connections=DEFAULT_CONNECTION_LIMITS.max_connections,
        max_keepalive_connections=DEFAULT_CONNECTION_LIMITS.max_keepalive_connections,
        keepalive_expiry=KEEPALIVE_S,
    )
    http = DefaultAsyncHttpxClient(limits=limits)  # the SDK's own defaults otherwise (timeouts, proxies)
    client = AsyncAnthropic(max_retries=max_retries, http_client=http)
    _find_platform(client)
    return _Entry(client, http)


def _find_platform(client: Any) -> None:
    # The SDK looks up the platform its request headers name at its first request, on a
    # worker thread it starts for that (about 0.5 ms of that request here); looked up now,
    # where the client is made (ahead of time in a notebook). Left to the SDK if it changed.
    if getattr(client, "_platform", False) is None:
        try:
            from anthropic._base_client import get_platform
        except ImportError:
            return
        client._platform = get_platform()


def _entry(max_retries: int) -> _Entry:
    """The entry for the current environment on the running loop (made now if there is none)."""
    loop = asyncio.get_running_loop()
    key = _key(max_retries)
    with _LOCK:
        entry = _CLIENTS.get(key)
        if entry is not None:
            if entry.loop is None:
                entry.loop = weakref.ref(loop)
                return entry
            if entry.loop() is loop:
                return entry
    # Made outside the lock (tens of milliseconds); a race makes one client too many, never a wrong one.
    entry = _make(max_retries)
    entry.loop = weakref.ref(loop)
    with _LOCK:
        _CLIENTS[key] = entry
    return entry


def shared_client(max_retries: int = 2) -> Any:
    """The client for the current environment on the running loop (made now if there is none)."""
    return _entry(max_retries).client


def prepare(max_retries: int = 2) -> None:
    """Make the current environment's client now (any thread), for the first turn to take."""
    key = _key(max_retries)
    with _LOCK:
        if key in _CLIENTS:
            return
    entry = _make(max_retries)
    with _LOCK:
        _CLIENTS.setdefault(key, entry)


async def preconnect(max_retries: int = 2) -> bool:
    """Open the connection the first turn on this loop will send on; True if one is open.

    A ``HEAD`` of the API's base URL with no key and no redirect followed: whatever it
    answers, the connection it took stays in the pool. Failing is silent (the turn that
    needs the API reports what is wrong with it).
    """
    entry = _entry(max_retries)
    try:
        await entry.http.head(str(entry.client.base_url), follow_redirects=False, timeout=PRECONNECT_TIMEOUT_S)
    except Exception as error:  # offline, a proxy that refuses: the turn will say so
        log.debug("preconnect to %s failed: %r", entry.client.base_url, error)
        return False
    return True


def forget() -> None:
    """Drop every shared client (tests; their connections close with them)."""
    with _LOCK:
        _CLIENTS.clear()
