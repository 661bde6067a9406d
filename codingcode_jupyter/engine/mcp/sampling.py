"""A server asking the client's model for a message (``sampling/createMessage``).

The request becomes an approval question — which server, the messages it wants answered,
the model that would answer and the token limit — asked in the cell of the tool call
during which the server asked. When the person allows it, the turn's own model answers
and its tokens are counted in that turn. No turn, nobody to ask, or a "no": the server
gets an error saying it was declined, never a message nobody approved.
"""

from __future__ import annotations

import copy
import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..approval.audit import AuditLog
from ..approval.audit_records import DecisionRecord
from ..approval.types import ApprovalRequest, Reply
from ..events import ApprovalAnswered, ApprovalRequested, ToolCallFinished, ToolCallStarted, Usage
from ..messages import (
    ContentBlockParam,
    MessageParam,
    assistant_blocks,
    blocks,
    image_block,
    own_blocks,
    text_block,
    user_blocks,
)
from ..models.base import ModelError, ModelRequest
from ..models.pricing import cost_usd
from .origin import CallOrigin
from .results import MODEL_IMAGE_TYPES

if TYPE_CHECKING:
    # The SDK's types are imported where content is converted (a server is running by then).
    import mcp_types as types

__all__ = [
    "SamplingRequest", "SamplingResult", "SamplingDeclined", "Sampler", "TurnSampler", "sampling_request", "result_for_server",
]

# However much a server asks for, one sampled message is bounded (it is the person's money).
MAX_SAMPLING_TOKENS = 8192
_ids = itertools.count(1)


class SamplingDeclined(Exception):
    """The message was not produced: declined, nobody could be asked, or the model failed."""


@dataclass(frozen=True)
class SamplingRequest:
    """What a server asked for, in the Messages API's shape, and the call it came during."""

    server: str
    messages: tuple[MessageParam, ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()
    origin: CallOrigin | None = None


@dataclass(frozen=True)
class SamplingResult:
    text: str
    model: str
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)


Sampler = Callable[[SamplingRequest], Awaitable[SamplingResult]]


def _block(item: Any) -> ContentBlockParam:
    import mcp_types as types

    if isinstance(item, types.TextContent):
        return text_block(item.text)
    if isinstance(item, types.ImageContent) and item.mime_type in MODEL_IMAGE_TYPES:
        return image_block(item.mime_type, item.data)
    kind = getattr(item, "type", type(item).__name__)
    return text_block(f"[{kind} content the server sent is not passed to the model]")


def sampling_request(server: str, params: types.CreateMessageRequestParams, origin: CallOrigin | None) -> SamplingRequest:
    """The SDK's request parameters as a :class:`SamplingRequest`."""
    messages: list[MessageParam] = []
    for message in params.messages:
        content = [_block(item) for item in message.content_as_list]
        if messages and messages[-1]["role"] == message.role:
            own_blocks(messages[-1]).extend(content)  # the API wants roles to alternate
        else:
            messages.append(user_blocks(content) if message.role == "user" else assistant_blocks(content))
    hints = tuple(h.name for h in (params.model_preferences.hints or []) if h.name) if params.model_preferences else ()
    return SamplingRequest(
        server=server,
        messages=tuple(messages),
        max_tokens=params.max_tokens,
        system_prompt=params.system_prompt,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_hints=hints,
        origin=origin,
    )


def _preview(request: SamplingRequest, model: str, max_tokens: int) -> str:
    lines = [f"MCP server {request.server} asks {model} to write a message (at most {max_tokens} tokens)."]
    if request.model_hints:
        lines.append(f"It would prefer: {', '.join(request.model_hints)}")
    if request.system_prompt:
        lines.append(f"\nsystem: {request.system_prompt}")
    for message in request.messages:
        text = " ".join(b["text"] if b["type"] == "text" else f"[{b['type']}]" for b in blocks(message))
        lines.append(f"\n{message['role']}: {text}")
    return "\n".join(lines)


_STOP = {"end_turn": "endTurn", "max_tokens": "maxTokens", "stop_sequence": "stopSequence"}


