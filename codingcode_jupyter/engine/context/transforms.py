"""Compaction's pure functions over messages: each stage, and the record that replays it.

Every stage is a pure function of the messages and a small record (:func:`apply_compaction`);
the record goes into the session transcript, so a resumed session rebuilds the same
compacted conversation instead of summarising again.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, cast

from ..messages import (
    ContentBlockParam,
    MessageParam,
    ResultPartParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
    blocks,
    result_parts,
    result_text,
    text_block,
    tool_result,
    user_blocks,
)
from ..transcript import CompactionRecord

if TYPE_CHECKING:
    from ..agent import ToolSource

__all__ = [
    "KeyOf",
    "key_of_tools",
    "SUMMARY_HEADER",
    "TRACE_PREFIX",
    "apply_compaction",
    "shortened_trace",
]

# The argument that says what a call was about, as its tool declares it: (tool name, input) -> text.
KeyOf = Callable[[str, dict[str, Any]], "str | None"]


def key_of_tools(tools: "ToolSource") -> KeyOf:
    """The key argument of a call, read from the declaration of the tool ``tools`` offers by that name."""

    def key_of(name: str, tool_input: dict[str, Any]) -> str | None:
        tool = tools.lookup(name)
        return tool.access.key_value(tool_input) if tool is not None else None

    return key_of

TRACE_PREFIX = "[tool result shortened: "
SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted to fit the context window]"
CLIP_MARK = "\n[... {cut:,} characters cut to fit the context window ...]\n"
_ARG_MARK = "[shortened: {n:,} chars]"

def result_chars(block: ToolResultBlockParam) -> int:
    """Characters of a result as the person would count them: text length, JSON size for images."""
    content = block.get("content")
    if isinstance(content, str):
        return len(content)
    return sum(
        len(c["text"]) if c["type"] == "text" and isinstance(c.get("text"), str) else len(json.dumps(c, ensure_ascii=True))
        for c in result_parts(block)
    )


def is_shortened(block: ToolResultBlockParam) -> bool:
    return result_text(block).startswith(TRACE_PREFIX)


def one_line(value: str, limit: int = 80) -> str:
    line = " ".join(value.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def shortened_trace(use: ToolUseBlockParam | None, result: ToolResultBlockParam, key_of: KeyOf | None = None) -> str:
    """The one line that replaces a tool result: which tool, on what, how big it was.

    "On what" is the tool's declared key argument; for a tool no longer known, its first
    string argument.
    """
    what = "unknown tool"
    if use is not None:
        what = str(use.get("name", "tool"))
        args = dict(use.get("input") or {})
        key = key_of(what, args) if key_of is not None else None
        if key is None:
            key = next((v for v in args.values() if isinstance(v, str) and v), None)
        if key:
            what += " " + one_line(key)
    error = ", error" if result.get("is_error") else ""
    return f"{TRACE_PREFIX}{what}, {result_chars(result):,} chars{error}]"


def tool_uses(messages: list[MessageParam]) -> dict[str, ToolUseBlockParam]:
    return {
        b["id"]: b for m in messages if m["role"] == "assistant" for b in blocks(m) if b["type"] == "tool_use"
    }


def shorten_args(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return _ARG_MARK.format(n=len(value))
    if isinstance(value, dict):
        return {k: shorten_args(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten_args(v, limit) for v in value]
    return value


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = max(0, limit - head)
    return text[:head] + CLIP_MARK.format(cut=len(text) - head - tail) + (text[-tail:] if tail else "")


def _call_id(block: ContentBlockParam) -> str | None:
    """The tool call a block is about: a tool_use's id, a tool_result's tool_use_id (None for other blocks)."""
    if block["type"] == "tool_result":
        return block["tool_use_id"]
    if block["type"] == "tool_use":
        return block["id"]
    return None


def _with_content(message: MessageParam, content: list[ContentBlockParam]) -> MessageParam:
    """A copy of ``message`` (every key it has) with this content."""
    return cast(MessageParam, {**message, "content": content})


def shorten(messages: list[MessageParam], ids: set[str], arg_limit: int, key_of: KeyOf | None = None) -> list[MessageParam]:
    uses = tool_uses(messages)
    out = []
    for message in messages:
        old_blocks = blocks(message)
        if not any(_call_id(b) in ids for b in old_blocks):
            out.append(message)
            continue
        new_blocks: list[ContentBlockParam] = []
        for block in old_blocks:
            if block["type"] == "tool_result" and block["tool_use_id"] in ids and not is_shortened(block):
                trace: list[ResultPartParam] = [text_block(shortened_trace(uses.get(block["tool_use_id"]), block, key_of))]
                new_blocks.append(tool_result(block["tool_use_id"], trace, is_error=bool(block.get("is_error"))))
            elif block["type"] == "tool_use" and block["id"] in ids:
                new_blocks.append({**block, "input": shorten_args(block.get("input") or {}, arg_limit)})
            else:
                new_blocks.append(block)
        out.append(_with_content(message, new_blocks))
    return out


def summarise_head(messages: list[MessageParam], drop: int, summary: str) -> list[MessageParam]:
    """``[summary] + messages[drop:]``, with tool results whose call was dropped removed."""
    tail = messages[drop:]
    kept_uses = set(tool_uses(tail))
    first: list[ContentBlockParam] = [text_block(f"{SUMMARY_HEADER}\n\n{summary}")]
    out: list[MessageParam] = [user_blocks(first)]
    for index, message in enumerate(tail):
        kept = [
            b for b in blocks(message)
            if not (b["type"] == "tool_result" and b["tool_use_id"] not in kept_uses)
        ]
        if index == 0 and message["role"] == "user":
            # A user message after the summary joins it: the API wants roles to alternate.
            first.extend(kept)
            continue
        if kept:
            out.append(_with_content(message, kept))
    return out


def _clipped_part(part: ResultPartParam, limit: int) -> ResultPartParam:
    if part["type"] == "text" and isinstance(part.get("text"), str):
        return {**part, "text": clip(part["text"], limit)}
    return part


def clip_all(messages: list[MessageParam], limit: int) -> list[MessageParam]:
    """Tool results and call arguments cut to ``limit`` characters; what the person wrote is left whole."""
    out = []
    for message in messages:
        clipped: list[ContentBlockParam] = []
        for block in blocks(message):
            if block["type"] == "tool_result" and not isinstance(block.get("content"), str):
                block = {**block, "content": [_clipped_part(c, limit) for c in result_parts(block)]}
            elif block["type"] == "tool_result" and isinstance(block.get("content"), str):
                block = {**block, "content": clip(result_text(block), limit)}
            elif block["type"] == "tool_use":
                block = {**block, "input": shorten_args(block.get("input") or {}, limit)}
            clipped.append(block)
        out.append(_with_content(message, clipped))
    return out


def apply_compaction(messages: list[MessageParam], record: CompactionRecord,
                     key_of: KeyOf | None = None) -> list[MessageParam]:
    """The messages after one compaction record; the same function runs live and on resume."""
    out = messages
    if record.shortened:
        out = shorten(out, set(record.shortened), record.arg_limit, key_of)
    if record.summary is not None and record.drop:
        out = summarise_head(out, record.drop, record.summary)
    if record.clip:
        out = clip_all(out, record.clip)
    return out


def json_chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=True, separators=(",", ":")))


def is_prompt(message: MessageParam) -> bool:
    """A user message that starts a turn (has text of its own, not only tool results)."""
    return message["role"] == "user" and any(
        b["type"] == "text" and not b.get("text", "").startswith(SUMMARY_HEADER) for b in blocks(message)
    )


def render(messages: list[MessageParam], budget_chars: int, result_chars: int = 2_000) -> str:
    """The older turns as plain text for the summary request, capped at ``budget_chars``.

    Plain text, not message blocks: the request then needs no tool definitions and cannot
    be rejected for a tool_use without its result. When even this is too long, the oldest
    entries go (a previous summary, which opens the conversation, is kept).
    """
    entries: list[str] = []
    for message in messages:
        for block in blocks(message):
            if block["type"] == "text" and block.get("text"):
                who = "Person" if message["role"] == "user" else "Assistant"
                text = block["text"]
                if text.startswith(SUMMARY_HEADER):
                    entries.append(f"[Earlier summary]\n{clip(text[len(SUMMARY_HEADER):].strip(), budget_chars // 3)}")
                else:
                    entries.append(f"{who}: {clip(text, 8_000)}")
            elif block["type"] == "tool_use":
                args = json.dumps(shorten_args(block.get("input") or {}, 300), ensure_ascii=False)
                entries.append(f"Tool call {block.get('name')}: {clip(args, 1_000)}")
            elif block["type"] == "tool_result":
                flag = " (error)" if block.get("is_error") else ""
                entries.append(f"Tool result{flag}: {clip(result_text(block), result_chars)}")
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


def mechanical_summary(messages: list[MessageParam], limit: int, key_of: KeyOf | None = None) -> str:
    """A summary made without a model (demo model, or the summary request failed)."""
    lines = []
    for message in messages:
        for block in blocks(message):
            if block["type"] == "text" and message["role"] == "user":
                text = block.get("text", "")
                if text.startswith(SUMMARY_HEADER):
                    lines.append(clip(text[len(SUMMARY_HEADER):].strip(), limit // 2))
                else:
                    lines.append("Person asked: " + one_line(text, 300))
            elif block["type"] == "tool_use":
                # An empty result stands in for the one this call has not had yet (its trace says 0 chars).
                empty = cast(ToolResultBlockParam, {"content": ""})
                lines.append(shortened_trace(block, empty, key_of).replace(TRACE_PREFIX, "[tool call: ").replace(", 0 chars]", "]"))
    return clip("\n".join(lines), limit)


def latest_prompt(messages: list[MessageParam]) -> tuple[int, str] | None:
    for index in range(len(messages) - 1, -1, -1):
        if is_prompt(messages[index]):
            texts = [
                b["text"] for b in blocks(messages[index])
                if b["type"] == "text" and not b.get("text", "").startswith(SUMMARY_HEADER)
            ]
            return index, "\n".join(texts)
    return None


def long_texts(messages: list[MessageParam]) -> list[str]:
    """The texts the last stage may clip: tool results. The person's own words are never clipped: a request
    too long to send whole is refused before it is sent (:meth:`.compactor.Compactor.refusal`)."""
    return [result_text(block) for message in messages for block in blocks(message) if block["type"] == "tool_result"]


def clip_limit(lengths: list[int], excess: int) -> int | None:
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
