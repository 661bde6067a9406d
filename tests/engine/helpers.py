"""Small pieces engine tests share: an approver that allows everything, an event recorder."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from codingcode_jupyter.engine.approval.types import Decision
from codingcode_jupyter.engine.tools.base import ToolContext, ToolDefinition


class AllowAll:
    def __init__(self) -> None:
        self.outcomes: list[tuple[str, str]] = []

    async def decide(self, call, ctx, ask) -> Decision:
        return Decision(kind="allow", input=call.input, layer="test", by="test")

    def record_outcome(self, call, ctx, decision, outcome, duration_ms) -> None:
        self.outcomes.append((call.tool_use_id, outcome))


class Recorder(list):
    def __call__(self, event: Any) -> None:
        self.append(event)

    def of(self, type_: str) -> list[Any]:
        return [e for e in self if e.type == type_]


class StaticTools:
    def __init__(self, tools: list[ToolDefinition]) -> None:
        self._tools = tools

    def offered(self) -> list[ToolDefinition]:
        return list(self._tools)

    def lookup(self, name: str) -> ToolDefinition | None:
        return next((t for t in self._tools if t.name == name), None)


class EchoArgs(BaseModel):
    text: str
    delay: float = 0.0


def echo_tool(name: str = "echo", *, read_only: bool = True, log: list | None = None) -> ToolDefinition:
    async def execute(args: EchoArgs, ctx: ToolContext) -> str:
        if log is not None:
            log.append(("start", args.text))
        await asyncio.sleep(args.delay)
        if log is not None:
            log.append(("end", args.text))
        return f"echo: {args.text}"

    return ToolDefinition(name=name, description="Echo the text back.", parameters=EchoArgs, execute=execute, read_only=read_only)
