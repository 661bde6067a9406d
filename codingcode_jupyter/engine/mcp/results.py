"""What an MCP server returns, as content the Messages API accepts in a tool_result.

Images of the types the model can view become image blocks; text is text; a blob whose
MIME type is textual (``text/plain``, JSON, XML...) is decoded, since base64 is no use to a
model; other binary content becomes one line saying what it was. A resource link says how
to read it (``read_mcp_resource``), so the model can follow it.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any, Iterable

from ..messages import image_block
from ..tools.base import ContentBlock, ToolResult, text_block

if TYPE_CHECKING:
    # The SDK's types are imported where content is converted (a server is running by then).
    import mcp_types as types

__all__ = ["MODEL_IMAGE_TYPES", "to_tool_result", "resource_blocks", "is_textual", "decode_text_blob", "READ_TOOL"]

# Image types the Messages API accepts as image blocks; others become a text note.
MODEL_IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
READ_TOOL = "read_mcp_resource"
_TEXTUAL_APPLICATION = {
    "application/json", "application/xml", "application/javascript", "application/x-yaml", "application/yaml",
    "application/toml", "application/x-sh", "application/sql", "application/graphql", "application/ld+json",
    "application/x-ndjson", "application/csv",
}
# A decoded text blob longer than this is cut (the model's context is the scarce thing).
MAX_TEXT_BLOB = 200_000


def is_textual(mime: str | None) -> bool:
    """Whether content of this MIME type is text a model can read once decoded."""
    if not mime:
        return False
    base = mime.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in _TEXTUAL_APPLICATION or base.endswith(("+json", "+xml"))


def _image_block(data: str, mime: str) -> ContentBlock:
    return image_block(mime, data)


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _size(data: str) -> int:
    decoded = _decoded(data)
    return len(decoded) if decoded is not None else len(data)


def decode_text_blob(blob: str, mime: str | None) -> str | None:
    """The text of a base64 blob of a textual type (charset from the MIME type, else UTF-8)."""
    raw = _decoded(blob)
    if raw is None:
        return None
    charset = "utf-8"
    for part in (mime or "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    try:
        text = raw.decode(charset, errors="replace")
    except LookupError:
        text = raw.decode("utf-8", errors="replace")
    if len(text) > MAX_TEXT_BLOB:
        text = text[:MAX_TEXT_BLOB] + f"\n[... cut: {len(text) - MAX_TEXT_BLOB} more characters]"
    return text


def resource_blocks(
    contents: Iterable[types.TextResourceContents | types.BlobResourceContents],
) -> list[ContentBlock]:
    """The contents of a resource (read, or embedded in a result) as content blocks."""
    import mcp_types as types

    blocks: list[ContentBlock] = []
    for item in contents:
        mime = item.mime_type or "unknown type"
        if isinstance(item, types.TextResourceContents):
            blocks.append(text_block(f"Resource {item.uri} ({mime}):\n{item.text}"))
            continue
        if item.mime_type in MODEL_IMAGE_TYPES:
            blocks.append(text_block(f"Resource {item.uri} ({mime}):"))
            blocks.append(_image_block(item.blob, item.mime_type))
            continue
        text = decode_text_blob(item.blob, item.mime_type) if is_textual(item.mime_type) else None
        if text is not None:
            blocks.append(text_block(f"Resource {item.uri} ({mime}):\n{text}"))
        else:
            blocks.append(text_block(f"[binary resource {item.uri} ({mime}), {_size(item.blob)} bytes: not shown to the model]"))
    return blocks


def _link_text(item: types.ResourceLink, server: str | None) -> str:
    parts = [f"Resource link: {item.name} <{item.uri}>"]
    if item.mime_type:
        parts.append(f"({item.mime_type})")
    if item.description:
        parts.append(f"- {item.description}")
    if server is not None:
        parts.append(f"- read it with {READ_TOOL}(server={json.dumps(server)}, uri={json.dumps(item.uri)})")
    return " ".join(parts)


def _content_blocks(item: Any, server: str | None) -> list[ContentBlock]:
    import mcp_types as types

    if isinstance(item, types.TextContent):
        return [text_block(item.text)]
    if isinstance(item, types.ImageContent):
        if item.mime_type in MODEL_IMAGE_TYPES:
            return [_image_block(item.data, item.mime_type)]
        return [text_block(f"[image of type {item.mime_type}, {_size(item.data)} bytes: a type the model cannot view]")]
    if isinstance(item, types.AudioContent):
        return [text_block(f"[audio of type {item.mime_type}, {_size(item.data)} bytes: not shown to the model]")]
    if isinstance(item, types.ResourceLink):
        return [text_block(_link_text(item, server))]
    if isinstance(item, types.EmbeddedResource):
        return resource_blocks([item.resource])
    kind = getattr(item, "type", type(item).__name__)
    return [text_block(f"[{kind} content not supported]")]


def to_tool_result(result: types.CallToolResult, server: str | None = None) -> ToolResult:
    """An MCP call result as Messages API tool_result content.

    ``server`` names where a resource link can be read; without it links are described only.
    """
    blocks = [block for item in result.content for block in _content_blocks(item, server)]
    has_text = any(block["type"] == "text" for block in blocks)
    if result.structured_content is not None and not has_text:
        blocks.append(text_block(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)))
    if not blocks:
        blocks.append(text_block("(no output)"))
    return ToolResult(blocks, is_error=bool(result.is_error))
