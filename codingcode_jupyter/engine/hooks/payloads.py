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
from typing import TYPE_CHECKING, Any

from ..claude.names import claude_names
from ..claude.tool_input import to_claude_input, to_claude_response

if TYPE_CHECKING:
    from ..settings import Dialect
    from ..tools.base import ToolDefinition

__all__ = ["ToolView", "common_fields", "tool_fields", "claude_mode", "transcript_path"]

_CLAUDE_MODES = {"bypass": "bypassPermissions"}


def claude_mode(mode: str) -> str:
    """Our permission mode as Claude Code names it."""
    return _CLAUDE_MODES.get(mode, mode)


def transcript_path(project: Path | str, session_id: str) -> str:
    from ..session import sessions_dir

    return str(sessions_dir(Path(project)) / f"{session_id}.jsonl")


@dataclass(frozen=True)
class ToolView:
    """A tool as hooks see it: its names in both vocabularies."""

    display: str
    wire: str
    mcp: bool = False

    @classmethod
    def of(cls, definition: "ToolDefinition") -> "ToolView":
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
