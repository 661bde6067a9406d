"""The hook events, named once, and how each reads its hooks' answers (one table).

Settings files key their hooks by these names. :data:`EVENT_RULES` says, per event, what a
hook's failure means, whether plain stdout is context and whether the answer decides a tool
call; the runner and the combiners read it instead of lists of event names of their own.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["HookEvent", "HOOK_EVENTS", "EventRules", "EVENT_RULES", "rules_of"]


class HookEvent(str, enum.Enum):
    """An event hooks can run at (the names are Claude Code's, plus our ApprovalPost)."""

    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    STOP = "Stop"
    SUBAGENT_STOP = "SubagentStop"
    SESSION_START = "SessionStart"
    SESSION_END = "SessionEnd"
    PRE_COMPACT = "PreCompact"
    NOTIFICATION = "Notification"
    # A card is about to ask the person about a tool call: a hook may answer in their place.
    PERMISSION_REQUEST = "PermissionRequest"
    # A sub-agent is about to start (dispatch_agent): a hook may give it context.
    SUBAGENT_START = "SubagentStart"
    # `%agent setup` (Claude Code's `claude --init` / `--maintenance`): set the project up.
    SETUP = "Setup"
    # Ours: every audit record, as it is written (observers; their answer is not read).
    APPROVAL_POST = "ApprovalPost"

    def __str__(self) -> str:
        return self.value


HOOK_EVENTS: tuple[str, ...] = tuple(event.value for event in HookEvent)


@dataclass(frozen=True)
class EventRules:
    """How the hooks of one event are read (the defaults: a notice-only event)."""

    # The answer allows, asks or denies a tool call (else it blocks or lets the event go on).
    decides_tool_call: bool = False
    # A hook of ours that fails blocks the event (a Claude Code hook's failure is a notice).
    fails_closed: bool = False
    # A failure of a hook of ours is also told to the model: a check it may count on did not run.
    failure_to_model: bool = False
    # A Claude Code hook's plain stdout (exit 0, not JSON) is context for the model.
    stdout_is_context: bool = False
    # A configured hook that cannot run as written matches every call, so the event fails closed.
    unrunnable_matches_all: bool = False


EVENT_RULES: dict[HookEvent, EventRules] = {
    # A hook of ours that fails makes the call asked (hooks fail closed), see pre_tool_use.
    HookEvent.PRE_TOOL_USE: EventRules(decides_tool_call=True, unrunnable_matches_all=True),
    HookEvent.POST_TOOL_USE: EventRules(failure_to_model=True),
    HookEvent.POST_TOOL_USE_FAILURE: EventRules(failure_to_model=True),
    HookEvent.USER_PROMPT_SUBMIT: EventRules(fails_closed=True, stdout_is_context=True),
    HookEvent.STOP: EventRules(),
    HookEvent.SUBAGENT_STOP: EventRules(),
    HookEvent.SESSION_START: EventRules(stdout_is_context=True),
    HookEvent.SESSION_END: EventRules(),
    HookEvent.PRE_COMPACT: EventRules(),
    HookEvent.NOTIFICATION: EventRules(),
    # Allows or denies in the person's place; a hook that fails leaves the question to the person.
    HookEvent.PERMISSION_REQUEST: EventRules(decides_tool_call=True),
    # Its plain stdout is context for the sub-agent, as in Claude Code.
    HookEvent.SUBAGENT_START: EventRules(stdout_is_context=True),
    HookEvent.SETUP: EventRules(stdout_is_context=True),
    HookEvent.APPROVAL_POST: EventRules(),
}
if set(EVENT_RULES) != set(HookEvent):
    raise RuntimeError(f"EVENT_RULES covers {sorted(EVENT_RULES)}, the events are {HOOK_EVENTS}")


def rules_of(event: str) -> EventRules:
    """The rules of ``event`` (an event name a settings file keys its hooks by)."""
    return EVENT_RULES[HookEvent(event)]
