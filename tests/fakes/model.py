"""An in-process scripted model for loop tests that do not need the wire format."""

from __future__ import annotations

from typing import Any

from codingcode_jupyter.engine.models.base import ModelRequest
from codingcode_jupyter.engine.models.function import FunctionModel


def scripted(*steps: list[dict[str, Any]], name: str = "claude-sonnet-5") -> FunctionModel:
    """A model answering each request with the next content list of ``steps`` (then a plain "done")."""
    queue = list(steps)

    def answer(request: ModelRequest) -> list[dict[str, Any]]:
        return queue.pop(0) if queue else [{"type": "text", "text": "done"}]

    return FunctionModel(answer, name=name)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(name: str, tool_input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": tool_input}
    if id is not None:
        block["id"] = id
    return block
