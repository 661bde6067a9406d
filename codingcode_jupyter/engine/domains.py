"""Domain allowlists: one grammar for fetch_url rules, the sandbox proxy and MCP HTTP servers.

An entry is a host name, an IP address, or ``*.domain`` (subdomains only, as in Claude
Code's settings). Only a real host name or IP is ever judged: ``evil.com/.allowed.com``,
``evil.com\\x00.allowed.com`` or ``a..allowed.com`` end like an allowed domain but name
something else (or nothing) to the resolver.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Iterable, Sequence
from urllib.parse import urlsplit

__all__ = ["domain_allowed", "validate_domain_patterns", "url_host", "normalise_host", "is_ip"]

_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


def normalise_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def validate_domain_patterns(patterns: Iterable[str]) -> list[str]:
    """Problems with allowlist entries (empty when all are usable): hosts, IPs or ``*.domain``."""
    problems = []
    for raw in patterns:
        entry = normalise_host(raw) if isinstance(raw, str) else ""
        name = entry[2:] if entry.startswith("*.") else entry
        if not name:
            problems.append(f"'{raw}': empty entry")
        elif is_ip(name) and not entry.startswith("*."):
            continue
        elif "*" in name or "/" in name or ":" in name:
            problems.append(f"'{raw}': use a host name, an IP address or '*.domain' (no ports, paths or other wildcards)")
        elif not all(_LABEL.match(label) for label in name.split(".")):
            problems.append(f"'{raw}': not a valid host name")
    return problems


def domain_allowed(host: str, patterns: Sequence[str]) -> bool:
    """Whether ``host`` matches an entry: exactly, or as a subdomain of a ``*.domain`` entry."""
    host = normalise_host(host)
    if not host or not (is_ip(host) or all(_LABEL.match(label) for label in host.split("."))):
        return False
    for raw in patterns:
        pattern = normalise_host(raw)
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif host == pattern:
            return True
    return False


def url_host(url: str) -> str | None:
    """The host a URL names (lower case), or None when it names none."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    return host or None
