"""read_cell_output: one cell's source and outputs as the model can take them in.

Images become image blocks (a few per call, the rest announced), HTML becomes Markdown with
its tables kept as tables, streams read as a terminal shows them (a ``\\r`` progress line
keeps its last state), tracebacks without colour codes; all text within one budget.
"""

from __future__ import annotations

import time
from typing import Any, Literal, Union

from pydantic import BaseModel, Field

from ...engine.tools.base import ContentBlock, ToolError, ToolResult, text_block
from .outputs import CellRecord, Output, output_history
from .pictures import Picture, prepare_image, prepare_svg
from .recall import cell_record, last_cell, last_error_cell, strip_ansi

__all__ = ["ReadCellOutputArgs", "read_cell_output", "record_pictures", "render_record", "output_text"]

MAX_SOURCE_CHARS = 4_000
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class ReadCellOutputArgs(BaseModel):
    """Parameters of read_cell_output."""

    cell: Union[int, Literal["last", "last_error"]] = Field(
        default="last",
        description="The cell's execution count (the n of In [n] / Out[n]), 'last' for the newest cell the user "
        "ran, or 'last_error' for the newest cell that raised.",
    )
    max_images: int = Field(default=3, ge=0, le=8, description="Most images to return (default 3).")
    skip_images: int = Field(default=0, ge=0, description="Images to pass over first, to page through a cell with many.")
    max_chars: int = Field(default=12_000, ge=500, le=60_000, description="Most characters of text (default 12000).")


def _terminal(text: str) -> str:
    """Stream text as a notebook shows it: each line's last carriage-return rewrite, no colour codes."""
    lines = []
    for line in strip_ansi(text).split("\n"):
        line = line.rstrip("\r")
        lines.append(line.rsplit("\r", 1)[-1] if "\r" in line else line)
    return "\n".join(lines)


def output_text(output: Output) -> str:
    """The readable text of one output (no images): Markdown for HTML, the traceback for an error."""
    if output.kind == "stream":
        return _terminal(output.text)
    if output.kind == "error":
        return strip_ansi(output.text)
    data = output.data
    if "text/markdown" in data:
        return str(data["text/markdown"])
    if "text/html" in data:
        from ...engine.tools.web import html_to_markdown

        try:
            markdown = html_to_markdown(data["text/html"])[1]
        except Exception:
            markdown = ""
        if markdown.strip():
            return markdown
    if "text/latex" in data:
        return str(data["text/latex"])
    if "application/json" in data:
        return str(data["application/json"])  # stored as text when recorded
    return strip_ansi(data.get("text/plain", ""))


def _picture(output: Output, label: str) -> Picture | None:
    for mime in IMAGE_TYPES:
        if mime in output.data:
            return prepare_image(output.data[mime], mime, label)
    if "image/svg+xml" in output.data:
        return prepare_svg(output.data["image/svg+xml"], label)
    return None


def _label(record: CellRecord, output: Output, index: int) -> str:
    if output.kind == "execute_result" and record.execution_count is not None:
        return f"Out[{record.execution_count}]"
    if output.kind == "stream":
        return f"[{output.name or 'stream'}]"
    if output.kind == "error":
        return f"[error {output.name}]".replace(" ]", "]")
    return f"[display {index}]"


def record_pictures(record: CellRecord, limit: int) -> list[Picture]:
    """The first ``limit`` images the cell showed, ready to send (or described)."""
    pictures: list[Picture] = []
    for index, output in enumerate(record.outputs, 1):
        if len(pictures) >= limit:
            break
        picture = _picture(output, _label(record, output, index))
        if picture is not None:
            pictures.append(picture)
    return pictures


def _age(record: CellRecord) -> str:
    if not record.finished:
        return "running now" if record.finished is None else "ran before recording began"
    seconds = max(0, time.time() - record.finished)
    if seconds < 90:
        return f"ran {seconds:.0f} s ago"
    if seconds < 5400:
        return f"ran {seconds / 60:.0f} min ago"
    return f"ran {seconds / 3600:.1f} h ago"


