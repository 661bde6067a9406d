"""Approval as data: what is asked, what is answered, what was decided.

The agent loop hands every tool call to an :class:`Approver` before running it; the
approver returns a :class:`Decision` (allow, possibly with changed input, or deny with a
reason the model reads). When a person must answer, the approver awaits the front's
:data:`Asker` callback with an :class:`ApprovalRequest`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, Protocol

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from ..tools.base import ToolContext, ToolDefinition

__all__ = ["Answer", "Reply", "ApprovalRequest", "Asker", "Decision", "ToolCall", "Approver", "Outcome"]

Answer = Literal["allow", "deny", "always", "never"]
Outcome = Literal["ok", "error", "denied", "interrupted"]


class ApprovalRequest(BaseModel):
    """Everything a person needs to decide on one tool call."""

    session_id: str
    turn_id: int
    agent: str = "main"
    tool_use_id: str
    tool: str  # the display name: `execute_command`, `server:tool`
    input: dict[str, Any]
    # What will happen: a unified diff, the command and its directory, the URL...
    preview: str = ""
    layer: str = ""
    rule: str | None = None
    reason: str = ""
    sandboxed: bool | None = None
    annotations: dict[str, Any] | None = None
    # The argument that says what the call is about, as its tool declares it.
    key: str | None = None
    # The rule sets "Always allow" / "Never allow" may save, narrowest first (the first is the default).
    allow_choices: list[list[str]] = Field(default_factory=list)
    deny_choices: list[list[str]] = Field(default_factory=list)
    # "Always allow" can only allow this once: the question comes from something no saved rule outranks.
    forced: bool = False


class Reply(BaseModel):
    """An answer with the rule set the person picked for "Always allow" / "Never allow"."""

    answer: Answer
    rules: list[str] | None = None


Asker = Callable[[ApprovalRequest], Awaitable["Answer | Reply"]]


class Decision(BaseModel):
    kind: Literal["allow", "deny"]
    input: dict[str, Any] = Field(default_factory=dict)
    layer: str = ""
    rule: str | None = None
    reason: str = ""
    # Who decided: "rule", "mode", "hook", "user", "timeout"...
    by: str = ""


class ToolCall(BaseModel):
    model_config = {"arbitrary_types_allowed": True}

    tool_use_id: str
    tool: Any  # ToolDefinition; Any keeps pydantic from trying to validate a dataclass
    input: dict[str, Any]

    @property
    def definition(self) -> "ToolDefinition":
        return self.tool


class Approver(Protocol):
    """The contract between the agent loop and the approval pipeline."""

    async def decide(self, call: ToolCall, ctx: "ToolContext", ask: Asker | None) -> Decision: ...

    def record_outcome(
        self, call: ToolCall, ctx: "ToolContext", decision: Decision, outcome: Outcome, duration_ms: float
    ) -> None: ...
