"""The agent loop: stream an assistant message, run its tool calls, answer them, repeat.

One turn is a few named steps over state kept in :class:`AgentLoop`:
``_request`` (build what is sent) → ``_stream`` (one assistant message, with retries the
SDK does not do) → ``_run_tools`` (approve and run every call of the message) → next step
or done. Whatever happens — a denied call, a bad argument, an API outage, an interrupt —
the conversation is left in a state the API accepts: every tool_use gets its tool_result.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, cast

from .approval.types import Asker, Verdict
from .events import (
    ErrorEvent,
    EventSink,
    Notice,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnDone,
    TurnStarted,
    Usage,
    UsageUpdated,
)
from .messages import (
    CACHE,
    ContentBlockParam,
    MessageParam,
    TextBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
    assistant_blocks,
    blocks,
    cache_last,
    cached_tool,
    own_blocks,
    tool_result,
    user_blocks,
    user_text,
)
from .models.base import Model, ModelError, ModelRequest, ModelResponse
from .models.pricing import cost_usd
from .state import SessionState
from .tools.base import (
    AgentRun,
    AgentTurn,
    Approver,
    NoChange,
    ToolCall,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolResult,
)
from .tools.images import IMAGE_MIME_TYPES
from .tools.web import server_side_tools

if TYPE_CHECKING:
    from .deps import SessionDeps
    from .hooks.lifecycle import LifecycleHooks
    from .settings import PermissionMode

__all__ = ["Conversation", "ToolSource", "ContextKeeper", "AgentLoop", "INTERRUPTED_RESULT", "with_cache_breakpoints"]

INTERRUPTED_RESULT = "Interrupted by the user before this tool call finished; nothing more was done."


@dataclass(frozen=True)
class ToolUse:
    """One tool call of an assistant message (its tool_use block), read once from the wire."""

    id: str
    name: str
    input: dict[str, Any]

    @classmethod
    def of(cls, block: ToolUseBlockParam) -> "ToolUse":
        return cls(block["id"], block["name"], dict(block.get("input") or {}))


class ToolSource(Protocol):
    """What the loop needs from a tool resolver."""

    def offered(self) -> list[ToolDefinition]: ...

    def lookup(self, wire_name: str) -> ToolDefinition | None: ...


class ContextKeeper(Protocol):
    """Keeps what is sent inside the model's context window (context compaction)."""

    async def prepare(self, request: ModelRequest, run: "AgentRun | None" = None) -> ModelRequest:
        """The request to send (may be smaller than ``request``)."""
        ...

    async def refusal(self, request: ModelRequest, run: "AgentRun | None" = None) -> str | None:
        """Why a turn's request cannot be sent whole even with the conversation compacted (said to the
        person instead of sending it), or None."""
        ...

    async def on_overflow(self, request: ModelRequest, error: ModelError,
                          run: "AgentRun | None" = None) -> ModelRequest | None:
        """After the API said the prompt is too long: a smaller request to send once more, or None."""
        ...


@dataclass
class Conversation:
    """The messages sent to the model, appended to only through :meth:`append`.

    Consecutive user messages are merged (a turn that ended on tool results followed by a
    new prompt), so the list always alternates as the API expects.
    """

    messages: list[MessageParam] = field(default_factory=list)
    on_append: Callable[[MessageParam], None] | None = None

    def append(self, message: MessageParam) -> None:
        if self.on_append is not None:
            self.on_append(message)
        merge_message(self.messages, message)


def merge_message(messages: list[MessageParam], message: MessageParam) -> None:
    """Append ``message``, its content as a list of blocks (what :func:`blocks` relies on), merged into
    the last message when the role is the same."""
    added = list(blocks(message))
    if messages and messages[-1]["role"] == message["role"]:
        previous = messages[-1]
        own_blocks(previous).extend(added)
    else:
        messages.append(cast(MessageParam, {"role": message["role"], "content": added}))


