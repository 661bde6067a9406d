"""PNG images made without Pillow (a kernel under test may not have it), and reading them back."""

from __future__ import annotations

import base64
import os
import struct
import zlib

__all__ = ["png", "png_expr", "png_size", "png_source", "image_blocks"]


def png(width: int, height: int, *, noise: bool = False) -> bytes:
    """An RGB PNG of that size: flat grey, or random pixels (which do not compress) when ``noise``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = width * 3
    raw = b"".join(b"\x00" + (os.urandom(row) if noise else b"\x80" * row) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def png_expr(width: int, height: int, *, noise: bool = False) -> str:
    """A Python expression whose value is such a PNG's bytes (needs ``import base64``)."""
    return f"base64.b64decode({base64.b64encode(png(width, height, noise=noise)).decode()!r})"


def png_source(width: int, height: int, *, noise: bool = False) -> str:
    """Python source that displays such a PNG, for a kernel's cell."""
    return f"from IPython.display import Image, display\nimport base64\ndisplay(Image({png_expr(width, height, noise=noise)}))"


def image_blocks(content: list) -> list[bytes]:
    """The decoded data of every image block in a message's or tool result's content, nested included."""
    found = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "image":
            found.append(base64.b64decode(block["source"]["data"]))
        elif isinstance(block.get("content"), list):
            found += image_blocks(block["content"])
    return found
