"""Names of MCP tools: ``server:tool`` for people, a wire-safe name for the model.

The Messages API accepts tool names matching ``^[a-zA-Z0-9_-]{1,64}$`` and rejects ``:``,
so ``server:tool`` becomes ``server__tool``. When that plain form is not a faithful,
unique rendering — characters had to be replaced, it is longer than 64, or another tool
(of any server, or a built-in) would get the same name — the name is cut and given a
hash of the full display name, so two different tools can never share a wire name.
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable

__all__ = ["WIRE_NAME_RE", "MAX_WIRE_NAME", "display_name", "plain_wire_name", "assign_wire_names", "is_wire_name"]

WIRE_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_WIRE_NAME = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
SEPARATOR = "__"


def is_wire_name(name: str) -> bool:
    """Whether the Messages API accepts this as a tool name."""
    return bool(WIRE_NAME_RE.match(name))


def display_name(server: str, tool: str) -> str:
    """What a person reads and what rules match: ``server:tool``."""
    return f"{server}:{tool}"


def plain_wire_name(server: str, tool: str) -> str:
    """``server__tool`` with every character the API rejects replaced by ``_`` (may be too long)."""
    return _UNSAFE.sub("_", server) + SEPARATOR + _UNSAFE.sub("_", tool)


def _hashed(server: str, tool: str, digits: int) -> str:
    digest = hashlib.sha256(display_name(server, tool).encode("utf-8")).hexdigest()[:digits]
    head = plain_wire_name(server, tool)[: MAX_WIRE_NAME - digits - 1]
    return f"{head}_{digest}"


def _is_faithful(server: str, tool: str) -> bool:
    # The plain form maps back unambiguously only if nothing was replaced and the server
    # part itself holds no separator (``a__b`` + ``c`` and ``a`` + ``b__c`` would meet).
    return (
        not _UNSAFE.search(server)
        and not _UNSAFE.search(tool)
        and SEPARATOR not in server
        and not server.endswith("_")
        and not tool.startswith("_")
        and len(plain_wire_name(server, tool)) <= MAX_WIRE_NAME
    )


def assign_wire_names(
    tools: Iterable[tuple[str, str]], *, reserved: Iterable[str] = ()
) -> dict[tuple[str, str], str]:
    """A distinct wire name for every (server, tool) pair, none equal to a reserved name.

    Deterministic for a given set of pairs, so the tools block stays byte-identical
    between requests and prompt caching holds.
    """
    pairs = sorted(set(tools))
    taken = set(reserved)
    names: dict[tuple[str, str], str] = {}
    needs_hash: list[tuple[str, str]] = []
    for server, tool in pairs:
        plain = plain_wire_name(server, tool)
        # Faithful plain names are distinct from each other by construction.
        if _is_faithful(server, tool) and plain not in taken:
            names[(server, tool)] = plain
            taken.add(plain)
        else:
            needs_hash.append((server, tool))
    for server, tool in needs_hash:
        digits = 8
        name = _hashed(server, tool, digits)
        # A clash of truncated hashes is astronomically rare; lengthen rather than risk it.
        while name in taken:
            digits += 4
            name = _hashed(server, tool, digits)
        names[(server, tool)] = name
        taken.add(name)
    return names