def render_record(record: CellRecord, *, max_images: int = 3, skip_images: int = 0, max_chars: int = 12_000) -> list[ContentBlock]:
    """The cell as content blocks: a text part, then each image where it appeared, text clipped."""
    blocks: list[ContentBlock] = []
    pending: list[str] = []
    used = 0
    clipped = False

    def say(text: str) -> None:
        nonlocal used, clipped
        if clipped:
            return
        room = max_chars - used
        if len(text) > room:
            text = text[: max(0, room)] + f"\n[... text clipped at {max_chars} characters; ask with a larger max_chars]"
            clipped = True
        used += len(text)
        pending.append(text)

    def flush() -> None:
        if pending:
            blocks.append(text_block("\n".join(pending)))
            pending.clear()

    count = record.execution_count
    name = f"In [{count}]" if count is not None else "The cell"
    kinds = ", ".join(record.kinds()) or "no output"
    source = record.source.rstrip()
    if len(source) > MAX_SOURCE_CHARS:
        source = source[:MAX_SOURCE_CHARS] + f"\n[... {len(source) - MAX_SOURCE_CHARS} more characters of source]"
    fence = "````" if "```" in source else "```"
    say(f"{name} ({_age(record)}; outputs: {kinds}):\n{fence}python\n{source}\n{fence}")
    for note in record.notes:
        say(f"({note})")
    if record.agent:
        say("(An agent cell: its outputs are the agent's own answer, not recorded.)")
    images_seen = sent = 0
    for index, output in enumerate(record.outputs, 1):
        label = _label(record, output, index)
        picture = _picture(output, label) if output.kind in ("display_data", "execute_result") else None
        if picture is not None:
            images_seen += 1
            if images_seen <= skip_images:
                say(f"{label}: an image (skipped)")
                continue
            if sent >= max_images:
                continue
            sent += 1
            caption = output.data.get("text/plain", "")
            say(f"{picture.description}" + (f" — {strip_ansi(caption)[:200]}" if caption else ""))
            if picture.block is not None:
                flush()
                blocks.append(picture.block)
            continue
        text = output_text(output).rstrip()
        extra = [f"({note})" for note in output.notes]
        if output.other_types and not text:
            text = f"(a {', '.join(output.other_types)} output; no text form)"
        elif any("widget" in mime for mime in output.other_types):
            extra.append("(an interactive widget; what it shows now may differ)")
        if text or extra:
            say(f"{label}:\n" + "\n".join(([text] if text else []) + extra))
    more = images_seen - skip_images - sent
    if more > 0:
        say(f"[{more} more image(s) in this cell: call again with skip_images={skip_images + sent}]")
    if not record.outputs and not record.agent:
        say("(no output)")
    flush()
    return blocks


def read_cell_output(shell: Any, args: ReadCellOutputArgs) -> ToolResult:
    """The tool: find the cell asked for, render it, or say clearly why there is none."""
    if shell is None:
        raise ToolError("read_cell_output needs the notebook's IPython shell; there is none here.")
    if args.cell == "last":
        record = last_cell(shell)
        missing = "No cell has run yet."
    elif args.cell == "last_error":
        record = last_error_cell(shell)
        missing = "No cell has raised an exception yet."
    else:
        record = cell_record(shell, args.cell)
        history = output_history(shell)
        newest = getattr(shell, "execution_count", 1) - 1
        dropped = history is not None and history.dropped_cells and history.first_count is not None
        missing = (
            f"There is no cell [{args.cell}]: cells so far are numbered 1 to {max(newest, 1)}."
            if args.cell > newest or args.cell < 1
            else f"Cell [{args.cell}] is no longer kept (the output memory keeps the last cells within its budget)."
            if dropped else f"Cell [{args.cell}] has nothing IPython kept."
        )
    if record is None:
        raise ToolError(missing)
    blocks = render_record(record, max_images=args.max_images, skip_images=args.skip_images, max_chars=args.max_chars)
    text = "\n".join(block["text"] for block in blocks if block["type"] == "text")
    images = sum(1 for block in blocks if block["type"] == "image")
    return ToolResult(blocks, display=text + (f"\n[{images} image(s)]" if images else ""))
