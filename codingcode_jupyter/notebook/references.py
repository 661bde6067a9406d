"""Prompt references: ``{name}`` in a ``%%agent`` cell names a live variable.

``{df}`` becomes a short description of ``df`` (type, shape, size, columns or a short
repr), so the model knows what the user means without a tool call. A value that displays
as a picture — ``{fig}`` for a matplotlib figure, anything with a PNG repr, ``{_}`` when the
last result is one — also sends the picture itself, as an image block after the prompt's
text; ``{Out[3]}`` stands for what cell 3 showed: its result described and the images it
displayed attached. ``{{`` and ``}}`` give literal braces. Only ``{identifier}``, ``{a.b}``
and ``{Out[n]}`` forms are references, and only when they resolve: any other brace (a dict,
a set, ``{0}``) is left alone, as is text in backticks (inline code or fenced blocks, of
any fence length), where ``{x}`` is usually an f-string.

``%agent fix`` builds its prompt here too: the last failing cell, fenced, its traceback,
and ``{Out[n]}`` for the images it displayed, so those come along when the prompt is expanded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..engine.messages import ContentBlockParam, text_block, wire_blocks
from ..engine.tools.base import ContentBlock, ToolError
from .kernel.errors import LastError, last_error
from .kernel.namespace import KernelAccess
from .kernel.values import describe_value, lookup

__all__ = ["ExpandedPrompt", "expand_references", "fix_prompt", "NoErrorToFix"]

# Code spans first (fenced with three or more backticks, then inline), so the alternation
# skips them whole.
_TOKENS = re.compile(
    r"(?P<fence>(?P<ticks>`{3,}).*?(?:(?P=ticks)|\Z))"
    r"|(?P<code>`[^`\n]*`)"
    r"|(?P<open>\{\{)"
    r"|(?P<close>\}\})"
    r"|\{(?P<ref>Out\[\d{1,9}\]|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}",
    re.DOTALL,
)
_OUT = re.compile(r"^Out\[(\d+)\]$")
MAX_REFERENCES = 20
# Images one prompt carries at most, and per reference.
MAX_PROMPT_IMAGES = 8
MAX_IMAGES_PER_REFERENCE = 4


class NoErrorToFix(Exception):
    """``%agent fix`` was asked for but no cell has failed."""


@dataclass
class ExpandedPrompt:
    """The prompt as sent, which references were expanded or not found, and the images they attach."""

    text: str
    references: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    # Image content blocks, in the order the prompt's text numbers them.
    images: list[ContentBlock] = field(default_factory=list)

    def content(self, text: str | None = None) -> str | list[ContentBlockParam]:
        """What to send as the user's message: ``text`` (default: the expanded text) and the images."""
        text = self.text if text is None else text
        if not self.images:
            return text
        return [text_block(text), *wire_blocks(self.images)]


def _pictures_line(pictures: list[Any], result: ExpandedPrompt) -> str:
    """'image 1 attached' for each picture sent; the description for each one that could not be."""
    said = []
    for picture in pictures:
        if picture.block is not None and len(result.images) < MAX_PROMPT_IMAGES:
            result.images.append(picture.block)
            said.append(f"image {len(result.images)} attached below: {picture.description}")
        elif picture.block is not None:
            said.append(f"{picture.description} — not attached, the prompt already carries {MAX_PROMPT_IMAGES} images")
        else:
            said.append(picture.description)
    return "; ".join(said)


def _describe_out(access: KernelAccess, count: int, result: ExpandedPrompt) -> str | None:
    from .kernel.cell_output import record_pictures
    from .kernel.recall import cell_record

    name = f"Out[{count}]"
    out = access.user_ns.get("Out")
    outputs: dict[Any, Any] = out if isinstance(out, dict) else {}
    has_value = count in outputs
    record = cell_record(access.shell, count) if access.shell is not None else None
    pictures = record_pictures(record, MAX_IMAGES_PER_REFERENCE) if record is not None else []
    if not has_value and not pictures:
        return None
    parts = []
    if has_value:
        parts.append(describe_value(name, outputs[count])[len(name) + 2 :])
    else:
        parts.append("no result value")
    if pictures:
        parts.append(f"cell [{count}] displayed: " + _pictures_line(pictures, result))
    return f"`{name}` ({'; '.join(parts)})"


