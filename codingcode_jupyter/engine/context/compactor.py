"""Keeping what is sent to the model inside its context window.

Before each request the :class:`Compactor` estimates its size locally (characters / 4) and,
near the limit, confirms with the API's token counter. Over the trigger it shrinks the
conversation in stages, each only as far as needed:

1. old tool results (not the last few) become a one-line trace
   (``[tool result shortened: read_file src/x.py, 12,345 chars]``), and long string
   arguments of their tool calls likewise;
2. the model summarises the older turns (a separate request without tools) and
   ``[summary] + recent turns`` is sent instead;
3. as a last resort, any remaining oversized tool result is clipped to head and tail.

The person's own words are never cut: a request too long for the window on its own is refused
before anything is sent (:meth:`Compactor.refusal`), with its size and the limit.

The stages themselves are pure functions (:mod:`.transforms`); this module holds the policy:
when to compact, how far, and the summary request. The transcript keeps every message in
full: only what is sent shrinks.

The conversation is changed only when compaction happens, so consecutive steps otherwise
send a byte-identical prefix and read it from the prompt cache.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal

from pydantic import BaseModel

from ..agent import Conversation, with_cache_breakpoints
from ..events import Usage
from ..messages import MessageParam, blocks, text_block, user_text
from ..models.base import Model, ModelError, ModelRequest
from ..models.pricing import cost_usd
from ..transcript import CompactionRecord
from .transforms import (
    KeyOf,
    apply_compaction,
    clip,
    clip_all,
    clip_limit,
    is_prompt,
    is_shortened,
    json_chars,
    latest_prompt,
    long_texts,
    mechanical_summary,
    render,
    result_chars,
    shorten_args,
    shortened_trace,
    summarise_head,
    tool_uses,
)
from .window import CHARS_PER_TOKEN, context_window, request_chars

if TYPE_CHECKING:
    from ..tools.base import AgentRun

__all__ = ["Compactor", "CompactionReport"]

_SUMMARY_SYSTEM = (
    "You write the working notes of a coding session so that it can go on after the older "
    "messages are removed from the context. You are not talking to the person."
)
_SUMMARY_INSTRUCTIONS = """Summarise the conversation above so that you can continue the work from these notes alone.
Include, concisely and factually:
- what the person asked for, and their latest request and goal (quote it if it is short);
- decisions made and constraints the person stated;
- files read, created or changed (paths) and what matters about them;
- commands run and their outcomes, errors met and how they were handled;
- what is done and what remains to do next.
Write plain text or terse Markdown, at most about {words} words. Do not call tools."""







class CompactionReport(BaseModel):
    """What one compaction did, for a notice and for ``%agent compact``."""

    reason: Literal["auto", "forced", "overflow"]
    before_tokens: int
    after_tokens: int
    shortened: int = 0
    summarised_messages: int = 0
    summary_chars: int = 0
    clipped_to: int | None = None
    summary_failed: str | None = None

    def describe(self) -> str:
        """One line for the person."""
        parts = []
        if self.shortened:
            parts.append(f"{self.shortened} old tool result{'s' if self.shortened != 1 else ''} shortened")
        if self.summarised_messages:
            parts.append(f"{self.summarised_messages} older messages summarised")
        if self.clipped_to:
            parts.append(f"long tool results clipped to {self.clipped_to:,} characters")
        what = ", ".join(parts) or "nothing left to compact"
        text = f"Context compacted ({self.reason}): {what}; about {self.before_tokens:,} → {self.after_tokens:,} tokens."
        if self.summary_failed:
            text += f" The summary request failed ({self.summary_failed}); a plain list of the older steps was kept instead."
        return text


@dataclass
class Compactor:
    """Shrinks one conversation (in place) when what is sent nears the model's window.

    It is the loop's :class:`~..agent.ContextKeeper`: the loop calls :meth:`prepare` before
    each request and :meth:`on_overflow` when the API says the prompt is too long, passing the
    running agent (its model, its notices, its turn's usage). :meth:`compact` forces it.
    """

    conversation: Conversation
    # Reads the contextWindow setting as it is now (None: the table); CODINGCODE_CONTEXT_WINDOW beats both.
    window_setting: Callable[[], int | None] = lambda: None
    # Receives each compaction record, to be written to the transcript.
    record: Callable[[CompactionRecord], None] | None = None
    # Receives the summary request's usage when no turn is running to count it.
    on_usage: Callable[[Usage, float | None], None] | None = None
    model_factory: Callable[[str], Model] | None = None
    # The declared key argument of a call, for the one-line traces of shortened results.
    key_of: KeyOf | None = None
    # Told before each compaction: "manual" (%agent compact) or "auto" (the PreCompact hooks).
    before_compact: "Callable[[str, AgentRun | None], Awaitable[None]] | None" = None
    keep_recent_results: int = 3
    min_result_chars: int = 400
    arg_limit: int = 2_000
    # Fractions of the input budget (window minus the answer's room).
    near: float = 0.55  # above this the estimate is confirmed with count_tokens
    trigger: float = 0.70  # above this, compact
    target: float = 0.45  # compaction stops below this
    keep_tail: float = 0.25  # stage 2 keeps recent turns up to this
    summary_tokens: int = 2_048
    chars_per_token: float = CHARS_PER_TOKEN
    overhead_tokens: int = 0  # system + tools of the last request seen
    reports: list[CompactionReport] = field(default_factory=list)
    _models: dict[str, Model] = field(default_factory=dict, repr=False)
    _learned_window: dict[str, int] = field(default_factory=dict, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    _last_count: tuple[int, int] | None = field(default=None, repr=False)  # (request chars, exact tokens)

    # -- sizes ------------------------------------------------------------------------------

    def window(self, model: str) -> int:
        """The model's window: the table or overrides, lowered by what an overflow error taught."""
        size = context_window(model, self.window_setting())
        learned = self._learned_window.get(model)
        return min(size, learned) if learned else size

    def budget(self, model: str, max_tokens: int) -> tuple[int, int]:
        """(input budget, answer room): the window less room for the answer."""
        window = self.window(model)
        room = min(max_tokens, window // 4)
        return window - room, room

    def estimate(self, value: Any) -> int:
        chars = request_chars(value) if isinstance(value, ModelRequest) else json_chars(value)
        return int(chars / self.chars_per_token) + 1

    def _model(self, name: str, run: "AgentRun | None") -> Model:
        if run is not None and run.model.name == name:
            return run.model
        if name not in self._models:
            if self.model_factory is not None:
                self._models[name] = self.model_factory(name)
            else:
                from ..models import make_model

                self._models[name] = make_model(name)
        return self._models[name]

    async def measure(self, request: ModelRequest, budget: int, run: "AgentRun | None" = None) -> int:
        """Tokens of ``request``: the local estimate, confirmed by count_tokens near the limit."""
        chars = request_chars(request)
        estimate = int(chars / self.chars_per_token) + 1
        if estimate <= self.near * budget:
            return estimate
        if self._last_count is not None and chars >= self._last_count[0]:
            # The conversation only grew since the last exact count: count the growth locally
            # and ask the API again only when that projection reaches the trigger.
            projected = self._last_count[1] + int((chars - self._last_count[0]) / self.chars_per_token) + 1
            if projected <= self.trigger * budget:
                return projected
        try:
            exact = await self._model(request.model, run).count_tokens(request)
        except Exception:  # a counter that fails leaves the estimate standing
            exact = None
        if not exact:
            return estimate
        # Only ever grow more careful: a text that tokenises densely must not be underestimated next time.
        self.chars_per_token = min(self.chars_per_token, max(1.0, chars / exact))
        self._last_count = (chars, int(exact))
        return int(exact)

    # -- the hooks the loop calls ------------------------------------------------------------

    async def refusal(self, request: ModelRequest, run: "AgentRun | None" = None) -> str | None:
        """Why ``request`` (the system prompt, the tools and the new request alone) cannot be sent whole, or None.

        Compaction can summarise the earlier conversation to make room, but not shorten what the
        person just wrote: cutting it would answer a request nobody made.
        """
        budget, _ = self.budget(request.model, request.max_tokens)
        # The summary of the earlier conversation goes beside it.
        limit = budget - self.summary_tokens
        tokens = self.estimate(request)
        if tokens <= limit:
            return None
        try:
            exact = await self._model(request.model, run).count_tokens(request)
        except Exception:  # a counter that fails leaves the estimate standing
            exact = None
        tokens = int(exact) if exact else tokens
        if tokens <= limit:
            return None
        chars = sum(len(b.get("text", "")) for m in request.messages if m["role"] == "user"
                    for b in blocks(m) if b["type"] == "text")
        about = "" if exact else "about "
        return (f"This request is too long for the model's context window, so nothing was sent: it is {about}"
                f"{tokens:,} tokens ({chars:,} characters) with the instructions and tools, and {request.model} takes "
                f"{limit:,} tokens in one request ({self.window(request.model):,} in its window, less room for the "
                "answer and a summary of the conversation). The conversation is as it was. Send a shorter request, "
                "or save the text to a file and ask about it: the agent reads files in parts.")

    def _bound(self, request: ModelRequest) -> bool:
        # A prepare hook shared by mistake with another conversation (a sub-agent's) must not touch ours.
        return len(request.messages) == len(self.conversation.messages)

    def _rebuild(self, request: ModelRequest, room: int) -> ModelRequest:
        return request.model_copy(
            update={"messages": with_cache_breakpoints(self.conversation.messages), "max_tokens": min(request.max_tokens, room)}
        )

    async def prepare(self, request: ModelRequest, run: "AgentRun | None" = None) -> ModelRequest:
        """The request to send: unchanged while it fits, else rebuilt from the compacted conversation."""
        budget, room = self.budget(request.model, request.max_tokens)
        if request.max_tokens > room:
            request = request.model_copy(update={"max_tokens": room})
        if not self._bound(request):
            return request
        self.overhead_tokens = self.estimate(request.model_copy(update={"messages": []}))
        tokens = await self.measure(request, budget, run)
        if tokens <= self.trigger * budget:
            return request
        await self.compact(request.model, budget, reason="auto", before=tokens, run=run)
        return self._rebuild(request, room)

    async def on_overflow(self, request: ModelRequest, error: ModelError, run: "AgentRun | None" = None) -> ModelRequest | None:
        """After "prompt is too long": learn the real size and window, compact hard, retry."""
        if not self._bound(request):
            return None
        numbers = re.search(r"(\d[\d,]*)\s*tokens?\s*>\s*(\d[\d,]*)", str(error))
        if numbers:
            actual, maximum = (int(n.replace(",", "")) for n in numbers.groups())
            self._learned_window[request.model] = min(self.window(request.model), maximum)
            self.chars_per_token = min(self.chars_per_token, max(1.0, request_chars(request) / max(actual, 1)))
        budget, room = self.budget(request.model, request.max_tokens)
        # Our measure was wrong for this conversation, so aim well below it, not just under the budget.
        before = self.estimate(request)
        await self.compact(request.model, budget, reason="overflow", before=before, goal=before // 2, run=run)
        return self._rebuild(request, room)

    # -- compaction ----------------------------------------------------------------------------

    async def compact(
        self,
        model: str,
        budget: int | None = None,
        *,
        reason: Literal["auto", "forced", "overflow"] = "forced",
        before: int | None = None,
        goal: int | None = None,
        run: "AgentRun | None" = None,
    ) -> CompactionReport:
        """Shrink the conversation below ``goal`` (default: the target share of the budget).

        ``forced`` and ``overflow`` go through every stage whatever the size. ``run`` is the
        agent whose turn is running (None outside a turn): it is told, and its turn counts
        the summary's tokens.
        """
        if self.before_compact is not None:
            await self.before_compact("manual" if reason == "forced" else "auto", run)
        async with self._lock:
            return await self._compact(model, budget, reason, before, goal, run)

    async def _compact(
        self, model: str, budget: int | None, reason: str, before: int | None, goal: int | None,
        run: "AgentRun | None",
    ) -> CompactionReport:
        if budget is None:
            budget = self.budget(model, 8192)[0]
        messages = self.conversation.messages
        def size(msgs: list[MessageParam]) -> int:
            return self.overhead_tokens + int(json_chars(msgs) / self.chars_per_token) + 1

        goal = min(goal or budget, int(self.target * budget))
        hard = reason != "auto"
        start = size(messages)
        report = CompactionReport(reason=reason, before_tokens=before or start, after_tokens=start)  # type: ignore[arg-type]
        record = CompactionRecord(reason=reason, arg_limit=self.arg_limit)

        # Stage 1: old tool results become traces, oldest first, until under the goal.
        candidates = self._old_results(messages)
        chosen: list[str] = []
        current = start
        for tool_use_id, saving in candidates:
            if current <= goal and not hard:
                break
            chosen.append(tool_use_id)
            current -= saving
        if chosen:
            record.shortened = chosen
            messages = apply_compaction(messages, CompactionRecord(shortened=chosen, arg_limit=self.arg_limit), self.key_of)
            report.shortened = len(chosen)
            current = size(messages)

        # Stage 2: summarise the older turns.
        if current > goal or hard:
            drop = self._cut(messages, min(int(self.keep_tail * budget), goal // 2))
            if drop:
                summary, usage, failure = await self._summary(model, messages, drop, budget, run)
                self._count(model, usage, run)
                record.summary, record.drop = summary, drop
                messages = summarise_head(messages, drop, summary)
                report.summarised_messages, report.summary_chars = drop, len(summary)
                report.summary_failed = failure
                current = size(messages)

        # Stage 3: what is left is still too big (one huge recent result): clip long texts.
        if current > goal:
            excess_chars = int((current - goal) * self.chars_per_token)
            longest = sorted((len(t) for t in long_texts(messages)), reverse=True)
            limit = clip_limit(longest, excess_chars)
            if limit is not None:
                record.clip = limit
                messages = clip_all(messages, limit)
                report.clipped_to = limit
                current = size(messages)

        if record.changed:
            self.conversation.messages[:] = messages
            self._last_count = None
            if self.record is not None:
                self.record(record)
        report.after_tokens = current
        self.reports.append(report)
        if run is not None:
            run.notify(report.describe())
        return report

    def _old_results(self, messages: list[MessageParam]) -> list[tuple[str, int]]:
        """(tool_use_id, tokens saved) of results worth shortening, oldest first, the recent ones left out."""
        results = [
            b for m in messages if m["role"] == "user" for b in blocks(m) if b["type"] == "tool_result"
        ]
        recent = results[-self.keep_recent_results :] if self.keep_recent_results else []
        recent_ids = {b["tool_use_id"] for b in recent}
        uses = tool_uses(messages)
        out = []
        for block in results:
            if block["tool_use_id"] in recent_ids or is_shortened(block):
                continue
            use = uses.get(block["tool_use_id"])
            before = json_chars(block) + (json_chars(use) if use else 0)
            after = len(shortened_trace(use, block, self.key_of)) + 80
            if use:
                after += json_chars({**use, "input": shorten_args(use.get("input") or {}, self.arg_limit)})
            saving = int((before - after) / self.chars_per_token)
            if result_chars(block) >= self.min_result_chars or saving * self.chars_per_token >= self.min_result_chars:
                out.append((block["tool_use_id"], max(saving, 0)))
        return out

    def _cut(self, messages: list[MessageParam], keep_tokens: int) -> int:
        """Where recent turns start: a user message index >= 1 with the tail under ``keep_tokens``.

        A turn's first message is preferred; a cut inside a long turn is allowed (its dropped
        tool results go with their calls). 0 means there is nothing older to summarise.
        """
        tails: list[tuple[int, int]] = []
        total = 0
        for index in range(len(messages) - 1, 0, -1):
            total += int(json_chars(messages[index]) / self.chars_per_token)
            if messages[index]["role"] == "user":
                tails.append((index, total))
        if not tails:
            return 0
        fitting = [i for i, t in tails if t <= keep_tokens]
        prompts = [i for i in fitting if is_prompt(messages[i])]
        if prompts:
            return min(prompts)
        if fitting:
            return min(fitting)
        return max(i for i, _ in tails)  # keep only the last exchange; stage 3 clips it

    async def _summary(
        self, model: str, messages: list[MessageParam], drop: int, budget: int, run: "AgentRun | None"
    ) -> tuple[str, Usage, str | None]:
        older = messages[:drop]
        words = max(150, min(1_200, self.summary_tokens * 3 // 5))
        latest = latest_prompt(messages)
        verbatim = ""
        if latest is not None and latest[0] < drop:
            verbatim = f"\n\nThe person's latest request, verbatim:\n{clip(latest[1], 4_000)}"
        limit_chars = int(self.summary_tokens * self.chars_per_token * 1.5)
        if model == "demo":
            return mechanical_summary(older, limit_chars, self.key_of) + verbatim, Usage(), None
        room = int((budget * self.target - self.summary_tokens) * self.chars_per_token)
        text = render(older, max(4_000, room))
        request = ModelRequest(
            model=model,
            system=[text_block(_SUMMARY_SYSTEM)],
            messages=[user_text(f"<conversation>\n{text}\n</conversation>\n\n" + _SUMMARY_INSTRUCTIONS.format(words=words))],
            max_tokens=self.summary_tokens,
        )
        try:
            response = await self._model(model, run).stream(request, lambda _delta: None)
        except ModelError as error:
            return mechanical_summary(older, limit_chars, self.key_of) + verbatim, Usage(), str(error)
        summary = "".join(b.get("text", "") for b in response.content if b["type"] == "text").strip()
        if not summary:
            return mechanical_summary(older, limit_chars, self.key_of) + verbatim, response.usage, "the model answered with no text"
        return clip(summary, limit_chars) + verbatim, response.usage, None

    def _count(self, model: str, usage: Usage, run: "AgentRun | None") -> None:
        if usage == Usage():
            return
        cost = cost_usd(model, usage)
        if run is not None:
            run.add_usage(usage, cost)
        elif self.on_usage is not None:
            self.on_usage(usage, cost)
