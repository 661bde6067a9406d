"""MCP prompts: listed with their arguments, and invoked as a request ``/server:prompt arg=value``.

:func:`parse_invocation` reads the request line (values may be quoted: ``city="New York"``;
bare values fill the arguments in their declared order), :func:`check_arguments` names
every missing or unknown argument before the server is asked, and :func:`prompt_content`
turns the server's messages into the content of one user message for the model.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..messages import ContentBlockParam, image_block, text_block, wire_blocks
from .results import MODEL_IMAGE_TYPES, resource_blocks

if TYPE_CHECKING:
    # The SDK's types are imported where content is converted (a server is running by then).
    import mcp_types as types

__all__ = [
    "PromptArgument",
    "PromptInfo",
    "PromptInvocation",
    "PromptError",
    "parse_invocation",
    "check_arguments",
    "prompt_content",
    "prompt_info",
]

_HEAD = re.compile(r"^/(?P<server>[A-Za-z0-9][A-Za-z0-9_.-]{0,63}):(?P<prompt>\S+)(?:\s+(?P<rest>.*))?$", re.DOTALL)


class PromptError(ValueError):
    """An invocation that cannot be run as written; the message says what to change."""


@dataclass(frozen=True)
class PromptArgument:
    name: str
    required: bool = False
    description: str | None = None


@dataclass(frozen=True)
class PromptInfo:
    """A prompt as a server lists it."""

    name: str
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    title: str | None = None

    def usage(self, server: str) -> str:
        """``/server:name city [state]``: required arguments bare, optional ones in brackets."""
        parts = [f"/{server}:{self.name}"]
        parts += [a.name if a.required else f"[{a.name}]" for a in self.arguments]
        return " ".join(parts)


def prompt_info(prompt: types.Prompt) -> PromptInfo:
    arguments = tuple(PromptArgument(a.name, bool(a.required), a.description) for a in prompt.arguments or [])
    return PromptInfo(name=prompt.name, description=prompt.description, arguments=arguments, title=prompt.title)


@dataclass(frozen=True)
class PromptInvocation:
    """``/server:prompt`` with its arguments as given, and any text on the lines after it."""

    server: str
    prompt: str
    named: tuple[tuple[str, str], ...] = ()
    positional: tuple[str, ...] = ()
    extra: str = ""


def parse_invocation(text: str) -> PromptInvocation | None:
    """The invocation the request starts with, or None when it does not start with ``/server:prompt``."""
    stripped = text.strip()
    first, _, after = stripped.partition("\n")
    match = _HEAD.match(first.strip())
    if match is None:
        return None
    try:
        words = shlex.split(match.group("rest") or "")
    except ValueError as error:
        raise PromptError(f"cannot read the arguments of /{match.group('server')}:{match.group('prompt')}: {error}") from None
    named: list[tuple[str, str]] = []
    positional: list[str] = []
    for word in words:
        key, sep, value = word.partition("=")
        if sep and re.match(r"^[A-Za-z_][\w.-]*$", key):
            named.append((key, value))
        else:
            positional.append(word)
    return PromptInvocation(match.group("server"), match.group("prompt"), tuple(named), tuple(positional), after.strip())


def check_arguments(server: str, info: PromptInfo, invocation: PromptInvocation) -> dict[str, str]:
    """The arguments to send; PromptError naming every problem and the prompt's usage."""
    declared = [a.name for a in info.arguments]
    values: dict[str, str] = {}
    problems: list[str] = []
    for name, value in invocation.named:
        if name not in declared:
            problems.append(f"unknown argument {name!r}")
        elif name in values:
            problems.append(f"argument {name!r} given twice")
        else:
            values[name] = value
    free = [name for name in declared if name not in values]
    if len(invocation.positional) > len(free):
        problems.append(f"{len(invocation.positional) - len(free)} value(s) too many")
    for name, value in zip(free, invocation.positional):
        values[name] = value
    missing = [a.name for a in info.arguments if a.required and a.name not in values]
    if missing:
        problems.append("missing " + ", ".join(repr(name) for name in missing))
    if problems:
        raise PromptError(f"/{server}:{info.name}: " + "; ".join(problems) + f". Usage: {info.usage(server)}"
                          + (f" (arguments: {', '.join(declared)})" if declared else " (no arguments)"))
    return values


def _content_blocks(content: Any) -> list[ContentBlockParam]:
    import mcp_types as types

    if isinstance(content, types.TextContent):
        return [text_block(content.text)]
    if isinstance(content, types.ImageContent) and content.mime_type in MODEL_IMAGE_TYPES:
        return [image_block(content.mime_type, content.data)]
    if isinstance(content, types.EmbeddedResource):
        return wire_blocks(resource_blocks([content.resource]))
    if isinstance(content, types.ResourceLink):
        return [text_block(f"Resource link: {content.name} <{content.uri}>")]
    kind = getattr(content, "type", type(content).__name__)
    return [text_block(f"[{kind} content of the prompt is not shown to the model]")]


def prompt_content(server: str, prompt: str, result: types.GetPromptResult, extra: str = "") -> list[ContentBlockParam]:
    """The prompt's messages as the content of one user message.

    A prompt may hold several messages, some in the assistant's voice; a user turn is one
    message, so those are marked as such rather than silently merged into the person's words.
    """
    blocks: list[ContentBlockParam] = []
    for message in result.messages:
        if message.role != "user":
            blocks.append(text_block(f"[the prompt /{server}:{prompt} continues in the {message.role}'s voice:]"))
        blocks.extend(_content_blocks(message.content))
    if extra:
        blocks.append(text_block(extra))
    if not blocks:
        blocks.append(text_block(f"(the prompt /{server}:{prompt} returned no messages)"))
    return blocks