class TurnSampler:
    """Implements :data:`Sampler` with the turn's model, after the person said yes.

    "Always allow" and "Never allow" hold for that server for the rest of the session.
    """

    def __init__(self, project: Path | None = None) -> None:
        self.audit = AuditLog(Path(project)) if project is not None else None
        self.always: set[str] = set()
        self.never: set[str] = set()

    async def __call__(self, request: SamplingRequest) -> SamplingResult:
        origin = request.origin
        if origin is None or origin.model is None:
            raise SamplingDeclined("sampling is only answered during a tool call of a running turn")
        model = origin.model
        max_tokens = max(1, min(request.max_tokens, MAX_SAMPLING_TOKENS))
        call_id = f"{origin.tool_use_id}-sampling-{next(_ids)}"
        tool = f"{request.server}:sampling"
        summary = {"messages": list(request.messages), "model": model.name, "maxTokens": max_tokens}
        started = time.perf_counter()
        origin.emit(origin.stamp(ToolCallStarted(tool_use_id=call_id, tool=tool, input={"model": model.name, "maxTokens": max_tokens})))
        try:
            decision = await self._decide(request, origin, call_id, tool, summary, model.name, max_tokens)
            self._record(origin, call_id, tool, decision)
            if decision != "allow":
                raise SamplingDeclined(f"the user declined {request.server}'s sampling request")
            result = await self._sample(request, model, max_tokens)
        except SamplingDeclined as declined:
            origin.emit(origin.stamp(ToolCallFinished(tool_use_id=call_id, tool=tool, status="denied", result=str(declined),
                                                      duration_ms=(time.perf_counter() - started) * 1000)))
            raise
        if origin.add_usage is not None:
            origin.add_usage(result.usage, cost_usd(model.name, result.usage))
        origin.emit(origin.stamp(ToolCallFinished(tool_use_id=call_id, tool=tool, status="ok", result=result.text,
                                                  duration_ms=(time.perf_counter() - started) * 1000)))
        return result

    async def _decide(self, request: SamplingRequest, origin: CallOrigin, call_id: str, tool: str,
                      summary: dict[str, Any], model: str, max_tokens: int) -> str:
        if request.server in self.never:
            return "deny"
        if request.server in self.always:
            return "allow"
        if origin.ask is None:
            raise SamplingDeclined("nobody can be asked to approve sampling in this session")
        preview = _preview(request, model, max_tokens)
        reason = f"MCP server {request.server} asks the model for a message (sampling); its tokens count in this turn"
        question = ApprovalRequest(session_id=origin.session_id, turn_id=origin.turn_id, agent=origin.agent,
                                   tool_use_id=call_id, tool=tool, input=summary, preview=preview, layer="mcp",
                                   reason=reason)
        origin.emit(origin.stamp(ApprovalRequested.carrying(question)))
        reply = await origin.ask(question)
        # A Reply carries the rules picked for "Always"/"Never"; for sampling only the answer counts.
        answer = reply.answer if isinstance(reply, Reply) else reply
        origin.emit(origin.stamp(ApprovalAnswered(tool_use_id=call_id, answer=answer, by="user")))
        if answer == "always":
            self.always.add(request.server)
        elif answer == "never":
            self.never.add(request.server)
        return "allow" if answer in ("allow", "always") else "deny"

    async def _sample(self, request: SamplingRequest, model: Any, max_tokens: int) -> SamplingResult:
        system = [text_block(request.system_prompt)] if request.system_prompt else []
        asked = ModelRequest(model=model.name, system=system, messages=[copy.copy(m) for m in request.messages],
                             max_tokens=max_tokens)
        try:
            response = await model.stream(asked, lambda _text: None)
        except ModelError as error:
            raise SamplingDeclined(f"the model failed: {error}") from None
        text = "".join(block.get("text", "") for block in response.content if block["type"] == "text")
        return SamplingResult(text=text, model=model.name, stop_reason=_STOP.get(response.stop_reason or "", response.stop_reason),
                              usage=response.usage)

    def _record(self, origin: CallOrigin, call_id: str, tool: str, decision: str) -> None:
        if self.audit is None:
            return
        try:
            self.audit.append(DecisionRecord(session_id=origin.session_id, turn_id=origin.turn_id, tool_use_id=call_id,
                                             agent=origin.agent, tool=tool, input={}, decision=decision, layer="mcp",
                                             rule=None, reason="sampling request of an MCP server", by="user"))
        except OSError:
            pass  # the audit log is best effort here; the card showed the decision


def result_for_server(result: SamplingResult) -> types.CreateMessageResult:
    """The SDK's answer to the server."""
    import mcp_types as types

    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=result.text),
                                     model=result.model, stop_reason=result.stop_reason)

