"""The engine's events and questions in ACP's words, and ACP's prompt in the engine's.

Pure translation, in the ACP process: an event the kernel relayed (JSON, with the title and
the edit's texts the kernel added) becomes ``session/update`` notifications; an approval
question becomes a ``session/request_permission`` call whose four options are the card's four
buttons, and the option the editor picked becomes the card's answer (so "Always allow" saves
its rule exactly as a click does, in the kernel). Nothing here talks to anyone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Union

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    PermissionOption,
    SessionMode,
    SessionModeState,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
    UnstructuredCommandInput,
    UserMessageChunk,
)
from pydantic import TypeAdapter

from ..engine.approval.types import UNCONFINED_CHOICES, ApprovalRequest
from ..engine.events import (
    ApprovalAnswered,
    ErrorEvent,
    Event,
    McpProgress,
    Notice,
    TextDelta,
    TodoUpdated,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
)
from .wire import PREVIEW

__all__ = ["Update", "MODES", "modes_state", "event_updates", "history_updates", "approval_permission",
           "question_permission", "answer_of", "engine_prompt", "commands_update", "mcp_entries", "stop_reason",
           "RESULT_LIMIT"]

Update = Union[AgentMessageChunk, AgentThoughtChunk, AgentPlanUpdate, ToolCallStart, ToolCallProgress, UserMessageChunk,
               AvailableCommandsUpdate]

# The five modes, in the words the editor shows beside each.
MODES: dict[str, tuple[str, str]] = {
    "default": ("Default", "Asks before what the rules do not allow (edits, most commands)"),
    "acceptEdits": ("Accept edits", "Edits inside the project run unasked; commands are still asked"),
    "plan": ("Plan", "Reads and plans; nothing that changes anything runs"),
    "bypass": ("Bypass", "Runs what nothing forbids without asking (built-in rules and forced asks still hold)"),
    "auto": ("Auto", "A reviewer model answers what would be asked, or hands it to you"),
}

_KINDS: dict[str, ToolKind] = {
    "read_file": "read", "read_notebook": "read", "read_cell_output": "read", "list_variables": "read",
    "inspect_variable": "read", "write_file": "edit", "edit_file": "edit", "edit_notebook": "edit",
    "insert_cell": "edit", "search_code": "search", "search_files": "search", "tool_search": "search",
    "execute_command": "execute", "run_python": "execute", "run_cells": "execute", "fetch_url": "fetch",
    "web_search": "fetch", "todo_write": "think", "load_skill": "read",
}
# How much of a tool's result the editor is sent (the model gets all of it).
RESULT_LIMIT = 20_000
_EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
_STOPS = {"end_turn": "end_turn", "max_tokens": "max_tokens", "max_steps": "max_turn_requests", "refusal": "refusal",
          "interrupted": "cancelled", "hook": "end_turn", "error": "end_turn"}


def modes_state(current: str) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=[
        SessionMode(id=mode, name=name, description=description) for mode, (name, description) in MODES.items()])


def stop_reason(engine: str, cancelled: bool) -> str:
    """ACP's stop reason for how the engine's turn ended (a cancelled prompt is ``cancelled`` whatever ended it)."""
    return "cancelled" if cancelled else _STOPS.get(engine, "end_turn")


def _fenced(text: str, language: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def _diff(extra: dict[str, Any]) -> Any:
    diff = extra["diff"]
    return tool_diff_content(diff["path"], diff["new_text"], diff.get("old_text"))


def _locations(project: Path, tool_input: dict[str, Any], extra: dict[str, Any]) -> list[ToolCallLocation] | None:
    if extra.get("diff"):
        return [ToolCallLocation(path=extra["diff"]["path"])]
    raw = tool_input.get("path")
    if isinstance(raw, str) and raw:
        return [ToolCallLocation(path=str(project / raw) if not Path(raw).is_absolute() else raw)]
    return None


def _started(event: ToolCallStarted, extra: dict[str, Any], project: Path) -> ToolCallStart:
    tool_input = event.input
    content: list[Any] = []
    if extra.get("diff"):
        content.append(_diff(extra))
    elif event.tool == "execute_command" and isinstance(tool_input.get("command"), str):
        where = f"# in {tool_input['cwd']}\n" if tool_input.get("cwd") else ""
        content.append(tool_content(text_block(_fenced(where + tool_input["command"], "sh"))))
    elif event.tool == "run_python" and isinstance(tool_input.get("code"), str):
        content.append(tool_content(text_block(_fenced(tool_input["code"], "python"))))
    title = str(extra.get("title") or (f"{event.tool}: {event.key}" if event.key else event.tool))
    return start_tool_call(event.tool_use_id, title, kind=_KINDS.get(event.tool, "other"), status="pending",
                           content=content or None, locations=_locations(project, tool_input, extra),
                           raw_input=tool_input)


def _finished(event: ToolCallFinished, extra: dict[str, Any]) -> ToolCallProgress:
    status: Literal["completed", "failed"] = "completed" if event.status == "ok" else "failed"
    if extra.get("diff") and event.status == "ok":
        content = [_diff(extra)]
    else:
        shown = event.result if len(event.result) <= RESULT_LIMIT else event.result[:RESULT_LIMIT] + "\n[... cut]"
        content = [tool_content(text_block(_fenced(shown)))] if shown.strip() else []
    return update_tool_call(event.tool_use_id, status=status, content=content or None,
                            raw_output={"status": event.status, "result": event.result[:RESULT_LIMIT]})


def event_updates(data: dict[str, Any], extra: dict[str, Any] | None, project: Path) -> list[Update]:
    """The updates one relayed event becomes (none for what an editor does not show)."""
    event = _EVENTS.validate_python(data)
    extra = extra or {}
    main = event.agent == "main"
    if isinstance(event, TextDelta):
        return [update_agent_message_text(event.text) if main else update_agent_thought_text(event.text)]
    if isinstance(event, ToolCallStarted):
        return [_started(event, extra, project)]
    if isinstance(event, (ToolProgress, McpProgress)) or (isinstance(event, ApprovalAnswered)
                                                         and event.answer in ("allow", "always")):
        return [update_tool_call(event.tool_use_id, status="in_progress")]
    if isinstance(event, ToolCallFinished):
        return [_finished(event, extra)]
    if isinstance(event, TodoUpdated) and main:
        return [update_plan([plan_entry(item.step, status=item.status) for item in event.items])]
    if isinstance(event, ErrorEvent):
        return [update_agent_message_text(f"\n\n**Error:** {event.message}\n\n")]
    if isinstance(event, Notice):
        text = event.text.replace("\n", "\n> ")
        return [update_agent_message_text(f"\n\n> {text}\n\n") if main else update_agent_thought_text(event.text)]
    return []


def history_updates(items: list[dict[str, Any]], project: Path) -> list[Update]:
    """A loaded session's conversation, replayed: what was said, and each call as it ended."""
    out: list[Update] = []
    for item in items:
        role = item.get("role")
        if role == "user":
            out.append(update_user_message_text(str(item.get("text", ""))))
        elif role == "assistant":
            out.append(update_agent_message_text(str(item.get("text", ""))))
        elif role == "tool":
            tool, tool_input = str(item.get("tool") or ""), item.get("input") or {}
            out.append(start_tool_call(str(item.get("id")), tool, kind=_KINDS.get(tool, "other"),
                                       status="completed" if item.get("status") == "completed" else "failed",
                                       locations=_locations(project, tool_input, {}), raw_input=tool_input))
    return out


