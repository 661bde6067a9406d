"""What a hook is told, in the vocabulary of the file it comes from.

Every payload has Claude Code's common fields — ``session_id``, ``transcript_path`` (our
JSONL transcript of the session), ``cwd``, ``hook_event_name`` — plus the event's own. For
a tool event a Claude Code hook gets Claude Code's tool name and argument shapes
(``tool_name: "Bash"``, ``tool_input.command``); one of ours gets our names
(``tool_name: "execute_command"``), as it always has.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, RootModel

from ..claude.names import claude_names
from ..claude.tool_input import to_claude_input, to_claude_response
from .events import HookEvent

if TYPE_CHECKING:
    from ..settings import Dialect

__all__ = ["ToolView", "common_fields", "tool_fields", "claude_mode", "transcript_path", "HookInput", "ToolHookInput",
           "PromptHookInput", "StopHookInput", "SessionStartHookInput", "SessionEndHookInput", "PreCompactHookInput",
           "NotificationHookInput", "PermissionRequestHookInput", "SubagentStartHookInput", "SetupHookInput",
           "ObservedRecord", "INPUT_MODELS", "hook_input"]

_CLAUDE_MODES = {"bypass": "bypassPermissions"}


def claude_mode(mode: str) -> str:
    """Our permission mode as Claude Code names it."""
    return _CLAUDE_MODES.get(mode, mode)


def transcript_path(project: Path | str, session_id: str) -> str:
    from ..transcript import sessions_dir

    return str(sessions_dir(Path(project)) / f"{session_id}.jsonl")


class NamedTool(Protocol):
    """A tool's names and origin, as a tool definition has them."""

    @property
    def name(self) -> str: ...

    @property
    def display_name(self) -> str | None: ...

    @property
    def source(self) -> str: ...


@dataclass(frozen=True)
class ToolView:
    """A tool as hooks see it: its names in both vocabularies."""

    display: str
    wire: str
    mcp: bool = False

    @classmethod
    def of(cls, definition: "NamedTool") -> "ToolView":
        return cls(definition.display_name or definition.name, definition.name, definition.source == "mcp")

    @property
    def claude(self) -> tuple[str, ...]:
        return claude_names(self.display, mcp=self.mcp)

    def names(self, dialect: "Dialect") -> list[str]:
        """What a matcher of that dialect is matched against."""
        if dialect == "claude":
            return list(self.claude)
        return list(dict.fromkeys([self.display, self.wire, *self.claude]))

    def name_for(self, dialect: "Dialect") -> str:
        return self.claude[0] if dialect == "claude" else self.display


def common_fields(dialect: "Dialect", event: str, *, session_id: str, project: Path | str,
                  mode: str | None = None, cwd: str | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {"session_id": session_id, "transcript_path": transcript_path(project, session_id),
                              "cwd": cwd or str(project), "hook_event_name": event}
    if mode is not None:
        fields["permission_mode"] = claude_mode(mode) if dialect == "claude" else mode
    return fields


def tool_fields(dialect: "Dialect", view: ToolView, tool_input: dict[str, Any], project: Path | str, *,
                tool_use_id: str = "", result: tuple[str, bool] | None = None) -> dict[str, Any]:
    """``tool_name``, ``tool_input`` (and ``tool_response`` after the call) for one hook."""
    project = Path(project)
    if dialect == "claude":
        shaped = tool_input if view.mcp else to_claude_input(view.display, tool_input, project)
        fields: dict[str, Any] = {"tool_name": view.name_for(dialect), "tool_input": shaped, "tool_use_id": tool_use_id}
        if result is not None:
            text, is_error = result
            fields["tool_response"] = text if view.mcp else to_claude_response(view.display, tool_input, text,
                                                                                is_error, project)
        return fields
    fields = {"tool_name": view.display, "tool_input": dict(tool_input), "tool_use_id": tool_use_id}
    if result is not None:
        fields["tool_response"] = {"text": result[0], "is_error": result[1]}
    return fields


# -- what a hook is told, typed: one model per kind of event, dumped once into the JSON on its stdin ----------


class HookInput(BaseModel):
    """Claude Code's common fields, which every hook is told (in its dialect's names and values)."""

    # A field we did not declare is our bug, not a hook's: refused as it is made.
    model_config = ConfigDict(extra="forbid")

    session_id: str
    transcript_path: str
    cwd: str
    hook_event_name: HookEvent
    permission_mode: str | None = None

    def wire(self) -> dict[str, Any]:
        """The JSON object the hook reads (what is not told is left out, not sent as null)."""
        return self.model_dump(mode="json", exclude_none=True)


class ToolHookInput(HookInput):
    """PreToolUse, PostToolUse, PostToolUseFailure: the call (and after it, what it returned)."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str = ""
    # Ours: {text, is_error}; Claude Code's: its tool's own response shape.
    tool_response: Any = None
    error: str | None = None


class PromptHookInput(HookInput):
    prompt: str


class StopHookInput(HookInput):
    stop_hook_active: bool
    agent_id: str | None = None
    agent_type: str | None = None


class SessionStartHookInput(HookInput):
    source: str


class SessionEndHookInput(HookInput):
    reason: str


class PreCompactHookInput(HookInput):
    trigger: str
    custom_instructions: str = ""


class NotificationHookInput(HookInput):
    message: str
    notification_type: str


class PermissionRequestHookInput(ToolHookInput):
    """A card is about to ask about this call (Claude Code's permission dialog)."""

    permission_suggestions: list[Any] = []


class SubagentStartHookInput(HookInput):
    agent_id: str
    agent_type: str


class SetupHookInput(HookInput):
    trigger: str


class ObservedRecord(RootModel[dict[str, Any]]):
    """What an ApprovalPost hook is told: the audit record as written."""

    def wire(self) -> dict[str, Any]:
        return dict(self.root)


INPUT_MODELS: dict[HookEvent, type[HookInput]] = {
    HookEvent.PRE_TOOL_USE: ToolHookInput,
    HookEvent.POST_TOOL_USE: ToolHookInput,
    HookEvent.POST_TOOL_USE_FAILURE: ToolHookInput,
    HookEvent.USER_PROMPT_SUBMIT: PromptHookInput,
    HookEvent.STOP: StopHookInput,
    HookEvent.SUBAGENT_STOP: StopHookInput,
    HookEvent.SESSION_START: SessionStartHookInput,
    HookEvent.SESSION_END: SessionEndHookInput,
    HookEvent.PRE_COMPACT: PreCompactHookInput,
    HookEvent.NOTIFICATION: NotificationHookInput,
    HookEvent.PERMISSION_REQUEST: PermissionRequestHookInput,
    HookEvent.SUBAGENT_START: SubagentStartHookInput,
    HookEvent.SETUP: SetupHookInput,
}
if set(INPUT_MODELS) | {HookEvent.APPROVAL_POST} != set(HookEvent):
    raise RuntimeError(f"INPUT_MODELS covers {sorted(INPUT_MODELS)}, not every event")


def hook_input(event: HookEvent, fields: dict[str, Any]) -> HookInput:
    """The typed input of one hook of ``event`` (common fields and the event's own, in its dialect)."""
    return INPUT_MODELS[event].model_validate(fields)
