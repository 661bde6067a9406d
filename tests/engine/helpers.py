"""Small pieces engine tests share: an approver that allows everything, an event recorder,
the session parts a tool context carries."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from codingcode_jupyter.engine.approval.types import Verdict
from codingcode_jupyter.engine.deps import SessionDeps
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.tools.base import ToolContext, ToolDefinition


def write_settings(project: Path, settings: dict[str, Any], name: str = "settings.json") -> Path:
    """Write ``settings`` as the project's `.codingcode/<name>`."""
    path = Path(project) / ".codingcode" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))
    return path


def make_deps(project: Path, *, settings: dict[str, Any] | None = None, sandbox: Any = None, **parts: Any) -> SessionDeps:
    """Session parts for ``project``: its settings files (``settings`` written first), a fixed sandbox."""
    if settings is not None:
        write_settings(project, settings)
    factory = (lambda _settings, _allowed: sandbox) if sandbox is not None else None
    return SessionDeps(project=Path(project), settings=ProjectSettings(Path(project)), sandbox_factory=factory, **parts)


def tool_context(project: Path, *, events: list | None = None, deps: SessionDeps | None = None, **fields: Any) -> ToolContext:
    """A tool context in ``project`` (session s1, turn 1) whose events go to ``events``."""
    sink = events.append if events is not None else (lambda event: None)
    return ToolContext.standalone(Path(project), session_id="s1", turn_id=1, tool_use_id="t1", emit=sink,
                       deps=deps if deps is not None else make_deps(project), **fields)


class AllowAll:
    def __init__(self) -> None:
        self.outcomes: list[tuple[str, str]] = []

    async def decide(self, call, ctx, ask) -> Verdict:
        return Verdict(kind="allow", input=call.input, layer="test", by="test")

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
