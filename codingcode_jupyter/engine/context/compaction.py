"""Keeping what is sent to the model inside its context window.

Before each request the :class:`Compactor` estimates its size locally (characters / 4) and,
near the limit, confirms with the API's token counter. Over the trigger it shrinks the
conversation in stages, each only as far as needed:

1. old tool results (not the last few) become a one-line trace
   (``[tool result shortened: read_file src/x.py, 12,345 chars]``), and long string
   arguments of their tool calls likewise;
2. the model summarises the older turns (a separate request without tools) and
   ``[summary] + recent turns`` is sent instead;
3. as a last resort, any remaining oversized text is clipped to head and tail.

Every stage is a pure function of the messages and a small record (:func:`apply_compaction`);
the record goes into the session transcript, so a resumed session rebuilds the same
compacted conversation instead of summarising again. The transcript itself keeps every
message in full: only what is sent shrinks.

The conversation is changed only when compaction happens, so consecutive steps otherwise
send a byte-identical prefix and read it from the prompt cache.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from pydantic import BaseModel

from ..agent import Conversation, running_loop, with_cache_breakpoints
from ..events import Usage
from ..models.base import Model, ModelError, ModelRequest
from ..models.pricing import cost_usd
from .window import CHARS_PER_TOKEN, context_window, request_chars

__all__ = [
    "Compactor",
    "ContextStatus",
    "attach_compactor",
    "compact",
    "context_status",
    "CompactionReport",
    "apply_compaction",
    "shortened_trace",
    "SUMMARY_HEADER",
    "TRACE_PREFIX",
]

TRACE_PREFIX = "[tool result shortened: "
SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted to fit the context window]"
CLIP_MARK = "\n[... {cut:,} characters cut to fit the context window ...]\n"
_ARG_MARK = "[shortened: {n:,} chars]"
# Arguments that say what a call was about, in the order a trace prefers them.
_KEY_ARGS = ("path", "file_path", "command", "pattern", "query", "url", "name", "description")

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


# -- pure functions over messages ---------------------------------------------------------


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _block_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def _result_chars(block: dict[str, Any]) -> int:
    """Characters of a result as the person would count them: text length, JSON size for images."""
    content = block.get("content")
    if isinstance(content, str):
        return len(content)
    return sum(
        len(c["text"]) if c.get("type") == "text" and isinstance(c.get("text"), str) else len(json.dumps(c, ensure_ascii=True))
        for c in content or []
        if isinstance(c, dict)
    )


def _is_shortened(block: dict[str, Any]) -> bool:
    return _block_text(block).startswith(TRACE_PREFIX)


def _one_line(value: str, limit: int = 80) -> str:
    line = " ".join(value.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def shortened_trace(use: dict[str, Any] | None, result: dict[str, Any]) -> str:
    """The one line that replaces a tool result: which tool, on what, how big it was."""
    what = "unknown tool"
    if use is not None:
        what = str(use.get("name", "tool"))
        args = use.get("input") or {}
        key = next((k for k in _KEY_ARGS if isinstance(args.get(k), str) and args[k]), None)
        if key is None:
            key = next((k for k, v in args.items() if isinstance(v, str) and v), None)
        if key is not None:
            what += " " + _one_line(args[key])
    error = ", error" if result.get("is_error") else ""
    return f"{TRACE_PREFIX}{what}, {_result_chars(result):,} chars{error}]"


def _tool_uses(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        b["id"]: b for m in messages if m["role"] == "assistant" for b in _blocks(m) if b.get("type") == "tool_use"
    }


def _shorten_args(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return _ARG_MARK.format(n=len(value))
    if isinstance(value, dict):
        return {k: _shorten_args(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten_args(v, limit) for v in value]
    return value


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = max(0, limit - head)
    return text[:head] + CLIP_MARK.format(cut=len(text) - head - tail) + (text[-tail:] if tail else "")


def _shorten(messages: list[dict[str, Any]], ids: set[str], arg_limit: int) -> list[dict[str, Any]]:
    uses = _tool_uses(messages)
    out = []
    for message in messages:
        blocks = _blocks(message)
        if not any(b.get("tool_use_id") in ids or b.get("id") in ids for b in blocks):
            out.append(message)
            continue
        new_blocks = []
        for block in blocks:
            if block.get("type") == "tool_result" and block.get("tool_use_id") in ids and not _is_shortened(block):
                short = {"type": "tool_result", "tool_use_id": block["tool_use_id"],
                         "content": [{"type": "text", "text": shortened_trace(uses.get(block["tool_use_id"]), block)}]}
                if block.get("is_error"):
                    short["is_error"] = True
                new_blocks.append(short)
            elif block.get("type") == "tool_use" and block.get("id") in ids:
                new_blocks.append({**block, "input": _shorten_args(block.get("input") or {}, arg_limit)})
            else:
                new_blocks.append(block)
        out.append({**message, "content": new_blocks})
    return out


def _summarise_head(messages: list[dict[str, Any]], drop: int, summary: str) -> list[dict[str, Any]]:
    """``[summary] + messages[drop:]``, with tool results whose call was dropped removed."""
    tail = messages[drop:]
    kept_uses = set(_tool_uses(tail))
    first: list[dict[str, Any]] = [{"type": "text", "text": f"{SUMMARY_HEADER}\n\n{summary}"}]
    out: list[dict[str, Any]] = [{"role": "user", "content": first}]
    for index, message in enumerate(tail):
        blocks = [
            b for b in _blocks(message)
            if not (b.get("type") == "tool_result" and b.get("tool_use_id") not in kept_uses)
        ]
        if index == 0 and message["role"] == "user":
            # A user message after the summary joins it: the API wants roles to alternate.
            first.extend(blocks)
            continue
        if blocks:
            out.append({**message, "content": blocks})
    return out


def _clip_all(messages: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        blocks = []
        for block in _blocks(message):
            if block.get("type") == "tool_result" and not isinstance(block.get("content"), str):
                content = [
                    {**c, "text": _clip(c["text"], limit)} if c.get("type") == "text" and isinstance(c.get("text"), str) else c
                    for c in block.get("content") or []
                ]
                block = {**block, "content": content}
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                block = {**block, "content": _clip(block["content"], limit)}
            elif block.get("type") == "text" and message["role"] == "user":
                block = {**block, "text": _clip(block["text"], limit)}
            elif block.get("type") == "tool_use":
                block = {**block, "input": _shorten_args(block.get("input") or {}, limit)}
            blocks.append(block)
        out.append({**message, "content": blocks})
    return out


def apply_compaction(messages: list[dict[str, Any]], record: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages after one compaction record; the same function runs live and on resume."""
    out = messages
    if record.get("shortened"):
        out = _shorten(out, set(record["shortened"]), int(record.get("arg_limit", 2000)))
    if record.get("summary") is not None and record.get("drop"):
        out = _summarise_head(out, int(record["drop"]), str(record["summary"]))
    if record.get("clip"):
        out = _clip_all(out, int(record["clip"]))
    return out


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=True, separators=(",", ":")))