def with_cache_breakpoints(messages: list[MessageParam]) -> list[MessageParam]:
    """A copy whose last block, and the last block of the user message before it, carry cache_control.

    The last one writes this step's prefix to the cache; the earlier one is where the previous
    step wrote, so the read hits even when a step added more blocks than the API looks back
    over (about 20: a message with many parallel tool calls). With the system and tools
    breakpoints that makes four, the API's maximum.
    """
    if not messages:
        return messages
    out = list(messages)
    marked = [len(out) - 1]
    for index in range(len(out) - 2, -1, -1):
        if out[index]["role"] == "user":
            marked.append(index)
            break
    for index in marked:
        message = copy.deepcopy(out[index])
        if message["content"] and not isinstance(message["content"], str):
            cache_last(message)
        out[index] = message
    return out


_SHOWN_IMAGE_BYTES = 4_000_000


def _images(result: ToolResult) -> list[dict[str, str]]:
    """The result's base64 images a front may show (raster types only, bounded in size)."""
    shown, total = [], 0
    for block in result.content:
        # A tool's output is not validated: a block without a type is passed over, not an error.
        if "type" not in block or block["type"] != "image":
            continue
        source = block.get("source")
        if source is None or source["type"] != "base64" or source["media_type"] not in IMAGE_MIME_TYPES:
            continue
        data = source["data"]
        if not isinstance(data, str):  # base64 text on the wire; the SDK's type also allows a file
            continue
        total += len(data)
        if total > _SHOWN_IMAGE_BYTES:
            break
        shown.append({"media_type": source["media_type"], "data": data})
    return shown


