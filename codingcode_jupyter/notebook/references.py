"""Prompt references: ``{name}`` in a ``%%agent`` cell names a live variable.

``{df}`` becomes a short description of ``df`` (type, shape, size, columns or a short
repr), so the model knows what the user means without a tool call. ``{{`` and ``}}`` give
literal braces. Only ``{identifier}`` or ``{a.b}`` forms are references, and only when the
name exists in the namespace: any other brace (a dict, a set, ``{0}``) is left alone, as is
text in backticks (inline code or fenced blocks), where ``{x}`` is usually an f-string.
``%agent fix`` builds its prompt here too, from the last failing cell and its traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..engine.tools.base import ToolError
from .kernel.errors import LastError, last_error
from .kernel.namespace import KernelAccess
from .kernel.values import describe_value, lookup

__all__ = ["ExpandedPrompt", "expand_references", "fix_prompt", "NoErrorToFix"]

# Code spans first (fenced, then inline), so the alternation skips them whole.
_TOKENS = re.compile(
    r"(?P<fence>```.*?(?:```|\Z))"
    r"|(?P<code>`[^`\n]*`)"
    r"|(?P<open>\{\{)"
    r"|(?P<close>\}\})"
    r"|\{(?P<ref>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}",
    re.DOTALL,
)
MAX_REFERENCES = 20


class NoErrorToFix(Exception):
    """``%agent fix`` was asked for but no cell has failed."""


@dataclass
class ExpandedPrompt:
    """The prompt as sent, and which references were expanded or not found."""

    text: str
    references: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)


def _describe(access: KernelAccess, name: str) -> str | None:
    try:
        value = lookup(access, name)
    except ToolError:
        return None
    line = describe_value(name, value)
    # "name: type, shape, size — summary" -> "`name` (type, shape, size — summary)"
    detail = line[len(name) + 2 :]
    return f"`{name}` ({detail})"


def expand_references(prompt: str, namespace: Mapping[str, Any] | None = None, *, shell: Any = None) -> ExpandedPrompt:
    """Replace ``{name}`` with a description of that live variable; ``{{``/``}}`` escape."""
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
                described[name] = _describe(access, name)
                if described[name] is not None:
                    result.references.append(name)
        if described[name] is None:
            if name not in result.unresolved:
                result.unresolved.append(name)
            return match.group(0)
        return described[name]  # type: ignore[return-value]

    result.text = _TOKENS.sub(replace, prompt)
    return result


def fix_prompt(shell: Any, extra: str = "", error: LastError | None = None) -> str:
    """The prompt of ``%agent fix``: the failing cell, its traceback, and what to do."""
    error = error or last_error(shell)
    if error is None:
        raise NoErrorToFix("No cell has raised an exception yet, so there is nothing to fix.")
    where = f"cell [{error.execution_count}]" if error.execution_count else "the last cell that failed"
    fence = "````" if "```" in error.cell or "```" in error.traceback else "```"
    parts = [
        f"Fix the error in {where} of my notebook.",
        f"\nThe cell:\n{fence}python\n{error.cell.rstrip()}\n{fence}",
        f"\nThe error ({error.error}):\n{fence}\n{error.traceback.rstrip()}\n{fence}",
        "\nFind the cause — inspect the live variables involved with inspect_variable or notebook_history "
        "if that helps — then fix it: edit the project's files if the bug is there, and propose the corrected "
        "cell with insert_cell. Explain the cause in a sentence or two.",
    ]
    if extra.strip():
        parts.append(f"\nAlso: {extra.strip()}")
    return "\n".join(parts)
