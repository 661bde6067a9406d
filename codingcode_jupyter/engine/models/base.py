"""The seam between the agent loop and whatever produces assistant messages.

The real adapter (`anthropic.py`) streams through the official SDK; the demo model
(`demo.py`) plays a scripted session offline. Both take the same request and return the
same response, so the loop, the tools and the approval pipeline are exercised alike.
"""

from __future__ import annotations

from typing import Callable, Literal, Protocol

from pydantic import BaseModel, Field

from ..events import Usage
from ..messages import ContentBlockParam, MessageParam, TextBlockParam, ToolUnionParam

__all__ = ["ModelRequest", "ModelResponse", "Model", "ModelError", "TextCallback"]


class ModelRequest(BaseModel):
    model: str
    system: list[TextBlockParam] = Field(default_factory=list)
    messages: list[MessageParam]
    tools: list[ToolUnionParam] = Field(default_factory=list)
    max_tokens: int = 8192


class ModelResponse(BaseModel):
    content: list[ContentBlockParam]
    stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)


TextCallback = Callable[[str], None]


class ModelError(Exception):
    """A model failure, classified so the loop knows what to do with it.

    ``kind``: "auth" (missing or rejected key), "overloaded" (worth retrying),
    "context_overflow" (compact and retry), "connection", "bad_request", "other".
    The message is one sentence a person can act on.
    """

    def __init__(self, message: str, *, kind: Literal["auth", "overloaded", "context_overflow", "connection", "bad_request", "other"] = "other") -> None:
        super().__init__(message)
        self.kind = kind


class Model(Protocol):
    name: str

    async def stream(self, request: ModelRequest, on_text: TextCallback) -> ModelResponse:
        """Produce one assistant message, calling ``on_text`` with each text delta as it arrives."""
        ...

    async def count_tokens(self, request: ModelRequest) -> int | None:
        """Exact input token count where the backend can tell, else None."""
        ...
