"""An output's image made fit for the model: its size read, downscaled, or described instead.

The Messages API takes PNG, JPEG, GIF and WebP up to 5 MB, and shrinks anything longer than
about 1568 px on its long side before the model sees it, so a larger image costs upload
time for nothing. With Pillow importable an image over either limit is downscaled here
(SVG is rasterised first when cairosvg is importable); without it an image within the
API's hard limits goes as it is, and one beyond them is described in words.
"""

from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass
from typing import Any

from ...engine.tools.base import ContentBlock
from ...engine.tools.images import IMAGE_MIME_TYPES, MAX_IMAGE_BYTES, image_block, sniff_image

__all__ = ["Picture", "LONG_SIDE", "image_size", "prepare_image", "prepare_svg"]

# The long side the model sees an image at; the API's own hard limit per side.
LONG_SIDE = 1568
API_MAX_SIDE = 8000


@dataclass
class Picture:
    """What became of one image: a block for the model (or None) and a line describing it."""

    block: ContentBlock | None
    description: str


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF or JPEG header, without decoding the image."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:3] == b"\xff\xd8\xff":
        index = 2
        while index + 9 < len(data):
            if data[index] != 0xFF:
                index += 1
                continue
            marker = data[index + 1]
            length = struct.unpack(">H", data[index + 2 : index + 4])[0]
            # Start-of-frame markers carry the size (C0-CF except DHT C4, JPG C8, DAC CC).
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[index + 5 : index + 9])
                return width, height
            index += 2 + length
    return None


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


def _human(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{max(1, size // 1000)} KB"


def _downscale(data: bytes, image: Any) -> tuple[bytes, str, tuple[int, int]] | None:
    """The image within LONG_SIDE and MAX_IMAGE_BYTES, as PNG (or JPEG when PNG stays too big)."""
    try:
        with image.open(io.BytesIO(data)) as source:
            source.load()
            picture = source.convert("RGBA") if source.mode in ("P", "LA", "RGBA") else source.convert("RGB")
    except Exception:
        return None
    side = LONG_SIDE
    for _ in range(6):
        copy = picture.copy()
        copy.thumbnail((side, side))
        buffer = io.BytesIO()
        copy.save(buffer, format="PNG", optimize=True)
        if buffer.tell() <= MAX_IMAGE_BYTES:
            return buffer.getvalue(), "image/png", copy.size
        buffer = io.BytesIO()
        copy.convert("RGB").save(buffer, format="JPEG", quality=85)
        if buffer.tell() <= MAX_IMAGE_BYTES:
            return buffer.getvalue(), "image/jpeg", copy.size
        side = int(side * 0.7)
    return None


def prepare_image(data: bytes, mime: str, label: str = "image") -> Picture:
    """An image block within the API's limits, or a description saying why there is none."""
    mime = sniff_image(data[:16]) or mime
    size = image_size(data)
    shape = f"{size[0]}×{size[1]} px, " if size else ""
    what = f"{label}: {mime}, {shape}{_human(len(data))}"
    if mime not in IMAGE_MIME_TYPES:
        return Picture(None, f"{what} — not a type the model can be shown")
    too_long = size is not None and max(size) > LONG_SIDE
    if not too_long and len(data) <= MAX_IMAGE_BYTES:
        return Picture(image_block(data, mime), what)
    image = _pillow()
    if image is not None:
        scaled = _downscale(data, image)
        if scaled is not None:
            small, small_mime, (width, height) = scaled
            return Picture(image_block(small, small_mime), f"{what}, sent downscaled to {width}×{height} px")
    fits = len(data) <= MAX_IMAGE_BYTES and (size is None or max(size) <= API_MAX_SIDE)
    if fits:
        return Picture(image_block(data, mime), f"{what}, sent at full size (Pillow is not installed to downscale it)")
    return Picture(None, f"{what} — too large to send and Pillow is not installed to downscale it")


_SVG_SIZE = re.compile(r"<svg\b[^>]*?\bwidth=\"([^\"]+)\"[^>]*?\bheight=\"([^\"]+)\"", re.S)
_SVG_TEXT = re.compile(r"<(?:text|title|tspan)\b[^>]*>([^<]+)<", re.S)


def prepare_svg(svg: str, label: str = "image") -> Picture:
    """An SVG rasterised to PNG when cairosvg is importable; otherwise its size and its words."""
    try:
        import cairosvg
    except (ImportError, OSError):  # OSError: cairosvg present but the cairo library is not
        cairosvg = None
    if cairosvg is not None:
        try:
            png = cairosvg.svg2png(bytestring=svg.encode("utf-8"))
        except Exception:
            png = None
        if png:
            picture = prepare_image(png, "image/png", label)
            return Picture(picture.block, picture.description.replace("image/png", "image/svg+xml rasterised to PNG", 1))
    size = _SVG_SIZE.search(svg[:5000])
    shape = f"{size.group(1)} × {size.group(2)}, " if size else ""
    words = [" ".join(t.split()) for t in _SVG_TEXT.findall(svg[:500_000])]
    words = [w for w in words if w][:40]
    said = f"; its text: {' | '.join(words)}" if words else ""
    return Picture(None, f"{label}: image/svg+xml, {shape}{_human(len(svg))} — not rasterised (cairosvg is not installed){said}")
