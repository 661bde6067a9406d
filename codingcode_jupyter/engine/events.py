"""Typed events the engine emits while it runs a turn.

Every front — the notebook widgets, the console renderer, the tests — consumes this one
stream. Events are plain pydantic models told apart by ``type``; a front ignores the
types it does not render.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable, Literal, Union

from pydantic import BaseModel, Field

from .approval.types import ApprovalRequest

__all__ = [
    "Usage",
    "Event",
    "EventSink",
    "TurnStarted",
    "TextDelta",
    "ToolCallStarted",
    "ToolProgress",
    "ToolCallFinished",
    "ApprovalRequested",
    "ApprovalAnswered",
    "AuditRecorded",
    "TodoItem",
    "TodoUpdated",
    "UsageUpdated",
    "Notice",
    "ErrorEvent",
    "TurnDone",
    "McpProgress",
    "McpLog",
    "McpLoginRequired",
    "McpServerChanged",
    "McpWaiting",
]


class Usage(BaseModel):
    """Token counts as the Messages API reports them; addable."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


class _Base(BaseModel):
    session_id: str = ""
    turn_id: int = 0
    # "main" for the top-level agent; "main/explore#1" for a sub-agent it dispatched.
    agent: str = "main"


class TurnStarted(_Base):
    type: Literal["turn_started"] = "turn_started"
    prompt: str
    model: str


class TextDelta(_Base):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallStarted(_Base):
    type: Literal["tool_call_started"] = "tool_call_started"
    tool_use_id: str
    tool: str
    input: dict[str, Any]
    # The argument that says what the call is about, as the tool declares it (a path, the
    # command, the URL); None when the tool declares none.
    key: str | None = None


class ToolProgress(_Base):
    type: Literal["tool_progress"] = "tool_progress"
    tool_use_id: str
    text: str


class ToolCallFinished(_Base):
    type: Literal["tool_call_finished"] = "tool_call_finished"
    tool_use_id: str
    tool: str
    status: Literal["ok", "error", "denied", "interrupted"]
    result: str = ""
    duration_ms: float = 0.0
    # Images the result carries (MCP tools, custom tools, read_file): {"media_type", "data"}
    # with base64 data, for the front to show beside the call.
    images: list[dict[str, str]] = Field(default_factory=list)


class ApprovalRequested(_Base):
    """A person is asked about a tool call: the request itself, as the front's ``ask`` receives it."""

    type: Literal["approval_requested"] = "approval_requested"
    request: ApprovalRequest

    @classmethod
    def carrying(cls, request: ApprovalRequest) -> "ApprovalRequested":
        return cls(session_id=request.session_id, turn_id=request.turn_id, agent=request.agent, request=request)

    @property
    def tool_use_id(self) -> str:
        return self.request.tool_use_id

    @property
    def tool(self) -> str:
        return self.request.tool


class ApprovalAnswered(_Base):
    type: Literal["approval_answered"] = "approval_answered"
    tool_use_id: str
    answer: Literal["allow", "deny", "always", "never", "timeout", "interrupted"]
    by: str = "user"


class AuditRecorded(_Base):
    type: Literal["audit_recorded"] = "audit_recorded"
    record: dict[str, Any]


class TodoItem(BaseModel):
    step: str = Field(min_length=1)
    status: Literal["pending", "in_progress", "completed"] = "pending"


class TodoUpdated(_Base):
    type: Literal["todo_updated"] = "todo_updated"
    items: list[TodoItem]


class UsageUpdated(_Base):
    type: Literal["usage_updated"] = "usage_updated"
    request: Usage
    turn: Usage
    cost_usd: float | None = None


class Notice(_Base):
    type: Literal["notice"] = "notice"
    text: str


class ErrorEvent(_Base):
    type: Literal["error"] = "error"
    message: str


class TurnDone(_Base):
    type: Literal["turn_done"] = "turn_done"
    stop_reason: Literal["end_turn", "max_steps", "interrupted", "error", "max_tokens", "refusal", "hook"]
    usage: Usage
    cost_usd: float | None = None
    steps: int = 0
    # The text of the turn's last assistant message: a sub-agent's answer, a summary.
    text: str = ""


# -- MCP: subclasses of the events a front already renders, so an older front shows them as
# plain progress lines and notices while a newer one can use their fields.


class McpProgress(ToolProgress):
    """A progress notification of a running MCP tool call (``text`` says it for plain fronts)."""

    type: Literal["mcp_progress"] = "mcp_progress"  # type: ignore[assignment]
    server: str
    progress: float
    total: float | None = None
    message: str | None = None


class McpLog(Notice):
    """A log message an MCP server sent, at warning level or above."""

    type: Literal["mcp_log"] = "mcp_log"  # type: ignore[assignment]
    server: str
    level: str
    logger: str | None = None


class McpLoginRequired(Notice):
    """A remote MCP server needs the person to log in: open ``url``.

    When the browser runs on another machine than the kernel, the page it lands on after
    logging in will not load; pasting that page's address into
    ``%agent mcp login SERVER URL`` finishes the login.
    """

    type: Literal["mcp_login_required"] = "mcp_login_required"  # type: ignore[assignment]
    server: str
    url: str
    redirect_uri: str


class McpServerChanged(Notice):
    """A server's state changed outside any call (ready, exited, tools changed)."""

    type: Literal["mcp_server_changed"] = "mcp_server_changed"  # type: ignore[assignment]
    server: str
    state: str
    tool_count: int = 0


class McpWaiting(Notice):
    """A turn's request waits for MCP servers still starting (``done``: it stopped waiting for these)."""

    type: Literal["mcp_waiting"] = "mcp_waiting"  # type: ignore[assignment]
    servers: list[str]
    seconds: float
    done: bool = False


Event = Annotated[
    Union[
        TurnStarted,
        TextDelta,
        ToolCallStarted,
        ToolProgress,
        ToolCallFinished,
        ApprovalRequested,
        ApprovalAnswered,
        AuditRecorded,
        TodoUpdated,
        UsageUpdated,
        Notice,
        ErrorEvent,
        TurnDone,
        McpProgress,
        McpLog,
        McpLoginRequired,
        McpWaiting,
        McpServerChanged,
    ],
    Field(discriminator="type"),
]

EventSink = Callable[[BaseModel], None]