@dataclass
class AgentLoop:
    """Runs turns of one agent (the main one or a sub-agent) over a conversation.

    It is the :class:`~.tools.base.AgentRun` its tools see (``ctx.run``).
    """

    model: Model
    tools: ToolSource
    approver: Approver
    # The session's parts (its project, settings, hooks, sandbox, MCP, checkpoints...).
    deps: "SessionDeps"
    session_id: str
    state: SessionState
    system: str = ""
    agent: str = "main"
    emit: EventSink = lambda event: None
    ask: Asker | None = None
    # This agent's permission mode and approval timeout, decided by whoever starts the turn.
    mode: "PermissionMode" = "default"
    approval_timeout: float | None = None
    max_steps: int = 100
    max_tokens: int = 8192
    overload_retries: int = 4
    overload_backoff: float = 1.0
    # Keeps requests inside the context window (compaction lives outside the loop).
    context: ContextKeeper | None = None
    # This turn's usage so far: the loop's own requests, and what sub-agents reported (add_usage).
    _own_usage: Usage = field(default_factory=Usage, init=False, repr=False)
    _extra_usage: Usage = field(default_factory=Usage, init=False, repr=False)
    _extra_cost: float = field(default=0.0, init=False, repr=False)
    _turn: AgentTurn | None = field(default=None, init=False, repr=False)
    _conversation: Conversation | None = field(default=None, init=False, repr=False)
    # A hook said `continue: false`: the turn ends after the current step, for this reason.
    _stop_requested: str | None = field(default=None, init=False, repr=False)

    # -- one turn -------------------------------------------------------------------------

    async def run(self, conversation: Conversation, prompt: str | list[ContentBlockParam], turn_id: int) -> TurnDone:
        usage = Usage()
        self._own_usage, self._extra_usage, self._extra_cost = Usage(), Usage(), 0.0
        self._begin(turn_id)
        self.deps.secrets.walk_next()  # a dotenv file made since the last turn is known from this one
        self._stop_requested = None
        self._conversation = conversation
        steps = 0
        text = ""
        stop_hook_active = False
        self._emit(TurnStarted(prompt=prompt if isinstance(prompt, str) else "", model=self.model.name), turn_id)
        refused = await self._refusal(prompt)
        if refused is not None:
            # Before the conversation holds it: the next turn goes on from the conversation as it was.
            self._emit(ErrorEvent(message=refused), turn_id)
            return self._done("error", usage, steps, text, turn_id)
        conversation.append(user_blocks(prompt))
        try:
            while True:
                if steps >= self.max_steps:
                    message = (
                        f"Stopped after {self.max_steps} model requests in one turn (max_steps); "
                        "the work so far is kept — send another message to continue."
                    )
                    self._emit(ErrorEvent(message=message), turn_id)
                    return self._done("max_steps", usage, steps, text, turn_id)
                steps += 1
                request = await self._request(conversation)
                response = await self._send(request, turn_id)
                usage = self._own_usage = usage + response.usage
                self._emit(
                    UsageUpdated(request=response.usage, turn=usage + self._extra_usage, cost_usd=self._cost(usage)),
                    turn_id,
                )
                if response.content:
                    # An empty assistant message would make the API reject the next request.
                    conversation.append(assistant_blocks(response.content))
                text = "".join(b["text"] for b in response.content if b["type"] == "text")
                calls = [ToolUse.of(b) for b in response.content if b["type"] == "tool_use"]
                if response.stop_reason == "pause_turn":
                    continue  # a server-side tool paused; sending the conversation back resumes it
                if not calls:
                    stop = response.stop_reason if response.stop_reason in ("max_tokens", "refusal") else "end_turn"
                    again = await self._stop_hooks(stop_hook_active) if stop == "end_turn" else None
                    if again is None:
                        return self._done(stop, usage, steps, text, turn_id)
                    # A Stop hook blocked the end of the turn: its reason is the agent's next instruction.
                    stop_hook_active = True
                    conversation.append(user_blocks(again))
                    continue
                await self._run_tools(conversation, calls, turn_id)
                self._mcp_notes(conversation)
                if self._stop_requested is not None:
                    self._emit(Notice(text=f"Stopped by a hook: {self._stop_requested}"), turn_id)
                    return self._done("hook", usage, steps, text, turn_id)
        except ModelError as error:
            self._emit(ErrorEvent(message=str(error)), turn_id)
            return self._done("error", usage, steps, text, turn_id)
        except asyncio.CancelledError:
            self._emit(Notice(text="Interrupted."), turn_id)
            self._done("interrupted", usage, steps, text, turn_id)
            raise

    def _begin(self, turn_id: int) -> AgentTurn:
        """What every call of this turn shares (its tools' context), made once for the turn."""
        self._turn = AgentTurn(deps=self.deps, session_id=self.session_id, turn_id=turn_id, agent=self.agent,
                               state=self.state, emit=self.emit, mode=self.mode,
                               approval_timeout=self.approval_timeout,
                               # For tools that act on this agent's behalf (dispatch_agent runs a child
                               # loop with the same approver and front, and adds its usage to this turn).
                               run=self)
        return self._turn

    @property
    def _turn_id(self) -> int:
        return self._turn.turn_id if self._turn is not None else 0

    @property
    def project(self) -> Path:
        return self.deps.project

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def messages(self) -> list[MessageParam]:
        return list(self._conversation.messages) if self._conversation is not None else []

    def notify(self, text: str) -> None:
        """Tell the person something about this turn (a Notice event), e.g. that the context was compacted."""
        self._emit(Notice(text=text), self._turn_id)

    def request_stop(self, reason: str) -> None:
        """End the turn after the current step (a hook answered ``continue: false``)."""
        self._stop_requested = self._stop_requested or reason

    def _mcp_notes(self, conversation: Conversation) -> None:
        """A server that became ready (or failed) during the turn: said in the next request, beside
        the tools block that changed with it (the main agent's; a sub-agent's turn leaves them)."""
        mcp = self.deps.mcp if self.agent == "main" else None
        notes = mcp.take_model_notes() if mcp is not None else []
        if notes:
            conversation.append(user_text("\n".join(notes)))

    def _hooks(self) -> "LifecycleHooks":
        return self.deps.hooks

    def _tell(self, notices: list[str]) -> None:
        for text in notices:
            self.notify(text)

    async def _stop_hooks(self, active: bool) -> str | None:
        """Run the Stop (or SubagentStop) hooks; the text to continue with when one blocks the stop."""
        outcome = await self._hooks().stop(session_id=self.session_id, agent=self.agent, active=active, mode=self.mode)
        self._tell(outcome.notices)
        if outcome.stop is not None or not outcome.blocked:
            return None
        return f"(A Stop hook asks you to go on before finishing: {outcome.reason or 'no reason given'})"

    async def _after_tool(self, tool: ToolDefinition, tool_input: dict[str, Any], result: ToolResult,
                          ctx: ToolContext) -> ToolResult:
        """PostToolUse hooks, and what PreToolUse hooks added for the model, joined to the result."""
        notes = list(ctx.hook_context)
        outcome = await self._hooks().after_tool(session_id=self.session_id, definition=tool, tool_input=tool_input,
                                                 text=result.text_content, is_error=result.is_error,
                                                 tool_use_id=ctx.tool_use_id, mode=self.mode)
        self._tell(outcome.notices)
        notes.extend(outcome.context)
        if outcome.blocked:
            notes.append(f"A hook after this call says: {outcome.reason or 'no reason given'}")
        if outcome.stop is not None:
            self.request_stop(outcome.stop)
        if not notes:
            return result
        return ToolResult([*result.content, {"type": "text", "text": "\n".join(notes)}], is_error=result.is_error,
                          display=result.display)

    def _asker(self) -> Asker | None:
        """The front's ask, with the Notification hooks told each time a card waits."""
        ask = self.ask
        if ask is None:
            return None

        async def asking(request: Any) -> Any:
            hooks = self._hooks()
            if hooks.configured("Notification"):
                outcome = await hooks.notification(session_id=self.session_id,
                                                   message=f"codingcode needs your permission to use {request.tool}")
                self._tell(outcome.notices)
            return await ask(request)

        return asking

    def add_usage(self, usage: Usage, cost: float | None = None) -> None:
        """Count tokens spent on this turn's behalf elsewhere (a sub-agent) into its totals."""
        self._extra_usage = self._extra_usage + usage
        self._extra_cost += cost or 0.0
        self._emit(
            UsageUpdated(request=usage, turn=self._own_usage + self._extra_usage, cost_usd=self._cost(self._own_usage)),
            self._turn_id,
        )

    def _cost(self, own: Usage) -> float | None:
        # Sub-agents may run another model: their cost is added as reported, not re-priced.
        mine = cost_usd(self.model.name, own)
        if mine is None and not self._extra_cost:
            return None
        return (mine or 0.0) + self._extra_cost

    def _done(self, stop: str, usage: Usage, steps: int, text: str, turn_id: int) -> TurnDone:
        done = TurnDone(
            stop_reason=stop,  # type: ignore[arg-type]
            usage=usage + self._extra_usage,
            cost_usd=self._cost(usage),
            steps=steps,
            text=text,
        )
        self._emit(done, turn_id)
        return done

    def _emit(self, event: Any, turn_id: int) -> None:
        event.session_id = self.session_id
        event.turn_id = turn_id
        event.agent = self.agent
        self.emit(event)

    # -- one model request ----------------------------------------------------------------

    async def _refusal(self, prompt: str | list[ContentBlockParam]) -> str | None:
        if self.context is None:
            return None
        return await self.context.refusal(self._bare_request([user_blocks(prompt)]), self)

    async def _request(self, conversation: Conversation) -> ModelRequest:
        request = self._bare_request(with_cache_breakpoints(conversation.messages))
        if self.context is not None:
            request = await self.context.prepare(request, self)
        return request

    def _bare_request(self, messages: list[MessageParam]) -> ModelRequest:
        settings = self.deps.settings.current().merged
        server = server_side_tools(settings, self.model.name)
        tools = [server.get(tool.name) or tool.to_api() for tool in self.tools.offered()]
        if tools:
            tools[-1] = cached_tool(tools[-1])
        system: list[TextBlockParam] = [{"type": "text", "text": self.system, "cache_control": CACHE}] if self.system else []
        return ModelRequest(model=self.model.name, system=system, messages=messages, tools=tools,
                            max_tokens=self.max_tokens)

    async def _send(self, request: ModelRequest, turn_id: int) -> ModelResponse:
        """Stream one step; when the prompt is too long, let ``on_overflow`` shrink it and retry once."""
        try:
            return await self._stream(request, turn_id)
        except ModelError as error:
            if error.kind != "context_overflow" or self.context is None:
                raise
            self._emit(Notice(text="The conversation no longer fits the context window: compacting it and retrying."), turn_id)
            smaller = await self.context.on_overflow(request, error, self)
            if smaller is None:
                raise
            return await self._stream(smaller, turn_id)

    async def _stream(self, request: ModelRequest, turn_id: int) -> ModelResponse:
        def on_text(delta: str) -> None:
            self._emit(TextDelta(text=delta), turn_id)

        attempt = 0
        while True:
            try:
                return await self.model.stream(request, on_text)
            except ModelError as error:
                # The SDK retries 429/5xx/529 answers, but not an overloaded_error that arrives
                # mid-stream as an SSE error event (measured with anthropic 2.x): that one is ours to retry.
                if error.kind != "overloaded" or attempt >= self.overload_retries:
                    raise
                delay = self.overload_backoff * (2**attempt)
                attempt += 1
                self._emit(
                    Notice(text=f"The API is overloaded; retrying in {delay:.1f} s ({attempt}/{self.overload_retries})."),
                    turn_id,
                )
                await asyncio.sleep(delay)

    # -- the tool calls of one assistant message ------------------------------------------

    async def _run_tools(self, conversation: Conversation, calls: list[ToolUse], turn_id: int) -> None:
        """Run every call, read-only ones concurrently and the rest in order; answer all at once.

        Results go back in the model's call order, whatever order they finished in. On an
        interrupt the calls that did not finish are answered as interrupted, so the
        transcript stays valid, and the interrupt goes on up.
        """
        results: dict[str, ToolResult] = {}
        try:
            for batch in self._batches(calls):
                turn = self._turn if self._turn is not None else self._begin(turn_id)
                if len(batch) == 1:
                    await self._call(batch[0], turn, results)
                else:
                    await asyncio.gather(*(self._call(call, turn, results) for call in batch))
        finally:
            answers: list[ContentBlockParam] = []
            for call in calls:
                result = results.get(call.id) or ToolResult.text(INTERRUPTED_RESULT, is_error=True)
                answer: ToolResultBlockParam = tool_result(call.id, result.content, is_error=result.is_error)
                answers.append(answer)
            conversation.append(user_blocks(answers))

    def _batches(self, calls: list[ToolUse]) -> list[list[ToolUse]]:
        """Consecutive read-only calls in one batch (run concurrently); every other call alone."""
        batches: list[tuple[bool, list[ToolUse]]] = []
        for call in calls:
            tool = self.tools.lookup(call.name)
            read_only = tool is not None and tool.read_only
            if read_only and batches and batches[-1][0]:
                batches[-1][1].append(call)
            else:
                batches.append((read_only, [call]))
        return [batch for _, batch in batches]

    async def _checkpoint(self, tool: ToolDefinition, turn_id: int) -> None:
        """Before the turn's first call that can change files, the whole project is snapshotted (undo)."""
        store = self.deps.checkpoints
        if store is not None and not tool.access.read_only:
            await asyncio.to_thread(store.before_call, self.session_id, turn_id)

    def _without_secrets(self, result: ToolResult) -> ToolResult:
        """The result as the model, the cell and the transcript get it: every known secret's value, in any
        of its forms, replaced by a marker naming it. A result that cannot be checked is withheld."""
        try:
            (content, display), found = self.deps.secrets.redact_value([result.content, result.display])
        except Exception:  # noqa: BLE001 -- a check that fails keeps the result back, never lets it through
            return ToolResult.text("(This result was withheld: it could not be checked for secret values.)",
                                   is_error=True)
        return ToolResult(content, is_error=result.is_error, display=display) if found else result

    def _shown_input(self, tool_input: dict[str, Any], key: str | None) -> tuple[dict[str, Any], str | None]:
        """A call's input and key as the cell shows them (and the saved notebook keeps): without secret values."""
        try:
            (shown, shown_key), _ = self.deps.secrets.redact_value([tool_input, key])
        except Exception:  # noqa: BLE001 -- as in _without_secrets
            return {}, "(withheld: it could not be checked for secret values)"
        return shown, shown_key

    def _audit_no_change(self, tool: ToolDefinition, tool_input: dict[str, Any], ctx: ToolContext, why: str) -> None:
        """The audit row of a call that changed nothing (so ran without anyone's approval)."""
        from .approval.audit import clip_input
        from .approval.audit_records import DecisionRecord
        from .events import AuditRecorded

        typed = DecisionRecord(
            session_id=ctx.session_id, turn_id=ctx.turn_id, tool_use_id=ctx.tool_use_id, agent=ctx.agent,
            tool=tool.display_name or tool.name, input=clip_input(self._shown_input(tool_input, None)[0]),
            decision="allow", layer="no_change",
            rule=None, reason=why, by="no_change", mode=ctx.mode, outcome="ok",
        )
        log = getattr(self.approver, "audit", None)  # the pipeline's log (None where auditing is off)
        record = log.append(typed) if log is not None else typed.written(None)
        self.emit(AuditRecorded(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent, record=record))

    async def call_tool(self, name: str, tool_input: dict[str, Any], turn_id: int) -> ToolResult:
        """Run one call as if the model had made it (approval, hooks, events), outside the model's turn:
        a slash command's `!` lines run this way before the request is sent."""
        results: dict[str, ToolResult] = {}
        call_id = f"toolu_cmd_{secrets.token_hex(8)}"
        turn = self._turn if self._turn is not None and self._turn.turn_id == turn_id else self._begin(turn_id)
        await self._call(ToolUse(call_id, name, tool_input), turn, results)
        return results[call_id]

    async def _call(self, call: ToolUse, turn: AgentTurn, results: dict[str, ToolResult]) -> None:
        tool_use_id, name, raw_input, turn_id = call.id, call.name, call.input, turn.turn_id
        tool = self.tools.lookup(name)
        display = tool.display_name if tool else name
        key = tool.access.key_value(raw_input) if tool else None
        shown, shown_key = self._shown_input(raw_input, key)
        self._emit(ToolCallStarted(tool_use_id=tool_use_id, tool=display or name, input=shown, key=shown_key), turn_id)
        started = time.perf_counter()
        ctx = ToolContext(turn, tool_use_id)
        decision: Verdict | None = None
        status = "error"
        try:
            if tool is None:
                offered = ", ".join(t.name for t in self.tools.offered())
                result = ToolResult.text(f"Unknown tool '{name}'. Available tools: {offered}.", is_error=True)
            else:
                try:
                    args = tool.validate(raw_input)
                    if tool.precheck is not None:
                        await tool.precheck(args, ctx)
                    if tool.resolve_input is not None:
                        raw_input = await tool.resolve_input(args, ctx)
                        tool.validate(raw_input)
                except NoChange as nothing:
                    # Already as asked: done, not failed; nobody needs asking, and the audit says why.
                    result = ToolResult.text(str(nothing))
                    status = "ok"
                    self._audit_no_change(tool, raw_input, ctx, str(nothing))
                except ToolError as error:
                    # Not worth a person's attention: the call cannot run as written, or cannot succeed.
                    result = ToolResult.text(str(error), is_error=True)
                else:
                    tool_call = ToolCall(tool_use_id=tool_use_id, tool=tool, input=raw_input)
                    decision = await self.approver.decide(tool_call, ctx, self._asker())
                    if decision.kind == "deny":
                        status = "denied"
                        result = ToolResult.text(decision.reason or f"{display} was denied.", is_error=True)
                    else:
                        await self._checkpoint(tool, turn_id)
                        result = await tool.run(decision.input, ctx)
                        status = "error" if result.is_error else "ok"
                        result = await self._after_tool(tool, decision.input, result, ctx)
                    self.approver.record_outcome(
                        tool_call, ctx, decision, status, (time.perf_counter() - started) * 1000  # type: ignore[arg-type]
                    )
            result = self._without_secrets(result)
            results[tool_use_id] = result
            self._emit(
                ToolCallFinished(
                    tool_use_id=tool_use_id,
                    tool=display or name,
                    status=status,  # type: ignore[arg-type]
                    result=result.display or result.text_content,
                    duration_ms=(time.perf_counter() - started) * 1000,
                    images=_images(result),
                ),
                turn_id,
            )
        except asyncio.CancelledError:
            ctx.cancelled.set()
            duration = (time.perf_counter() - started) * 1000
            if decision is not None and tool is not None:
                self.approver.record_outcome(
                    ToolCall(tool_use_id=tool_use_id, tool=tool, input=raw_input), ctx, decision, "interrupted", duration
                )
            self._emit(
                ToolCallFinished(
                    tool_use_id=tool_use_id, tool=display or name, status="interrupted",
                    result=INTERRUPTED_RESULT, duration_ms=duration,
                ),
                turn_id,
            )
            raise

