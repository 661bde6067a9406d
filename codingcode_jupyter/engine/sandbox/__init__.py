"""The OS-level sandbox for commands: bubblewrap confinement and the network allowlist proxy."""

from .bwrap import (
    HOME_SECRETS,
    PROTECTED_PATHS,
    SYSTEM_SECRETS,
    CommandSandbox,
    SandboxUnavailable,
    probe_bwrap,
)
from .proxy import (
    AllowlistProxy,
    ProxyDecision,
    domain_allowed,
    validate_domain_patterns,
)

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
