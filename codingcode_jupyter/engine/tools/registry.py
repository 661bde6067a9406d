"""The tools a process knows: built-ins, custom tools registered from cells, MCP tools.

Registering a name again replaces the tool in place (re-running a cell works, and the
order — and so the prompt cache — stays stable).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from .base import ToolDefinition

__all__ = ["ToolRegistry"]


class ToolRegistry:
    def __init__(self, tools: Iterable[ToolDefinition] = ()) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: ToolDefinition) -> ToolDefinition:
        self._tools[tool.name] = tool
        return tool

    def remove(self, name: str) -> bool:
        return self._tools.pop(name, None) is not None

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)