def _is_prompt(message: dict[str, Any]) -> bool:
    """A user message that starts a turn (has text of its own, not only tool results)."""
    return message["role"] == "user" and any(
        b.get("type") == "text" and not b.get("text", "").startswith(SUMMARY_HEADER) for b in _blocks(message)
    )


def _render(messages: list[dict[str, Any]], budget_chars: int, result_chars: int = 2_000) -> str:
    """The older turns as plain text for the summary request, capped at ``budget_chars``.

    Plain text, not message blocks: the request then needs no tool definitions and cannot
    be rejected for a tool_use without its result. When even this is too long, the oldest
    entries go (a previous summary, which opens the conversation, is kept).
    """
    entries: list[str] = []
    for message in messages:
        for block in _blocks(message):
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                who = "Person" if message["role"] == "user" else "Assistant"
                text = block["text"]
                if text.startswith(SUMMARY_HEADER):
                    entries.append(f"[Earlier summary]\n{_clip(text[len(SUMMARY_HEADER):].strip(), budget_chars // 3)}")
                else:
                    entries.append(f"{who}: {_clip(text, 8_000)}")
            elif kind == "tool_use":
                args = json.dumps(_shorten_args(block.get("input") or {}, 300), ensure_ascii=False)
                entries.append(f"Tool call {block.get('name')}: {_clip(args, 1_000)}")
            elif kind == "tool_result":
                flag = " (error)" if block.get("is_error") else ""
                entries.append(f"Tool result{flag}: {_clip(_block_text(block), result_chars)}")
    keep_first = 1 if entries and entries[0].startswith("[Earlier summary]") else 0
    total = sum(len(e) + 2 for e in entries)
    omitted = 0
    while total > budget_chars and len(entries) > keep_first + 1:
        total -= len(entries[keep_first]) + 2
        del entries[keep_first]
        omitted += 1
    if omitted:
        entries.insert(keep_first, f"[... {omitted} older entries omitted ...]")
    return "\n\n".join(entries)


