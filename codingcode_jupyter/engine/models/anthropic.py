"""The real model: the official anthropic SDK's streaming Messages API."""

from __future__ import annotations

import os
import time
from typing import Any

from .. import telemetry
from ..events import Usage
from ..messages import wire_blocks
from .base import ModelError, ModelRequest, ModelResponse, TextCallback

__all__ = ["AnthropicModel", "DEFAULT_MODEL", "warm_up"]

DEFAULT_MODEL = "claude-sonnet-5"


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    return Usage(
        input_tokens=getattr(raw, "input_tokens", 0) or 0,
        output_tokens=getattr(raw, "output_tokens", 0) or 0,
        cache_creation_input_tokens=getattr(raw, "cache_creation_input_tokens", 0) or 0,
        cache_read_input_tokens=getattr(raw, "cache_read_input_tokens", 0) or 0,
    )


class AnthropicModel:
    """Streams one assistant message per call; maps SDK errors to :class:`ModelError`."""

    def __init__(self, name: str = DEFAULT_MODEL, *, client: Any = None, max_retries: int = 2) -> None:
        self.name = name
        self._client = client
        self._max_retries = max_retries

    @property
    def client(self) -> Any:
        if self._client is not None:
            return self._client
        # Shared with the other turns: their TLS context and open connection are reused.
        from .clients import shared_client

        return shared_client(self._max_retries)

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
        }
        if request.system:
            params["system"] = request.system
        if request.tools:
            params["tools"] = request.tools
        return params

    async def stream(self, request: ModelRequest, on_text: TextCallback) -> ModelResponse:
        started = time.perf_counter()
        try:
            message = await self._stream_once(request, on_text)
        except Exception as error:  # mapped below; CancelledError is BaseException and passes
            if not self._retry_with_new_key(error):
                raise self._failed(request, error, started) from error
            try:
                message = await self._stream_once(request, on_text)
            except Exception as again:
                raise self._failed(request, again, started, attempt=2) from again
        usage = _usage(message.usage)
        if telemetry.enabled():
            from .pricing import cost_usd

            telemetry.api_request(request.model, usage, cost_usd(request.model, usage),
                                  (time.perf_counter() - started) * 1000)
        return ModelResponse(
            content=wire_blocks(block.model_dump(mode="json", exclude_none=True) for block in message.content),
            stop_reason=message.stop_reason,
            usage=usage,
        )

    @staticmethod
    def _failed(request: ModelRequest, error: Exception, started: float, attempt: int = 1) -> ModelError:
        mapped = _map_error(error)
        telemetry.api_error(request.model, str(mapped), getattr(error, "status_code", None),
                            (time.perf_counter() - started) * 1000, attempt)
        return mapped

    async def _stream_once(self, request: ModelRequest, on_text: TextCallback) -> Any:
        async with self.client.messages.stream(**self._params(request)) as stream:
            async for event in stream:
                if event.type == "text":
                    on_text(event.text)
            return await stream.get_final_message()

    def _retry_with_new_key(self, error: Exception) -> bool:
        """A 401 with an apiKeyHelper configured: its key expired, so it runs again and the request is
        sent once more (as Claude Code does); a client given by the caller is the caller's to renew."""
        import anthropic

        from .clients import has_key_helper, refresh_helper_key

        if self._client is not None or not isinstance(error, anthropic.AuthenticationError) or not has_key_helper():
            return False
        refresh_helper_key()
        return True

    async def count_tokens(self, request: ModelRequest) -> int | None:
        params = self._params(request)
        params.pop("max_tokens", None)
        try:
            result = await self.client.messages.count_tokens(**params)
        except Exception:
            return None
        return int(result.input_tokens)