def approval_permission(data: dict[str, Any]) -> tuple[ToolCallUpdate, list[PermissionOption]]:
    """The card of an approval question as ACP's permission request: the call (its diff when it is an
    edit, the card's words) and the four buttons."""
    request = ApprovalRequest.model_validate(data["request"])
    extra_diff = data.get("diff")
    content: list[Any] = [_diff({"diff": extra_diff})] if extra_diff else []
    content.append(tool_content(text_block(str(data.get("summary") if extra_diff else data.get("text")) or "")))
    call = ToolCallUpdate(tool_call_id=request.tool_use_id, status="pending", content=content,
                          raw_input=request.input)
    options = [
        PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
        PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
        PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
        PermissionOption(option_id="never", name="Never allow", kind="reject_always"),
    ]
    if request.policy:
        # The organisation's managed settings hold this call: answered once, no rule saved (as the cell's card).
        call.content = [*(call.content or []), tool_content(text_block(request.policy))]
        options = [option for option in options if option.option_id in ("allow", "deny")]
    offer, shown = request.dry_run, data.get("preview_result")
    if shown:
        call.content = [*(call.content or []), tool_content(text_block(str(shown)))]
    elif offer is not None and offer.available:
        # ACP has no kind for "not yet": a preview does not allow the call, so it is a kind of refusal,
        # listed last so that an editor answering for the person never picks it before Deny.
        options.append(PermissionOption(option_id=PREVIEW, name="Preview first", kind="reject_once"))
    elif offer is not None:
        call.content = [*(call.content or []), tool_content(text_block(f"No preview: {offer.reason}."))]
    return call, options


