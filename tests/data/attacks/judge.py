"""Judging a corpus row the way `permissions check --sandbox off` does, in-process.

With the sandbox assumed off, the pipeline turns every command the rules let through into
an ask at its "sandbox" layer (it would run unconfined). That ask says nothing about the
rules, so :func:`rules_verdict` reports it as what the rules decided: allow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codingcode_jupyter.__main__ import check_permission

__all__ = ["judge_command", "rules_verdict"]


def rules_verdict(result: dict[str, Any]) -> str:
    """allow / ask / deny as layers 1-4 decided, before the unavailable sandbox's ask."""
    if result["decision"] == "ask" and result["layer"] == "sandbox":
        return "allow"
    return result["decision"]


async def judge_command(project: Path, command: str, mode: str = "bypass") -> tuple[str, dict[str, Any]]:
    """(rules verdict, the full JSON result) for one execute_command call."""
    result = await check_permission(project, "execute_command", {"command": command}, mode, "off")
    return rules_verdict(result), result