def _error_type(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return str(inner.get("type", ""))
    return ""


def _error_message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(error)


def _map_error(error: Exception) -> ModelError:
    import anthropic

    if isinstance(error, TypeError) and "authentication" in str(error).lower():
        return ModelError(
            "No Anthropic API key: set ANTHROPIC_API_KEY in the kernel's environment "
            "(in a notebook `%agent login`, which keeps it out of the output), or use the offline demo with --model demo.",
            kind="auth",
        )
    from .clients import KeyHelperError

    if isinstance(error, KeyHelperError):
        return ModelError(f"{error}; fix the command in your settings (apiKeyHelper) or set ANTHROPIC_API_KEY.",
                          kind="auth")
    if isinstance(error, anthropic.AuthenticationError):
        return ModelError(
            "The Anthropic API rejected the key (401): check ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL if set).",
            kind="auth",
        )
    if isinstance(error, anthropic.PermissionDeniedError):
        return ModelError(f"The Anthropic API refused the request (403): {_error_message(error)}", kind="auth")
    if isinstance(error, anthropic.APIConnectionError):
        base = os.environ.get("ANTHROPIC_BASE_URL", "the Anthropic API")
        return ModelError(f"Could not reach {base} after retries: {error}", kind="connection")
    if isinstance(error, anthropic.APIStatusError):
        kind_name = _error_type(error)
        message = _error_message(error)
        if kind_name == "overloaded_error" or error.status_code == 529:
            return ModelError(f"The Anthropic API is overloaded: {message}", kind="overloaded")
        lowered = message.lower()
        if error.status_code in (400, 413) and ("prompt is too long" in lowered or "context" in lowered and "exceed" in lowered):
            return ModelError(f"The conversation no longer fits the model's context window: {message}", kind="context_overflow")
        if error.status_code == 400:
            return ModelError(f"The Anthropic API rejected the request (400): {message}", kind="bad_request")
        return ModelError(f"The Anthropic API failed ({error.status_code} {kind_name or 'error'}): {message}", kind="other")
    return ModelError(f"Model request failed: {type(error).__name__}: {error}", kind="other")


# One streamed reply, as the Messages API sends it: what warm_up() feeds the SDK.
_WARM_UP_EVENTS = (
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_warm_up", "type": "message", "role": "assistant", "model": "warm-up", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": "toolu_warm_up", "name": "warm_up", "input": {}}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
        "type": "input_json_delta", "partial_json": "{}"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                       "usage": {"output_tokens": 1}}),
    ("message_stop", {"type": "message_stop"}),
)

# Shaped as the agent loop's requests are (a system block and tools with cache breakpoints),
# so the SDK prepares the parameter types a real turn sends.
_WARM_UP_REQUEST = ModelRequest(
    model="warm-up", max_tokens=1,
    system=[{"type": "text", "text": "warm-up", "cache_control": {"type": "ephemeral"}}],
    messages=[{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}],
    tools=[{"name": "warm_up", "description": "warm-up", "cache_control": {"type": "ephemeral"},
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}],
)


def warm_up() -> None:
    """Stream one canned reply through the SDK, in memory (nothing leaves the process); any thread.

    The SDK builds much of itself on first use: the validators of its stream events and
    messages, its HTTP client's TLS context, a few imports. With a key set, the client the
    first turn will take (:mod:`.clients`) is made too. Done here ahead of time (the
    notebook does it while the person types) the first real request costs what later ones do.
    """
    import json

    import anyio
    import httpx2
    from anthropic import AsyncAnthropic

    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in _WARM_UP_EVENTS).encode()

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async def stream_once() -> None:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer)) as http:
            client = AsyncAnthropic(api_key="warm-up", base_url="http://warm-up.invalid", http_client=http, max_retries=0)
            model = AnthropicModel("warm-up", client=client)
            await model.stream(_WARM_UP_REQUEST, lambda text: None)

    # Run by anyio, as the HTTP transport is: its event loop backend loads here, not in the first turn.
    anyio.run(stream_once)
    anyio.connect_tcp  # noqa: B018 -- what the transport connects with, a module anyio loads on first use
    from .clients import has_api_key, prepare

    if has_api_key():
        prepare()  # the client the first turn sends with: its TLS context is loaded here, not in that turn
