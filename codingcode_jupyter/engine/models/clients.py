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

__all__ = ["shared_client", "prepare", "preconnect", "forget", "KEEPALIVE_S", "has_api_key", "use_key_helper",
           "has_key_helper", "refresh_helper_key", "KeyHelperError"]

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
    """The API can be reached with credentials: a key (or auth token) in the environment, a key
    helper configured, or a cloud provider chosen (its credentials are the cloud's own chain)."""
    from .providers import uses_cloud_credentials

    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
                or _HELPER.command or uses_cloud_credentials())


# -- apiKeyHelper: a command that prints the key ------------------------------------------------


@dataclass
class _Helper:
    command: str | None = None
    cwd: str | None = None
    key: str | None = None


_HELPER = _Helper()
# How long the helper may take (Claude Code's helpers fetch from a vault; a few seconds at most).
HELPER_TIMEOUT_S = 30.0


def use_key_helper(command: str | None, cwd: Any = None) -> None:
    """The settings' ``apiKeyHelper`` (None: none); its key is fetched when a client is made."""
    with _LOCK:
        if command != _HELPER.command:
            _HELPER.command, _HELPER.key = command, None
        _HELPER.cwd = str(cwd) if cwd is not None else None


def has_key_helper() -> bool:
    return _HELPER.command is not None


def refresh_helper_key() -> None:
    """Forget the helper's key (the API answered 401): the next client runs the helper again."""
    with _LOCK:
        _HELPER.key = None


def _helper_key() -> str | None:
    """The key the helper prints (run once per refresh); None without a helper."""
    command = _HELPER.command
    if command is None or os.environ.get("ANTHROPIC_API_KEY"):
        return None  # a key in the environment is the person's explicit choice, as Claude Code reads it
    if _HELPER.key is None:
        import subprocess

        try:
            done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=_HELPER.cwd,
                                  timeout=HELPER_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise KeyHelperError(f"apiKeyHelper `{command}` could not run: {error}") from None
        key = done.stdout.strip()
        if done.returncode != 0 or not key:
            why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1][:200]
            raise KeyHelperError(f"apiKeyHelper `{command}` printed no key ({why})")
        _HELPER.key = key
    return _HELPER.key


class KeyHelperError(RuntimeError):
    """The apiKeyHelper command failed or printed nothing."""


def _key(max_retries: int) -> tuple[Any, ...]:
    from .providers import PROVIDER_ENV_PREFIXES

    _helper_key()  # fetched first, so the client made for this key is found under it
    env = tuple(sorted((name, value) for name, value in os.environ.items()
                       if name.startswith(_ENV_PREFIXES + PROVIDER_ENV_PREFIXES) or name.upper() in _ENV_NAMES))
    return (max_retries, env, _HELPER.command, _HELPER.key)


def _make(max_retries: int) -> _Entry:
    # Imported here: the SDK is heavy and `import codingcode_jupyter` must stay fast.
    from anthropic import DEFAULT_CONNECTION_LIMITS, DefaultAsyncHttpxClient

    from .providers import make_provider_client, sdk_client

    limits = type(DEFAULT_CONNECTION_LIMITS)(
        max_connections=DEFAULT_CONNECTION_LIMITS.max_connections,
        max_keepalive_connections=DEFAULT_CONNECTION_LIMITS.max_keepalive_connections,
        keepalive_expiry=KEEPALIVE_S,
    )
    http = DefaultAsyncHttpxClient(limits=limits)  # the SDK's own defaults otherwise (timeouts, proxies)
    client = make_provider_client(max_retries, http, api_key=_helper_key())
    _find_platform(sdk_client(client))  # a provider's client is wrapped (providers.py)
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
