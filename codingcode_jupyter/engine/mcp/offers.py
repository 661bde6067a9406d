"""What a server offers: its tools, prompts and resources, listed page by page.

Each list is asked for only when the server declares it; a tool that needs task-augmented
execution is set aside with the reason (this client does not run such calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Protocol, TypeVar

import mcp_types as types
from mcp import Client

from .prompts import PromptInfo, prompt_info

__all__ = ["McpToolInfo", "ResourceInfo", "OptionalMethod", "tool_info", "list_tools", "list_prompts", "list_resources"]

_MAX_PAGES = 100
_T = TypeVar("_T")


@dataclass(frozen=True)
class McpToolInfo:
    """A tool as a server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None = None
    title: str | None = None
    task_support: str | None = None
    # Its results are checked against an output schema (by the SDK, with jsonschema).
    has_output_schema: bool = False


@dataclass(frozen=True)
class ResourceInfo:
    """A resource (or, with ``template``, a URI template) a server lists."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    template: bool = False


class OptionalMethod(Protocol):
    """Runs a method a server may lack: its result, or ``fallback`` (noted in the server's log)."""

    async def __call__(self, what: str, work: Awaitable[_T], fallback: _T) -> _T: ...


def tool_info(tool: types.Tool) -> McpToolInfo:
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    return McpToolInfo(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema) if tool.input_schema else {"type": "object", "properties": {}},
        annotations=annotations or None,
        title=tool.title,
        task_support=tool.execution.task_support if tool.execution else None,
        has_output_schema=tool.output_schema is not None,
    )


async def list_tools(client: Client) -> tuple[list[McpToolInfo], list[tuple[str, str]]]:
    tools: list[McpToolInfo] = []
    skipped: list[tuple[str, str]] = []
    if client.server_capabilities.tools is None:
        return tools, skipped  # a server of only prompts or resources: nothing to offer, not a failure
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        # "refresh": the SDK's response cache must not hand back a list we were told is stale.
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        for tool in page.tools:
            info = tool_info(tool)
            if info.task_support == "required":
                # This client does not run task-augmented calls; offering the tool would
                # only give the model a call that always fails.
                skipped.append((info.name, "needs task-augmented execution, which this client does not do"))
            else:
                tools.append(info)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools, skipped

async def list_prompts(client: Client) -> list[PromptInfo]:
    if client.server_capabilities.prompts is None:
        return []
    prompts: list[PromptInfo] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_prompts(cursor=cursor, cache_mode="refresh")
        prompts.extend(prompt_info(prompt) for prompt in page.prompts)
        cursor = page.next_cursor
        if cursor is None:
            break
    return prompts

async def list_resources(client: Client, optional: OptionalMethod) -> list[ResourceInfo]:
    if client.server_capabilities.resources is None:
        return []
    found: list[ResourceInfo] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_resources(cursor=cursor, cache_mode="refresh")
        found.extend(ResourceInfo(r.uri, r.name, r.description, r.mime_type, r.size) for r in page.resources)
        cursor = page.next_cursor
        if cursor is None:
            break
    templates = await optional("listing resource templates", client.list_resource_templates(cache_mode="refresh"), None)
    for template in getattr(templates, "resource_templates", None) or []:
        found.append(ResourceInfo(template.uri_template, template.name, template.description, template.mime_type,
                                  template=True))
    return found
