"""The ``confirm`` layer: the person, asked on a card.

As a judge it gives the default ask (nothing allowed the call); as the last answering layer it
asks the person about every ask left, through the front's :data:`~.types.Asker` — the one
place the engine asks a person about a tool call — and turns the answer into a verdict,
saving "Always allow" / "Never allow" rules (:mod:`.amend`) where the ask allows it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..deadline import within
from ..events import ApprovalAnswered, ApprovalRequested
from ..settings import SettingsError
from ..tools.base import ToolCall
from .amend import persist_rules
from .display import escape_unicode, escape_value
from .dry_run import offer_preview
from .judging import Judging
from .layers import WhenUndecided
from .rules import nearest_allow
from .types import Answer, ApprovalRequest, Asker, Decision, Reply, Verdict

if TYPE_CHECKING:
    from ..project_settings import ProjectSettings
    from ..tools.base import ToolContext

__all__ = ["Confirm", "request_for"]


class Confirm(WhenUndecided):
    name = "confirm"
    summary = "when nothing decided: no rule allows it, so a person is asked; the person answers every ask left"
    answers = True
    answers_forced = True

    def __init__(self, project: Path, settings: "ProjectSettings") -> None:
        self.project = project
        self.settings = settings

    def question(self, j: Judging) -> Verdict | None:
        reason = f"No rule allows {j.subject.tool} here"
        near = nearest_allow(j.subject, j.rules)
        return Verdict(kind=Decision.ASK, by="confirm", reason=f"{reason}; {near}" if near else reason)

    async def answer(self, call: ToolCall, ctx: "ToolContext", asked: Verdict, ask: Asker | None) -> Verdict:
        tool_name = call.definition.display_name or call.definition.name

        def decided(kind: Literal["allow", "deny"], by: str, reason: str) -> Verdict:
            return Verdict(kind=Decision(kind), layer=self.name, by=by, reason=reason, input=asked.input,
                           rule=asked.rule)

        def answered(answer: "Answer | Literal['timeout', 'interrupted']", by: str) -> ApprovalAnswered:
            return ApprovalAnswered(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                                    tool_use_id=call.tool_use_id, answer=answer, by=by)

        if ask is not None and call.definition.asks_in_place:
            # The person answers where the change shows (a notebook's cells, change by change):
            # the tool goes ahead told to ask there, and its result carries each answer.
            ctx.ask_in_place = True
            return decided("allow", "in_place", f"{tool_name} asks the person on each change it shows ({asked.reason})")
        hooked = await self._permission_hooks(call, ctx, asked)
        if hooked is not None:
            return hooked
        if ask is None:
            return decided("deny", "nobody", f"Denied: {tool_name} needs a person's approval ({asked.reason}) and nobody "
                           "can be asked in this session; do without it, or tell the user what to run or which allow "
                           "rule to add to .codingcode/settings.json.")
        request = await request_for(call, ctx, asked)
        # A command that does more than read: the card may run it first in a throwaway copy of the project
        # (here, not in request_for: the reviewer reads the card too and runs nothing).
        await offer_preview(request, call, ctx, asked.input)
        ctx.emit(ApprovalRequested.carrying(request))
        try:
            reply = await within(ask(request), ctx.approval_timeout)  # None: as long as it takes
        except asyncio.TimeoutError:
            ctx.emit(answered("timeout", "timeout"))
            # The front may time the wait itself (no frontend, no stdin), with no approval_timeout set.
            limit = f" within {ctx.approval_timeout:g} s" if ctx.approval_timeout is not None else ""
            return decided("deny", "timeout", f"Denied: nobody answered{limit}; do not retry it now — "
                           "continue without it or tell the user what you wanted to run.")
        except asyncio.CancelledError:
            ctx.emit(answered("interrupted", "user"))
            raise
        except Exception as error:  # the front failed to ask: nobody approved
            return decided("deny", "error", f"Denied: the approval prompt failed ({type(error).__name__}: {error}).")
        answer, picked = (reply.answer, reply.rules) if isinstance(reply, Reply) else (reply, None)
        if answer not in ("allow", "deny", "always", "never"):
            return decided("deny", "error", f"Denied: the approval prompt answered {answer!r}, which is not a known answer.")
        offered = asked.allow_choices if answer == "always" else asked.deny_choices
        if picked is not None and picked not in offered:
            return decided("deny", "error", f"Denied: the approval prompt picked rules {picked!r}, which were not offered.")
        to_save = picked or (offered[0] if offered else asked.exact_rules)
        ctx.emit(answered(answer, "user"))
        note = ""
        if asked.policy and answer in ("always", "never"):
            # The card offered only Allow and Deny (the policy holds the call); an answer that would save is once.
            answer, to_save = "allow" if answer == "always" else "deny", []
        if answer in ("always", "never") and to_save:
            action: Literal["allow", "deny"] = "allow" if answer == "always" else "deny"
            if action == "allow" and asked.forced:
                note = f" (allowed once: {asked.rule} cannot be overridden by a saved rule)"
            else:
                try:
                    persist_rules(self.project, action, to_save)
                    if action == "allow":
                        # The person wrote these rules by clicking: they need no further trust.
                        self.settings.trust_rules("local", to_save)
                    note = f" (saved {', '.join(to_save)} to .codingcode/settings.local.json)"
                except (OSError, SettingsError) as error:
                    note = f" (could not save the rule: {error})"
        if answer in ("allow", "always"):
            return decided("allow", "user", f"The user allowed it{note}.")
        return decided("deny", "user", f"Denied: the user declined this {tool_name} call{note}; do not retry it — ask "
                       "the user what they want instead.")


    async def _permission_hooks(self, call: ToolCall, ctx: "ToolContext", asked: Verdict) -> Verdict | None:
        """PermissionRequest hooks, before the card: their deny or allow answers in the person's place (None:
        they said nothing, the person is asked). What a built-in rule always asks a person about, a hook may
        deny but not allow."""
        from ..hooks.lifecycle import LifecycleHooks

        hooks = LifecycleHooks(self.project, self.settings)
        if not hooks.configured("PermissionRequest"):
            return None
        tool_input = asked.input or call.input
        outcome = await hooks.permission_request(session_id=ctx.session_id, definition=call.definition,
                                                 tool_input=tool_input, tool_use_id=call.tool_use_id, mode=ctx.mode)
        run = ctx.run
        for note in outcome.notices:
            if run is not None:
                run.notify(note)
        stop = getattr(run, "request_stop", None)
        if outcome.stop is not None and stop is not None:
            stop(outcome.stop)
        reason = outcome.reason or "no reason given"
        if outcome.blocked:
            return Verdict(kind=Decision.DENY, layer=self.name, by="hook", rule=asked.rule, input=asked.input,
                           reason=f"Denied by a PermissionRequest hook: {reason}")
        if not outcome.allowed:
            return None
        if asked.forced:
            if run is not None:
                run.notify(f"A PermissionRequest hook allowed it, but {asked.rule or 'a built-in rule'} always asks you.")
            return None
        if outcome.updated_input is not None and run is not None:
            # A changed call would run unjudged (deny rules included): it runs as judged, and the person is told.
            run.notify("A PermissionRequest hook's updatedInput is not applied here: the call runs as it was judged.")
        return Verdict(kind=Decision.ALLOW, layer=self.name, by="hook", rule=asked.rule, input=tool_input,
                       reason=f"Allowed by a PermissionRequest hook in your place: {reason}")


async def request_for(call: ToolCall, ctx: "ToolContext", asked: Verdict) -> ApprovalRequest:
    """What the person is shown about ``asked``: everything escaped that could hide characters."""
    tool_name = call.definition.display_name or call.definition.name
    sandbox = ctx.deps.sandbox()
    sandboxed = bool(sandbox and sandbox.active) if call.definition.access.command is not None else None
    preview = escape_unicode(await _preview(call, ctx, asked))
    key = call.definition.access.key_value(asked.input)
    return ApprovalRequest(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                           tool_use_id=call.tool_use_id, tool=escape_unicode(tool_name),
                           input=escape_value(asked.input), preview=preview, layer=asked.layer,
                           rule=asked.rule, reason=escape_unicode(asked.reason), sandboxed=sandboxed,
                           annotations=call.definition.annotations, key=escape_value(key),
                           allow_choices=asked.allow_choices, deny_choices=asked.deny_choices,
                           forced=asked.forced, policy=asked.policy)


async def _preview(call: ToolCall, ctx: "ToolContext", asked: Verdict) -> str:
    tool = call.definition
    preview = tool.preview
    if preview is not None:
        try:
            return await preview(tool.validate(asked.input), ctx)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a broken preview must not hide the call
            note = f"(preview failed: {type(error).__name__}: {error})\n"
    else:
        note = ""
    command = tool.access.command
    if command is not None and isinstance(asked.input.get(command), str):
        where = asked.input.get(tool.access.cwd or "") or "."
        return f"{note}$ {asked.input[command]}\n(in {where})"
    return note + json.dumps(asked.input, indent=2, ensure_ascii=False, default=str)
