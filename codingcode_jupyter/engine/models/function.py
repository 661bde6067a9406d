"""A model whose answers a Python function writes: the real loop, offline, in-process.

For tests (and embedders) that exercise the loop, the tools and approval without the wire
format: the function receives each request and returns the assistant message's content
blocks (or a :class:`~.base.ModelResponse`, or raises :class:`~.base.ModelError`). Text
blocks are streamed to the loop as one delta each. Where the SDK's own behaviour is the
point (retries, SSE framing, errors on the wire), use the local Messages API server instead.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Awaitable, Callable, Union

from ..events import Usage
from ..messages import ContentBlockParam, wire_blocks
from .base import ModelRequest, ModelResponse, TextCallback

__all__ = ["FunctionModel", "ModelFunction"]

# What the function writes: the assistant message's blocks as the wire has them (dicts).
Content = list[dict[str, Any]]
ModelFunction = Callable[[ModelRequest], Union[Content, ModelResponse, Awaitable[Union[Content, ModelResponse]]]]


class FunctionModel:
    """Implements :class:`~.base.Model` by calling ``fn`` once per request; ``requests`` keeps them."""

    def __init__(self, fn: ModelFunction, *, name: str = "function") -> None:
        self.fn = fn
        self.name = name
        self.requests: list[ModelRequest] = []
        self._ids = 0

    async def count_tokens(self, request: ModelRequest) -> int | None:
        return len(json.dumps(request.model_dump())) // 4

    async def stream(self, request: ModelRequest, on_text: TextCallback) -> ModelResponse:
        self.requests.append(request)
        answer = self.fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        response = answer if isinstance(answer, ModelResponse) else self._response(list(answer), request)
        for block in response.content:
            if block["type"] == "text" and block.get("text"):
                on_text(block["text"])
        return response

    def _response(self, content: Content, request: ModelRequest) -> ModelResponse:
        blocks: list[dict[str, Any]] = []
        for block in content:
            if block.get("type") == "tool_use" and not block.get("id"):
                self._ids += 1
                block = {**block, "id": f"toolu_fn_{self._ids:04d}"}
            blocks.append(block)
        calls = any(block.get("type") == "tool_use" for block in blocks)
        usage = Usage(input_tokens=len(json.dumps(request.messages)) // 4, output_tokens=1)
        typed: list[ContentBlockParam] = wire_blocks(blocks)
        return ModelResponse(content=typed, stop_reason="tool_use" if calls else "end_turn", usage=usage)
