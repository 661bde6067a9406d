"""The trust card: what a project's own files ask for, item by item, and two buttons.

Shown in the first ``%%agent`` cell of a project whose files ask for anything that loosens
the agent (and by ``%agent trust``). Each item is shown exactly as it would run, with the
file it comes from; ``Trust this project`` applies them (remembered per content), ``Not
now`` runs the turn without them. Clicks resolve the answer future through the loop, as
on the approval card (a click may arrive on a kernel thread of its own).
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from pathlib import Path

from ...engine.front import TrustAnswer
from ...engine.trust.items import TrustItem
from ..words import code_html
from ._choice_card import ChoiceCard
from ._text import h

__all__ = ["TrustCard", "TrustAnswer", "TRUST_BUTTONS", "trust_lines"]

TRUST_BUTTONS: dict[str, TrustAnswer] = {"Trust this project": "trust", "Not now": "not_now"}


def _where(item: TrustItem, project: Path) -> str:
    try:
        return str(item.path.relative_to(project))
    except ValueError:
        return str(item.path)


def trust_lines(items: list[TrustItem], project: Path) -> list[str]:
    """The items as plain text, grouped by the file they come from (for terminals and records)."""
    groups: dict[str, list[TrustItem]] = defaultdict(list)
    for item in items:
        groups[_where(item, project)].append(item)
    lines = []
    for where, group in groups.items():
        lines.append(f"{where}:")
        for item in sorted(group, key=lambda item: -weight(item)[0]):
            level, why = weight(item)
            lines.append(f"  - {'WARNING: ' + why + ': ' if level >= 2 else ''}{item.summary}")
    return lines


# What makes one item weigh more than another: a program that runs on the machine (hooks, MCP
# servers), and among those one that reads credentials or talks to the network. Allowlists of
# what is known to be sensitive, so the card can say so plainly; everything else is still listed.
_SECRETS = re.compile(r"(~|\$HOME|/home/[^/\s]+|/root)?/?\.(ssh|aws|gnupg|netrc|docker/config|kube|config/gh)\b|id_(rsa|ed25519|ecdsa)"
                      r"|\.env\b|credentials|\b(api[_-]?key|token|secret|password)\b", re.I)
_NETWORK = re.compile(r"\b(curl|wget|nc|ncat|netcat|scp|rsync|ssh|sftp|ftp|telnet)\b|https?://|/dev/tcp/", re.I)
_RUNS = {"hook": "runs a program on your machine", "mcp": "starts a program on your machine"}


def weight(item: TrustItem) -> tuple[int, str]:
    """(how much the item loosens, why in words): what a person should read first."""
    command = str(item.detail.get("command") or "") + " " + " ".join(map(str, item.detail.get("args") or []))
    runs = _RUNS.get(item.kind)
    if runs is None:
        looser = item.kind == "mode" or (item.kind == "sandbox" and item.detail.get("key") == "enabled")
        return (1, "") if looser else (0, "")
    secret = _SECRETS.search(command)
    network = _NETWORK.search(command)
    if secret and network:
        return 3, f"{runs} that reads `{secret.group(0)}` and sends data over the network ({network.group(0)})"
    if secret:
        return 2, f"{runs} that reads `{secret.group(0)}`"
    if network:
        return 2, f"{runs} that talks to the network ({network.group(0)})"
    return 1, runs


def _item_html(item: TrustItem) -> str:
    level, why = weight(item)
    summary = code_html(item.summary)
    if level >= 2:
        return (f'<li style="color:var(--jp-error-color1, #d32f2f)"><b>⚠ {code_html(why[0].upper() + why[1:])}:</b> '
                f"{summary}</li>")
    return f"<li>{summary}" + (f' <small style="opacity:.8">({code_html(why)})</small>' if why else "") + "</li>"


class TrustCard(ChoiceCard[TrustAnswer]):
    """One question: trust what this project asks for?"""

    def __init__(self, items: list[TrustItem], project: Path, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.items = items
        self.project = project
        groups: dict[str, list[TrustItem]] = defaultdict(list)
        # The weightiest first (a hook that sends a private key away before a harmless allow rule).
        for item in sorted(items, key=lambda item: -weight(item)[0]):
            groups[_where(item, project)].append(item)
        body = "".join(
            f"<div><code>{h(where)}</code><ul style=\"margin:2px 0 4px 1.2em;padding:0\">"
            + "".join(_item_html(item) for item in group) + "</ul></div>"
            for where, group in sorted(groups.items(), key=lambda g: -max(weight(i)[0] for i in g[1]))
        )
        header = (f"<b>This project's files ask for {len(items)} thing{'s' if len(items) != 1 else ''} that loosen "
                  "the agent.</b> Until you trust the project they are ignored; rules that only restrict apply already.")
        super().__init__(header, body, TRUST_BUTTONS, weighty="trust", css_class="codingcode-trust", loop=loop)

    def settled_line(self, state: str, note: str) -> str:
        count = len(self.items)
        return {
            "trust": f"Trusted: the {count} item{'s' if count != 1 else ''} below now apply (%agent trust --revoke forgets it).",
            "not_now": "Not trusted for now: this session runs without them (%agent trust asks again).",
            "interrupted": "Not answered (interrupted): the project stays untrusted.",
            "no_frontend": "Nobody could answer: the project stays untrusted.",
            "timeout": f"Not answered ({note or 'timed out'}): the project stays untrusted.",
        }[state]
