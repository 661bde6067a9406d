"""The hook events, named once: settings files key their hooks by these names."""

from __future__ import annotations

import enum

__all__ = ["HookEvent", "HOOK_EVENTS"]


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
    # Ours: every audit record, as it is written (observers; their answer is not read).
    APPROVAL_POST = "ApprovalPost"

    def __str__(self) -> str:
        return self.value


HOOK_EVENTS: tuple[str, ...] = tuple(event.value for event in HookEvent)
