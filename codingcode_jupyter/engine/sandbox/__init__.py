"""The OS-level sandbox for commands: bubblewrap confinement and the network allowlist proxy.

The proxy module is imported when one of its names is first asked for (or a command needs
the proxy): a project without a network allowlist never loads it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..domains import domain_allowed, validate_domain_patterns
from .bwrap import (
    HOME_SECRETS,
    PROTECTED_PATHS,
    SYSTEM_SECRETS,
    CommandSandbox,
    SandboxUnavailable,
    probe_bwrap,
)

if TYPE_CHECKING:
    from .proxy import AllowlistProxy, ProxyDecision

__all__ = [
    "CommandSandbox",
    "SandboxUnavailable",
    "AllowlistProxy",
    "ProxyDecision",
    "domain_allowed",
    "validate_domain_patterns",
    "probe_bwrap",
    "HOME_SECRETS",
    "SYSTEM_SECRETS",
    "PROTECTED_PATHS",
]


def __getattr__(name: str) -> Any:
    if name in ("AllowlistProxy", "ProxyDecision"):
        value = getattr(importlib.import_module(f"{__name__}.proxy"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
