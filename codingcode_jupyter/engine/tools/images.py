"""Images in tool results: which types the Messages API takes, how big, and the block it wants.

One table for every producer (read_file, custom tools, MCP results) and for the front,
which shows raster images under a tool's line.
"""

from __future__ import annotations

import base64

from .. import messages
from .base import ContentBlock, ToolError

__all__ = ["IMAGE_MIME_TYPES", "MAX_IMAGE_BYTES", "image_block", "sniff_image"]

# What the Messages API accepts in an image block, and its size limit per image.
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024
_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


def sniff_image(head: bytes) -> str | None:
    """The image type the first bytes of a file or buffer say, or None."""
    for signature, media_type in _SIGNATURES.items():
        if head.startswith(signature):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_block(data: bytes, mime: str) -> ContentBlock:
    """A base64 image block; ToolError for a type or size the API refuses."""
    if mime not in IMAGE_MIME_TYPES:
        raise ToolError(f"The tool returned an image of type {mime}; images must be one of {', '.join(IMAGE_MIME_TYPES)}.")
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolError(
            f"The tool returned an image of {len(data) / 1e6:.1f} MB; the API accepts at most "
            f"{MAX_IMAGE_BYTES / 1e6:.0f} MB per image."
        )
    return messages.image_block(mime, base64.b64encode(data).decode())