def _describe(access: KernelAccess, name: str, result: ExpandedPrompt) -> str | None:
    out = _OUT.match(name)
    if out:
        return _describe_out(access, int(out.group(1)), result)
    try:
        value = lookup(access, name)
    except ToolError:
        return None
    from .kernel.value_image import value_picture

    line = describe_value(name, value)
    # "name: type, shape, size — summary" -> "`name` (type, shape, size — summary)"
    detail = line[len(name) + 2 :]
    picture = value_picture(access.shell, value, name)
    if picture is not None:
        detail += "; " + _pictures_line([picture], result)
    return f"`{name}` ({detail})"


def expand_references(prompt: str, namespace: Mapping[str, Any] | None = None, *, shell: Any = None) -> ExpandedPrompt:
    """Replace ``{name}`` with a description of that live variable (and its picture); ``{{``/``}}`` escape."""
    if shell is None and namespace is None:
        return ExpandedPrompt(prompt.replace("{{", "{").replace("}}", "}"))
    access = KernelAccess(shell, dict(namespace) if namespace is not None else None)
    result = ExpandedPrompt("")
    described: dict[str, str | None] = {}

    def replace(match: re.Match[str]) -> str:
        if match.group("fence") or match.group("code"):
            return match.group(0)
        if match.group("open"):
            return "{"
        if match.group("close"):
            return "}"
        name = match.group("ref")
        if name not in described:
            if len(result.references) >= MAX_REFERENCES:
                described[name] = None
            else:
                described[name] = _describe(access, name, result)
                if described[name] is not None:
                    result.references.append(name)
        if described[name] is None:
            if name not in result.unresolved:
                result.unresolved.append(name)
            return match.group(0)
        return described[name]  # type: ignore[return-value]

    result.text = _TOKENS.sub(replace, prompt)
    return result


def _fence(*texts: str) -> str:
    """A backtick fence longer than any run of backticks in ``texts``."""
    longest = max((len(run) for text in texts for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _displayed_images(shell: Any, count: int | None) -> int:
    if shell is None or count is None:
        return 0
    from .kernel.cell_output import IMAGE_TYPES
    from .kernel.outputs import output_history

    history = output_history(shell)
    record = history.get(count) if history is not None else None
    if record is None:
        return 0
    return sum(1 for o in record.outputs if any(m in o.data for m in (*IMAGE_TYPES, "image/svg+xml")))


def fix_prompt(shell: Any, extra: str = "", error: LastError | None = None) -> str:
    """The prompt of ``%agent fix``: the failing cell, its traceback, its images, and what to do.

    The cell and the traceback are fenced, so expanding the prompt leaves their braces alone;
    ``{Out[n]}`` is there only when the cell displayed images, which expanding attaches.
    """
    error = error or last_error(shell)
    if error is None:
        raise NoErrorToFix("No cell has raised an exception yet, so there is nothing to fix.")
    where = f"cell [{error.execution_count}]" if error.execution_count else "the last cell that failed"
    fence = _fence(error.cell, error.traceback)
    parts = [
        f"Fix the error in {where} of my notebook.",
        f"\nThe cell:\n{fence}python\n{error.cell.rstrip()}\n{fence}",
        f"\nThe error ({error.error}):\n{fence}\n{error.traceback.rstrip()}\n{fence}",
    ]
    if _displayed_images(shell, error.execution_count):
        parts.append(f"\nWhat it displayed before failing: {{Out[{error.execution_count}]}}")
    parts.append(
        "\nFind the cause — inspect the live variables involved with inspect_variable, read_cell_output or "
        "notebook_history if that helps — then fix it: edit the project's files if the bug is there, and propose "
        "the corrected cell with insert_cell. Explain the cause in a sentence or two."
    )
    if extra.strip():
        parts.append(f"\nAlso: {extra.strip()}")
    return "\n".join(parts)
