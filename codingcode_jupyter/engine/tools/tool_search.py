"""tool_search: find deferred tools by what they do, and offer them from the next step on.

Deferred tools are kept out of the tools block until needed (a large MCP server can have
dozens). The model asks in words; the tools are ranked with BM25 over their name tokens,
short description, description and parameter names (a tool whose name matches counts more
than one that mentions the word in passing). Found tools are added to the session's
``discovered_tools`` by wire name and stay offered for the rest of the session.
"""

from __future__ import annotations

import re
from typing import Callable

from pydantic import BaseModel, Field

from ..state import SessionState
from .access import ToolAccess
from .base import ToolContext, ToolDefinition

__all__ = ["TOOL_SEARCH_NAME", "ToolSearchArgs", "tokenize", "rank_tools", "make_tool_search"]

TOOL_SEARCH_NAME = "tool_search"
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# How much more a word in the name counts than one in the long description.
_NAME_WEIGHT = 3
_SHORT_WEIGHT = 2


def _stem(word: str) -> str:
    # Just enough folding that "files" finds "file" and "searching" finds "search".
    for suffix in ("ing", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-case word stems; ``_``, ``-``, ``:`` and camelCase all split words."""
    tokens = []
    for word in _WORD.findall(text):
        for part in _CAMEL.findall(word) or [word]:
            tokens.append(_stem(part.lower()))
    return tokens


def _document(tool: ToolDefinition) -> list[str]:
    names = tokenize(tool.display_name or tool.name)
    if tool.name != tool.display_name:
        names += tokenize(tool.name)
    params = list((tool.input_schema.get("properties") or {}).keys())
    return (
        names * _NAME_WEIGHT
        + tokenize(tool.short_description or "") * _SHORT_WEIGHT
        + tokenize(tool.description)
        + [token for param in params for token in tokenize(param)]
    )


def rank_tools(query: str, tools: list[ToolDefinition], limit: int) -> list[ToolDefinition]:
    """The tools that share a word with the query, best first (ties keep the given order)."""
    # Imported on the first search: rank_bm25 loads numpy, which most sessions never need.
    from rank_bm25 import BM25Plus

    words = tokenize(query)
    if not words or not tools:
        return []
    documents = [_document(tool) for tool in tools]
    # BM25Plus keeps idf positive even on a tiny corpus (Okapi's goes negative when a word
    # is in most documents); it also scores non-matching documents above zero, hence the
    # explicit "shares a word" filter.
    scores = BM25Plus(documents).get_scores(words)
    wanted = set(words)
    matching = [index for index, document in enumerate(documents) if wanted & set(document)]
    matching.sort(key=lambda index: (-scores[index], index))
    return [tools[index] for index in matching[:limit]]


class ToolSearchArgs(BaseModel):
    """Arguments of tool_search."""

    query: str = Field(min_length=1, description="Words describing the tool you need, e.g. 'create github issue'.")
    max_results: int = Field(default=5, ge=1, le=20, description="How many tools to return at most.")


_DESCRIPTION = (
    "Search for additional tools that are available but not loaded yet (for example tools of MCP "
    "servers). Describe what you want to do in a few words; matching tools are returned with a short "
    "description and can be called from your next step on."
)


def _named(query: str, pool: list[ToolDefinition]) -> list[ToolDefinition]:
    """The tools a query names exactly: by display name, wire name, or Claude Code's name (``mcp__server__tool``)."""
    from ..claude.names import claude_names

    wanted = {part.strip() for part in query.replace(",", " ").split() if part.strip()}
    return [tool for tool in pool
            if wanted & {tool.display_name or tool.name, tool.name,
                         *claude_names(tool.display_name or tool.name, mcp=tool.source == "mcp")}]


def make_tool_search(
    candidates: Callable[[], list[ToolDefinition]], state: SessionState | None = None
) -> ToolDefinition:
    """A tool_search over ``candidates()`` (the deferred tools visible to this agent).

    ``state`` is where found tools are recorded when the call's context carries none.
    """

    async def execute(args: ToolSearchArgs, ctx: ToolContext) -> str:
        target = ctx.state if ctx.state is not None else state
        pool = candidates()
        if not pool:
            return "There are no additional tools to search."
        found = _named(args.query, pool) or rank_tools(args.query, pool, args.max_results)
        if not found:
            names = ", ".join(tool.display_name or tool.name for tool in pool[:30])
            more = f" and {len(pool) - 30} more" if len(pool) > 30 else ""
            return f"No tool matches {args.query!r}. Tools that can be searched: {names}{more}."
        lines = [f"Found {len(found)} tool(s); they can be called from your next step on:"]
        for tool in found:
            label = tool.name if tool.name == tool.display_name else f"{tool.name} ({tool.display_name})"
            lines.append(f"- {label}: {tool.short_description}")
            if target is not None:
                target.discovered_tools.add(tool.name)
        return "\n".join(lines)

    return ToolDefinition(
        name=TOOL_SEARCH_NAME,
        description=_DESCRIPTION,
        short_description="Find and load additional tools by description",
        parameters=ToolSearchArgs,
        execute=execute,
        access=ToolAccess(key="query", read_only=True),
        source="builtin",
    )
