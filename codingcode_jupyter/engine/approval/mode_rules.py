"""The permission modes as rules: one table of what each mode decides, and on which calls.

A mode is not a branch of the pipeline: it is a set of rows here, read by the ``mode`` layer
(:mod:`.layers`). For the turn's mode, the first row whose condition holds gives the layer's
verdict (rows are in priority order, as in gemini-cli's policy engine); a mode with no row
that holds says nothing. What the mode says is then combined with the other layers by taking
the strictest, so no mode loosens an ask or a deny of a higher tier: bypass allows only what
nothing asked about. A new mode is new rows (and its name in :data:`~..settings.MODES`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..settings import PermissionMode
from .paths import relative_to_project
from .types import Decision

if TYPE_CHECKING:
    from .judging import Judging

__all__ = ["ModeRule", "MODE_RULES", "mode_verdict_row"]


@dataclass(frozen=True)
class ModeRule:
    """In ``modes``, a call for which ``when`` holds is given ``decision``, with a reason the model reads."""

    name: str
    modes: frozenset[PermissionMode]
    decision: Decision
    when: Callable[["Judging"], bool]
    reason: Callable[["Judging"], str]
    # Who decided, for the audit log ("mode", or "sandbox" for the sandbox's auto-allow).
    by: str = "mode"


def _not_read_only(j: "Judging") -> bool:
    return not j.facts.read_only


def _always(j: "Judging") -> bool:
    return True


def _edits_inside_project(j: "Judging") -> bool:
    subject = j.subject
    if not subject.access.edits:
        return False
    refs = [ref for ref in subject.paths if ref.resolved is not None]
    return bool(refs) and all(ref.resolved is not None and relative_to_project(subject.project, ref.resolved) is not None
                              for ref in refs)


def _sandbox_auto_allow(j: "Judging") -> bool:
    if not (j.sandboxed and j.settings.merged.sandbox.autoAllow):
        return False
    # Landlock's TCP rules name a port, not an address: with a network allowlist it cannot prove
    # that a command reaches only the proxy, so it does not vouch for the command.
    sandbox = j.ctx.deps.sandbox()
    return sandbox is None or getattr(sandbox, "network_exact", True)


MODE_RULES: tuple[ModeRule, ...] = (
    ModeRule("plan-read-only", frozenset({"plan"}), Decision.DENY, _not_read_only,
             lambda j: f"Denied: the session is in plan mode, where only read-only tools run; describe what "
                       f"{j.subject.tool} would do instead, and the user can switch modes to let it run."),
    # auto mode is acceptEdits plus a reviewer answering what would be asked (:mod:`.reviewer`),
    # as Claude Code's auto mode lets in-project edits skip its classifier.
    ModeRule("bypass", frozenset({"bypass"}), Decision.ALLOW, _always, lambda j: "bypass mode"),
    ModeRule("accept-edits", frozenset({"acceptEdits", "auto"}), Decision.ALLOW, _edits_inside_project,
             lambda j: f"{j.mode} mode allows edits inside the project"),
    # Inside the sandbox a command is held to the project and the allowed domains by construction.
    ModeRule("sandbox-auto-allow", frozenset({"default", "acceptEdits", "auto"}), Decision.ALLOW, _sandbox_auto_allow,
             lambda j: "runs in the sandbox, which holds it to the project and the allowed domains (sandbox.autoAllow)",
             by="sandbox"),
)


def mode_verdict_row(j: "Judging") -> ModeRule | None:
    """The first row of the turn's mode whose condition holds for this call."""
    return next((row for row in MODE_RULES if j.mode in row.modes and row.when(j)), None)
