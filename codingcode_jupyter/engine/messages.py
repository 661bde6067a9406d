"""The conversation's messages, typed with the anthropic SDK's own TypedDicts, and the one place that narrows them.

A message is the dict the Messages API takes, at runtime as on the wire: nothing is converted
on the way out. The SDK's TypedDicts (``MessageParam``, ``ContentBlockParam``, ...) give those
dicts a type for the checker, which then narrows a block on ``block["type"] == "tool_use"``.
They are imported for type checking only: the engine must not load the SDK (the demo model
runs without it), so at runtime the names below are plain ``dict`` (which is also what a
pydantic model holding messages validates them as).

The SDK lets a message's content be a string or any iterable of blocks; the loop keeps it a
list of blocks (:func:`codingcode_jupyter.engine.agent.merge_message`), and :func:`blocks` is
where code that relies on that reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from anthropic.types import (
        CacheControlEphemeralParam,
        ContentBlockParam,
        ImageBlockParam,
        MessageParam,
        TextBlockParam,
        ToolParam,
        ToolResultBlockParam,
        ToolUnionParam,
        ToolUseBlockParam,
        WebSearchTool20250305Param,
    )
    from anthropic.types.tool_result_block_param import Content as ResultPartParam
else:
    # No SDK at runtime (see the module docstring): the types are the dicts themselves.
    CacheControlEphemeralParam = ContentBlockParam = ImageBlockParam = MessageParam = TextBlockParam = dict
    ToolResultBlockParam = ToolUseBlockParam = ResultPartParam = dict
    ToolParam = ToolUnionParam = WebSearchTool20250305Param = dict

__all__ = [
    "CACHE",
    "CacheControlEphemeralParam",
    "ContentBlockParam",
    "ImageBlockParam",
    "MessageParam",
    "ResultPartParam",
    "TextBlockParam",
    "ToolParam",
    "ToolResultBlockParam",
    "ToolUnionParam",
    "WebSearchTool20250305Param",
    "cached_tool",
    "tool_name",
    "ToolUseBlockParam",
    "blocks",
    "own_blocks",
    "cache_last",
    "result_parts",
    "result_text",
    "text_block",
    "image_block",
    "user_text",
    "user_blocks",
    "assistant_blocks",
    "tool_result",
    "wire_blocks",
]


def blocks(message: MessageParam) -> list[ContentBlockParam]:
    """The message's content blocks: its own list (so appending to it changes the message), or a text block for a string."""
    content = message["content"]
    if isinstance(content, str):
        return [text_block(content)]
    if isinstance(content, list):
        return cast("list[ContentBlockParam]", content)
    return cast("list[ContentBlockParam]", list(content))


def own_blocks(message: MessageParam) -> list[ContentBlockParam]:
    """The message's content as its own list, turned into one in place when it was a string (to append to)."""
    if not isinstance(message["content"], list):
        cast("dict[str, object]", message)["content"] = blocks(message)
    return blocks(message)


CACHE: CacheControlEphemeralParam = {"type": "ephemeral"}


def cache_last(message: MessageParam) -> None:
    """Mark the message's last block as a cache breakpoint (in place; the caller copies)."""
    content = blocks(message)
    if content:
        # The API takes cache_control on any block it can cache; the SDK's union also holds
        # thinking blocks, which cannot be, and a turn never ends its message on one.
        cast("dict[str, object]", content[-1])["cache_control"] = CACHE


def cached_tool(tool: ToolUnionParam) -> ToolUnionParam:
    """A copy of ``tool`` that is a cache breakpoint (the last tool: the tools block is cached)."""
    return cast("ToolUnionParam", {**tool, "cache_control": CACHE})


def tool_name(tool: ToolUnionParam) -> str | None:
    """The name the model calls a tool by (the SDK's toolsets have none)."""
    name = cast("Mapping[str, object]", tool).get("name")
    return name if isinstance(name, str) else None


def result_parts(block: ToolResultBlockParam) -> list[ResultPartParam]:
    """A tool result's content as blocks (a string result is one text block; none is no block)."""
    content = block.get("content")
    if content is None:
        return []
    if isinstance(content, str):
        return [text_block(content)]
    return content if isinstance(content, list) else list(content)


def result_text(block: ToolResultBlockParam) -> str:
    """A tool result's text: its string, or its text blocks joined by newlines (other blocks add an empty line)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(c["text"] if c["type"] == "text" else "" for c in result_parts(block))


def text_block(text: str) -> TextBlockParam:
    return {"type": "text", "text": text}


def image_block(media_type: str, data: str) -> ImageBlockParam:
    """A base64 image; ``media_type`` is one the model takes (the caller checked it against its list)."""
    return cast("ImageBlockParam", {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})


def user_text(text: str) -> MessageParam:
    """A user message of one text block."""
    return {"role": "user", "content": [text_block(text)]}


def user_blocks(content: str | list[ContentBlockParam]) -> MessageParam:
    """A user message with this content, as given (merge_message makes a string a text block)."""
    return {"role": "user", "content": content}


def assistant_blocks(content: list[ContentBlockParam]) -> MessageParam:
    return {"role": "assistant", "content": content}


def tool_result(tool_use_id: str, content: list[ResultPartParam], *, is_error: bool = False) -> ToolResultBlockParam:
    """The answer to one tool call. ``content`` is the tool's output blocks (text, image, ...), sent as they are."""
    block: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def wire_blocks(content: Iterable[Mapping[str, Any]]) -> list[ContentBlockParam]:
    """Blocks read from the wire (a response's content, a saved transcript): their type is the API's word.

    The one place a plain dict becomes a typed block without being built here; the list is
    kept as it is (same objects), nothing is validated.
    """
    return cast("list[ContentBlockParam]", content if isinstance(content, list) else list(content))
