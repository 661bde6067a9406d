"""What a custom tool returns, as tool_result content: text, JSON, or image blocks.

Images are recognised by type (:class:`Image`, ``(bytes, mime)``), by duck typing (PIL
images and matplotlib figures, so neither is a dependency), by ``_repr_png_`` /
``_repr_jpeg_``, or by the bytes' own signature.
"""

from __future__ import annotations

import dataclasses
import io
import json
from dataclasses import dataclass
from typing import Any

import pydantic_core
from pydantic import BaseModel

from .base import ContentBlock, ToolError, ToolResult, text_block
from .images import image_block, sniff_image

__all__ = ["Image", "to_tool_result"]


@dataclass(frozen=True)
class Image:
    """Image bytes with their mime type, returned from a tool as an image content block."""

    data: bytes
    mime: str = "image/png"


def _image_bytes(value: Any) -> tuple[bytes, str] | None:
    """(bytes, mime) when ``value`` is an image we know how to send, else None."""
    if isinstance(value, Image):
        return value.data, value.mime
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (bytes, bytearray)):
        if isinstance(value[1], str) and value[1].startswith("image/"):
            return bytes(value[0]), value[1]
    module = type(value).__module__ or ""
    # PIL and matplotlib are found by duck typing so neither is a dependency.
    if module.startswith("PIL.") and hasattr(value, "save") and hasattr(value, "mode"):
        buffer = io.BytesIO()
        image = value if value.mode in ("RGB", "RGBA", "L", "LA", "P", "1", "I;16") else value.convert("RGBA")
        image.save(buffer, format="PNG")
        return buffer.getvalue(), "image/png"
    if module.startswith("matplotlib.") and hasattr(value, "savefig"):
        buffer = io.BytesIO()
        value.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue(), "image/png"
    for method, mime in (("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg")):
        render = getattr(value, method, None)
        if callable(render) and not isinstance(value, type):
            data = render()
            if isinstance(data, (bytes, bytearray)):
                return bytes(data), mime
    if isinstance(value, (bytes, bytearray)):
        sniffed = sniff_image(bytes(value[:12]))
        if sniffed is not None:
            return bytes(value), sniffed
    return None


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            raise ToolError(
                f"The tool returned {len(value)} bytes that are neither text nor a PNG/JPEG/GIF/WebP image; "
                "return a str, or (bytes, 'image/...') for an image."
            ) from None
    if value is None or isinstance(value, (dict, list, tuple, set, frozenset, int, float, bool)) or dataclasses.is_dataclass(value):
        return json.dumps(pydantic_core.to_jsonable_python(value, fallback=str), ensure_ascii=False)
    return str(value)  # a DataFrame, a Path...: its own text reads better than a quoted JSON string


def to_tool_result(value: Any) -> ToolResult:
    """What a custom tool returned, as tool_result content: text, JSON, or image blocks."""
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.text("(the tool returned nothing)")
    image = _image_bytes(value)
    if image is not None:
        return ToolResult([image_block(*image)])
    # A list mixing text and images becomes several blocks; any other list is JSON data.
    if isinstance(value, (list, tuple)) and any(_image_bytes(item) is not None for item in value):
        blocks: list[ContentBlock] = []
        for item in value:
            found = _image_bytes(item)
            blocks.append(image_block(*found) if found is not None else text_block(_as_text(item)))
        return ToolResult(blocks)
    return ToolResult.text(_as_text(value))