def question_permission(data: dict[str, Any]) -> tuple[ToolCallStart, list[PermissionOption]]:
    """A question that is not about a tool call (trusting the project, running without a sandbox): a call of
    its own for the editor to show it on, and its choices."""
    kind = data.get("kind")
    call_id = f"codingcode-{kind}-{data.get('id')}"
    body = [tool_content(text_block(str(data.get("text") or "")))]
    if kind == "trust":
        call = start_tool_call(call_id, "Trust this project's files?", kind="other", status="pending", content=body)
        return call, [PermissionOption(option_id="trust", name="Trust this project", kind="allow_always"),
                      PermissionOption(option_id="not_now", name="Not now", kind="reject_once")]
    call = start_tool_call(call_id, "No sandbox here: how should commands run?", kind="execute", status="pending",
                           content=body)
    kinds = {"ask_each": "allow_once", "session": "allow_always", "never": "reject_always"}
    return call, [PermissionOption(option_id=answer, name=words, kind=kinds[answer])  # type: ignore[arg-type]
                  for answer, words in UNCONFINED_CHOICES.items()]


def answer_of(outcome: Any, options: list[PermissionOption]) -> str | None:
    """The option the editor picked (its id is the answer the kernel expects); None when it cancelled."""
    if isinstance(outcome, AllowedOutcome) and any(option.option_id == outcome.option_id for option in options):
        return outcome.option_id
    return None


def engine_prompt(blocks: list[Any]) -> str | list[dict[str, Any]]:
    """ACP's prompt as the engine's request: text as it is, pictures as image blocks, a file the editor
    attached as its text with its name, a link to one as its address."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append({"type": "text", "text": block.text})
        elif kind == "image":
            parts.append({"type": "image", "source": {"type": "base64", "media_type": block.mime_type,
                                                      "data": block.data}})
        elif kind == "resource" and hasattr(block.resource, "text"):
            body = block.resource.text.rstrip("\n")
            parts.append({"type": "text", "text": f'<file uri="{block.resource.uri}">\n{body}\n</file>'})
        elif kind in ("resource", "resource_link"):
            uri = block.resource.uri if kind == "resource" else block.uri
            parts.append({"type": "text", "text": f"@{uri}"})
    if all(part["type"] == "text" for part in parts):
        return "\n\n".join(part["text"] for part in parts)
    return parts


def commands_update(commands: list[dict[str, str]]) -> AvailableCommandsUpdate:
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[
        AvailableCommand(name=entry["name"], description=entry.get("description") or entry["name"],
                         input=AvailableCommandInput(UnstructuredCommandInput(hint=entry["hint"])) if entry.get("hint")
                         else None)
        for entry in commands])


def mcp_entries(servers: list[Any] | None) -> dict[str, dict[str, Any]]:
    """The editor's MCP servers as ``.mcp.json`` entries (stdio, http, sse; the others are left out)."""
    out: dict[str, dict[str, Any]] = {}
    for server in servers or []:
        name = getattr(server, "name", None)
        if not name:
            continue
        kind = getattr(server, "type", None)
        if kind in ("http", "sse") and getattr(server, "url", None):
            out[name] = {"type": kind, "url": server.url,
                         "headers": {header.name: header.value for header in server.headers or []}}
        elif kind in (None, "stdio") and getattr(server, "command", None):
            out[name] = {"command": server.command, "args": list(server.args or []),
                         "env": {variable.name: variable.value for variable in server.env or []}}
        # MCP over ACP itself (type "acp": the editor serves the tools on this connection) is not supported.
    return out
