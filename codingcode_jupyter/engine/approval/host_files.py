"""After a sandboxed command: the host-executed files it created or changed, put to the person.

The sandbox's mounts hold only what existed when the command started; what the command made
that the host runs later (:mod:`..sandbox.host_watch`) is shown on one card, as a forced ask
("Always" allows once and saves nothing). Accepted, it stays; declined, unanswered, or with
nobody to ask (a headless run, ``--approval-policy``), it is moved out of the project and a
changed file gets its previous content back. The model is told either way, in the result.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..deadline import within
from ..events import ApprovalAnswered, ApprovalRequested
from .display import escape_unicode
from .types import ApprovalRequest, Reply

if TYPE_CHECKING:
    from ..sandbox.host_watch import HostChange, HostWatch
    from ..tools.base import ToolContext

__all__ = ["settle_host_files", "host_files_question"]


def host_files_question(changes: "list[HostChange]") -> str:
    """The card's reason: each entry, whether it is new or changed, and what runs it."""
    lines = [f"- {c.rel} ({'new' if c.change == 'new' else 'changed'}): {c.what}" for c in changes]
    return ("The sandboxed command left files the host runs later, outside the sandbox; keep them? "
            "Declined, they are moved out of the project.\n" + "\n".join(lines))


async def _ask(changes: "list[HostChange]", command: str, ctx: "ToolContext") -> bool:
    run = ctx.turn.run
    ask = run.ask if run is not None else None
    if ask is None:
        return False
    request = ApprovalRequest(
        session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
        # Its own id: the call's card (if any) was answered already, this is a second question.
        tool_use_id=f"{ctx.tool_use_id}:host-files", tool="execute_command",
        input={"command": escape_unicode(command), "files": [c.rel for c in changes]},
        preview=escape_unicode(f"$ {command}\n" + "\n".join(f"{c.change}: {c.rel}" for c in changes)),
        layer="sandbox", rule="builtin:host-exec", reason=escape_unicode(host_files_question(changes)),
        sandboxed=True, forced=True,
        refused="the command ran, and the files it left that the host runs were moved out of the project",
    )
    ctx.emit(ApprovalRequested.carrying(request))
    try:
        reply = await within(ask(request), ctx.approval_timeout)  # None: as long as it takes
    except asyncio.TimeoutError:
        ctx.emit(ApprovalAnswered(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                                  tool_use_id=request.tool_use_id, answer="timeout", by="timeout"))
        return False
    except asyncio.CancelledError:
        raise
    except Exception:  # the front failed to ask: nobody accepted
        return False
    answer = reply.answer if isinstance(reply, Reply) else reply
    ctx.emit(ApprovalAnswered(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                              tool_use_id=request.tool_use_id, answer=answer, by="user"))
    return answer in ("allow", "always")


async def settle_host_files(watch: "HostWatch", command: str, ctx: "ToolContext | None") -> list[str]:
    """Ask about what ``watch`` finds (``ctx`` None: nobody can be asked) and move aside what is not
    accepted; the lines for the model (empty when the command left nothing the host runs)."""
    changes = watch.changes()
    if not changes:
        return []
    names = ", ".join(c.rel for c in changes)
    if ctx is not None and await _ask(changes, command, ctx):
        watch.accept(changes)
        return [f"(The person kept {names}, which the host runs later, written by this command.)"]
    moved = watch.quarantine(changes)
    return ["(This command created or changed files the host runs later, outside the sandbox, and the person "
            "did not accept them; they were moved out of the project: " + "; ".join(moved) + ". Do not write "
            "them again; tell the person what you wanted them to do.)"]
