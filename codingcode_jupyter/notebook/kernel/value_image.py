"""The picture a live value would show when displayed: a matplotlib figure, anything with a PNG repr.

Only values that can have one are asked: a matplotlib ``Figure`` (or ``Axes``, for its
figure), or an object whose type defines an image ``_repr_*_`` / ``_repr_mimebundle_`` or
has an image printer registered with IPython's display formatter. Asking runs that repr
method, as displaying the value in a cell would; a failure is reported, never raised.
"""

from __future__ import annotations

import inspect
import io
from typing import Any

from .pictures import Picture, prepare_image, prepare_svg

__all__ = ["value_picture"]

_IMAGE_REPRS = ("_repr_png_", "_repr_jpeg_", "_repr_svg_", "_repr_mimebundle_")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")


def _matplotlib_figure(value: Any) -> Any:
    module = type(value).__module__ or ""
    if not module.startswith("matplotlib"):
        return None
    if hasattr(type(value), "savefig"):
        return value
    figure = getattr(value, "figure", None)  # an Axes or an Artist
    return figure if figure is not None and hasattr(type(figure), "savefig") else None


def _formatter_has_printer(shell: Any, value: Any) -> bool:
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None) or {}
    for mime in _IMAGE_TYPES:
        formatter = formatters.get(mime)
        if formatter is None:
            continue
        try:
            if formatter.lookup(value) is not None:
                return True
        except KeyError:
            continue
        except Exception:
            continue
    return False


def value_picture(shell: Any, value: Any, label: str) -> Picture | None:
    """The value's image, ready to send (or described); None when the value has no picture."""
    figure = _matplotlib_figure(value)
    if figure is not None:
        buffer = io.BytesIO()
        try:
            # As the inline backend renders it: tight around what was drawn.
            figure.savefig(buffer, format="png", bbox_inches="tight")
        except Exception as error:
            return Picture(None, f"{label}: the figure could not be rendered ({type(error).__name__}: {error})")
        return prepare_image(buffer.getvalue(), "image/png", label)
    kind = type(value)
    has_repr = any(_static(kind, name) for name in _IMAGE_REPRS)
    if not has_repr and not (shell is not None and _formatter_has_printer(shell, value)):
        return None
    data = _bundle(shell, value)
    if isinstance(data, Exception):
        return Picture(None, f"{label}: its image could not be made ({type(data).__name__}: {data})")
    for mime in ("image/png", "image/jpeg", "image/gif", "image/webp"):
        raw = data.get(mime)
        if isinstance(raw, str):
            import base64

            raw = base64.b64decode(raw)
        if isinstance(raw, (bytes, bytearray)):
            return prepare_image(bytes(raw), mime, label)
    svg = data.get("image/svg+xml")
    if isinstance(svg, (str, bytes)):
        return prepare_svg(svg.decode() if isinstance(svg, bytes) else svg, label)
    return None


def _static(kind: type, name: str) -> bool:
    try:
        inspect.getattr_static(kind, name)
    except AttributeError:
        return False
    return True


def _bundle(shell: Any, value: Any) -> Any:
    formatter = getattr(shell, "display_formatter", None) if shell is not None else None
    try:
        if formatter is not None:
            formatted, _ = formatter.format(value, include=list(_IMAGE_TYPES))
            return formatted or {}
        data: dict[str, Any] = {}
        for name, mime in (("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg"), ("_repr_svg_", "image/svg+xml")):
            method = getattr(value, name, None)
            if callable(method):
                result = method()
                if isinstance(result, tuple):
                    result = result[0]
                if result is not None:
                    data[mime] = result
        return data
    except Exception as error:
        return error