def _mechanical_summary(messages: list[dict[str, Any]], limit: int) -> str:
    """A summary made without a model (demo model, or the summary request failed)."""
    lines = []
    for message in messages:
        for block in _blocks(message):
            if block.get("type") == "text" and message["role"] == "user":
                text = block.get("text", "")
                if text.startswith(SUMMARY_HEADER):
                    lines.append(_clip(text[len(SUMMARY_HEADER):].strip(), limit // 2))
                else:
                    lines.append("Person asked: " + _one_line(text, 300))
            elif block.get("type") == "tool_use":
                lines.append(shortened_trace(block, {"content": ""}).replace(TRACE_PREFIX, "[tool call: ").replace(", 0 chars]", "]"))
    return _clip("\n".join(lines), limit)


# -- the compactor --------------------------------------------------------------------------


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
            parts.append(f"long texts clipped to {self.clipped_to:,} characters")
        what = ", ".join(parts) or "nothing left to compact"
        text = f"Context compacted ({self.reason}): {what}; about {self.before_tokens:,} → {self.after_tokens:,} tokens."
        if self.summary_failed:
            text += f" The summary request failed ({self.summary_failed}); a plain list of the older steps was kept instead."
        return text


@dataclass
class Compactor:
    """Shrinks one conversation (in place) when what is sent nears the model's window.

    Plug :meth:`prepare` into ``AgentLoop.prepare`` and :meth:`on_overflow` into
    ``AgentLoop.on_overflow`` (``Session`` passes both); call :meth:`compact` to force it.
    """

    conversation: Conversation
    # The contextWindow setting (None: the table); CODINGCODE_CONTEXT_WINDOW beats both.
    window_setting: int | None = None
    # Receives each compaction record, to be written to the transcript.
    record: Callable[[dict[str, Any]], None] | None = None
    # Receives the summary request's usage when no turn is running to count it.
    on_usage: Callable[[Usage, float | None], None] | None = None
    model_factory: Callable[[str], Model] | None = None
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
        size = context_window(model, self.window_setting)
        learned = self._learned_window.get(model)
        return min(size, learned) if learned else size

    def budget(self, model: str, max_tokens: int) -> tuple[int, int]:
        """(input budget, answer room): the window less room for the answer."""
        window = self.window(model)
        room = min(max_tokens, window // 4)
        return window - room, room

    def estimate(self, value: Any) -> int:
        chars = request_chars(value) if isinstance(value, ModelRequest) else _chars(value)
        return int(chars / self.chars_per_token) + 1

    def _model(self, name: str) -> Model:
        loop = running_loop()
        if loop is not None and loop.model.name == name:
            return loop.model
        if name not in self._models:
            if self.model_factory is not None:
                self._models[name] = self.model_factory(name)
            else:
                from ..models import make_model

                self._models[name] = make_model(name)
        return self._models[name]

    async def measure(self, request: ModelRequest, budget: int) -> int:
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
            exact = await self._model(request.model).count_tokens(request)
        except Exception:  # a counter that fails leaves the estimate standing
            exact = None
        if not exact:
            return estimate
        # Only ever grow more careful: a text that tokenises densely must not be underestimated next time.
        self.chars_per_token = min(self.chars_per_token, max(1.0, chars / exact))
        self._last_count = (chars, int(exact))
        return int(exact)

    # -- the hooks the loop calls ------------------------------------------------------------

    def _bound(self, request: ModelRequest) -> bool:
        # A prepare hook shared by mistake with another conversation (a sub-agent's) must not touch ours.
        return len(request.messages) == len(self.conversation.messages)

    def _rebuild(self, request: ModelRequest, room: int) -> ModelRequest:
        return request.model_copy(
            update={"messages": with_cache_breakpoints(self.conversation.messages), "max_tokens": min(request.max_tokens, room)}
        )

    async def prepare(self, request: ModelRequest) -> ModelRequest:
        """The request to send: unchanged while it fits, else rebuilt from the compacted conversation."""
        budget, room = self.budget(request.model, request.max_tokens)
        if request.max_tokens > room:
            request = request.model_copy(update={"max_tokens": room})
        if not self._bound(request):
            return request
        self.overhead_tokens = self.estimate(request.model_copy(update={"messages": []}))
        tokens = await self.measure(request, budget)
        if tokens <= self.trigger * budget:
            return request
        await self.compact(request.model, budget, reason="auto", before=tokens)
        return self._rebuild(request, room)

    async def on_overflow(self, request: ModelRequest, error: ModelError) -> ModelRequest | None:
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
        await self.compact(request.model, budget, reason="overflow", before=before, goal=before // 2)
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
    ) -> CompactionReport:
        """Shrink the conversation below ``goal`` (default: the target share of the budget).

        ``forced`` and ``overflow`` go through every stage whatever the size.
        """
        async with self._lock:
            return await self._compact(model, budget, reason, before, goal)

    async def _compact(
        self, model: str, budget: int | None, reason: str, before: int | None, goal: int | None
    ) -> CompactionReport:
        if budget is None:
            budget = self.budget(model, 8192)[0]
        messages = self.conversation.messages
        size = lambda msgs: self.overhead_tokens + int(_chars(msgs) / self.chars_per_token) + 1  # noqa: E731
        goal = min(goal or budget, int(self.target * budget))
        hard = reason != "auto"
        start = size(messages)
        report = CompactionReport(reason=reason, before_tokens=before or start, after_tokens=start)  # type: ignore[arg-type]
        record: dict[str, Any] = {"type": "compaction", "reason": reason, "arg_limit": self.arg_limit}

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
            record["shortened"] = chosen
            messages = apply_compaction(messages, {"shortened": chosen, "arg_limit": self.arg_limit})
            report.shortened = len(chosen)
            current = size(messages)

        # Stage 2: summarise the older turns.
        if current > goal or hard:
            drop = self._cut(messages, min(int(self.keep_tail * budget), goal // 2))
            if drop:
                summary, usage, failure = await self._summary(model, messages, drop, budget)
                self._count(model, usage)
                record["summary"], record["drop"] = summary, drop
                messages = _summarise_head(messages, drop, summary)
                report.summarised_messages, report.summary_chars = drop, len(summary)
                report.summary_failed = failure
                current = size(messages)

        # Stage 3: what is left is still too big (one huge recent result): clip long texts.
        if current > goal:
            excess_chars = int((current - goal) * self.chars_per_token)
            longest = sorted((len(t) for t in _long_texts(messages)), reverse=True)
            limit = _clip_limit(longest, excess_chars)
            if limit is not None:
                record["clip"] = limit
                messages = _clip_all(messages, limit)
                report.clipped_to = limit
                current = size(messages)

        if len(record) > 3:
            self.conversation.messages[:] = messages
            self._last_count = None
            if self.record is not None:
                self.record(record)
        report.after_tokens = current
        self.reports.append(report)
        loop = running_loop()
        if loop is not None:
            loop.notify(report.describe())
        return report

    def _old_results(self, messages: list[dict[str, Any]]) -> list[tuple[str, int]]:
        """(tool_use_id, tokens saved) of results worth shortening, oldest first, the recent ones left out."""
        results = [
            b for m in messages if m["role"] == "user" for b in _blocks(m) if b.get("type") == "tool_result"
        ]
        recent = results[-self.keep_recent_results :] if self.keep_recent_results else []
        recent_ids = {b["tool_use_id"] for b in recent}
        uses = _tool_uses(messages)
        out = []
        for block in results:
            if block["tool_use_id"] in recent_ids or _is_shortened(block):
                continue
            use = uses.get(block["tool_use_id"])
            before = _chars(block) + (_chars(use) if use else 0)
            after = len(shortened_trace(use, block)) + 80
            if use:
                after += _chars({**use, "input": _shorten_args(use.get("input") or {}, self.arg_limit)})
            saving = int((before - after) / self.chars_per_token)
            if _result_chars(block) >= self.min_result_chars or saving * self.chars_per_token >= self.min_result_chars:
                out.append((block["tool_use_id"], max(saving, 0)))
        return out

    def _cut(self, messages: list[dict[str, Any]], keep_tokens: int) -> int:
        """Where recent turns start: a user message index >= 1 with the tail under ``keep_tokens``.

        A turn's first message is preferred; a cut inside a long turn is allowed (its dropped
        tool results go with their calls). 0 means there is nothing older to summarise.
        """
        tails: list[tuple[int, int]] = []
        total = 0
        for index in range(len(messages) - 1, 0, -1):
            total += int(_chars(messages[index]) / self.chars_per_token)
            if messages[index]["role"] == "user":
                tails.append((index, total))
        if not tails:
            return 0
        fitting = [i for i, t in tails if t <= keep_tokens]
        prompts = [i for i in fitting if _is_prompt(messages[i])]
        if prompts:
            return min(prompts)
        if fitting:
            return min(fitting)
        return max(i for i, _ in tails)  # keep only the last exchange; stage 3 clips it

    async def _summary(
        self, model: str, messages: list[dict[str, Any]], drop: int, budget: int
    ) -> tuple[str, Usage, str | None]:
        older = messages[:drop]
        words = max(150, min(1_200, self.summary_tokens * 3 // 5))
        latest = _latest_prompt(messages)
        verbatim = ""
        if latest is not None and latest[0] < drop:
            verbatim = f"\n\nThe person's latest request, verbatim:\n{_clip(latest[1], 4_000)}"
        limit_chars = int(self.summary_tokens * self.chars_per_token * 1.5)
        if model == "demo":
            return _mechanical_summary(older, limit_chars) + verbatim, Usage(), None
        room = int((budget * self.target - self.summary_tokens) * self.chars_per_token)
        text = _render(older, max(4_000, room))
        request = ModelRequest(
            model=model,
            system=[{"type": "text", "text": _SUMMARY_SYSTEM}],
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"<conversation>\n{text}\n</conversation>\n\n" + _SUMMARY_INSTRUCTIONS.format(words=words)}
                    ],
                }
            ],
            max_tokens=self.summary_tokens,
        )
        try:
            response = await self._model(model).stream(request, lambda _delta: None)
        except ModelError as error:
            return _mechanical_summary(older, limit_chars) + verbatim, Usage(), str(error)
        summary = "".join(b.get("text", "") for b in response.content if b.get("type") == "text").strip()
        if not summary:
            return _mechanical_summary(older, limit_chars) + verbatim, response.usage, "the model answered with no text"
        return _clip(summary, limit_chars) + verbatim, response.usage, None

    def _count(self, model: str, usage: Usage) -> None:
        if usage == Usage():
            return
        cost = cost_usd(model, usage)
        loop = running_loop()
        if loop is not None:
            loop.add_usage(usage, cost)
        elif self.on_usage is not None:
            self.on_usage(usage, cost)


def _latest_prompt(messages: list[dict[str, Any]]) -> tuple[int, str] | None:
    for index in range(len(messages) - 1, -1, -1):
        if _is_prompt(messages[index]):
            texts = [
                b["text"] for b in _blocks(messages[index])
                if b.get("type") == "text" and not b.get("text", "").startswith(SUMMARY_HEADER)
            ]
            return index, "\n".join(texts)
    return None


def _long_texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for message in messages:
        for block in _blocks(message):
            if block.get("type") == "tool_result":
                out.append(_block_text(block))
            elif block.get("type") == "text" and message["role"] == "user" and not block.get("text", "").startswith(SUMMARY_HEADER):
                out.append(block.get("text", ""))
    return out


def _clip_limit(lengths: list[int], excess: int) -> int | None:
    """The largest per-text limit that removes at least ``excess`` characters, or None."""
    if excess <= 0 or not lengths:
        return None
    floor = 1_000
    for limit in sorted(set(lengths + [floor]), reverse=True):
        if limit < floor:
            break
        removed = sum(max(0, n - limit) for n in lengths)
        if removed >= excess:
            # Between this length and the next: find the exact limit (removed grows linearly).
            over = [n for n in lengths if n > limit]
            extra = removed - excess
            return limit + extra // max(1, len(over)) if over else limit
    return floor


# -- sessions --------------------------------------------------------------------------------


def attach_compactor(session: Any, window_setting: int | None = None) -> Compactor:
    """Give a ``Session`` a compactor: its prepare and on_overflow hooks, and ``services["compactor"]``."""
    compactor = Compactor(
        conversation=session.conversation,
        window_setting=window_setting,
        record=session.transcript.write,
        on_usage=lambda usage, cost: session.add_usage(usage, cost, reason="compaction"),
    )
    session.prepare = compactor.prepare
    session.on_overflow = compactor.on_overflow
    session.services["compactor"] = compactor
    return compactor


def _session_model(session: Any) -> str:
    if session.last_model:
        return session.last_model
    from ..models import resolve_model_name

    return resolve_model_name(session.model_name)[0]


async def compact(session: Any, force: bool = True) -> CompactionReport:
    """Compact a session's conversation now (``%agent compact``); without ``force`` only when over the trigger."""
    compactor = session.services.get("compactor")
    if not isinstance(compactor, Compactor):
        settings = session.services.get("settings")
        compactor = attach_compactor(session, getattr(settings, "contextWindow", None))
    model = _session_model(session)
    budget = compactor.budget(model, 8192)[0]
    if not force:
        tokens = compactor.overhead_tokens + compactor.estimate(session.conversation.messages)
        if tokens <= compactor.trigger * budget:
            return CompactionReport(reason="auto", before_tokens=tokens, after_tokens=tokens)
    return await compactor.compact(model, budget, reason="forced" if force else "auto")


class ContextStatus(BaseModel):
    """How full the context is, for ``%agent status``."""

    model: str
    window: int
    tokens: int  # estimated tokens of what the next request sends (system and tools of the last one included)
    compactions: int

    @property
    def percent(self) -> float:
        return 100.0 * self.tokens / self.window if self.window else 0.0

    def describe(self) -> str:
        """One line for the person."""
        text = f"context: about {self.tokens:,} of {self.window:,} tokens ({self.percent:.0f}%)"
        if self.compactions:
            text += f", compacted {self.compactions}×"
        return text


def context_status(session: Any) -> ContextStatus:
    """The context gauge of a session; a local estimate, no request is made."""
    compactor = session.services.get("compactor")
    settings = session.services.get("settings")
    model = _session_model(session)
    if isinstance(compactor, Compactor):
        window = compactor.window(model)
        tokens = compactor.overhead_tokens + compactor.estimate(session.conversation.messages)
        count = len(compactor.reports)
    else:
        window = context_window(model, getattr(settings, "contextWindow", None))
        tokens = int(_chars(session.conversation.messages) / CHARS_PER_TOKEN) + 1
        count = 0
    return ContextStatus(model=model, window=window, tokens=tokens, compactions=count)
