"""A local HTTP server that speaks the Anthropic Messages API wire format.

Tests script it with replies (streamed as SSE when the request asks for a stream, JSON
otherwise), HTTP errors, or mid-stream SSE error events, and read back every request it
received. It listens on 127.0.0.1 only; the real SDK reaches it through ANTHROPIC_BASE_URL.

``dialect`` makes it speak a cloud provider's wire format instead, for the SDK's own clients:
"bedrock" (``POST /model/{id}/invoke-with-response-stream``, the stream in
``application/vnd.amazon.eventstream`` frames each carrying one SSE event's JSON, base64, as
Amazon Bedrock sends it; ``/model/{id}/invoke`` unstreamed) or "vertex" (``POST
/projects/{p}/locations/{r}/publishers/anthropic/models/{model}:streamRawPredict``, SSE as
Anthropic's). Every request's path and headers are kept (``paths``, ``headers``).

Run it standalone (for a kernel test or a browser test) with
``python -m tests.fakes.anthropic_server --script FILE.json --port-file F``.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import re
import ssl
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Literal, Union
from urllib.parse import unquote

__all__ = ["Reply", "HTTPError", "StreamError", "Review", "FakeAnthropic", "text", "tool_use", "is_review"]

_ids = itertools.count(1)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):04d}", "name": name, "input": input}


@dataclass
class Reply:
    """One assistant message."""

    content: list[dict[str, Any]]
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})
    # Seconds to sleep between SSE events (for interrupt tests and throttling tests).
    delay: float = 0.0
    chunk: int = 8  # characters per text delta

    def resolved_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in self.content) else "end_turn"


@dataclass
class HTTPError:
    status: int
    type: str = "api_error"
    message: str = "scripted failure"
    # Sent as ``retry-after-ms``: the SDK waits that long before retrying instead of its backoff.
    retry_after_ms: int | None = None


@dataclass
class StreamError:
    """Starts a stream, sends ``text_before`` then an SSE ``error`` event (e.g. overloaded)."""

    type: str = "overloaded_error"
    message: str = "Overloaded"
    text_before: str = ""


@dataclass
class Review:
    """Auto mode's reviewer answering: a review_decision call (``decision`` None: ``raw`` content as is,
    for answers that do not parse), after ``delay`` seconds (for the reviewer's timeout)."""

    decision: str | None = "allow"
    reason: str = "ordinary work"
    delay: float = 0.0
    raw: list[dict[str, Any]] | None = None

    def reply(self) -> Reply:
        if self.decision is None:
            return Reply(self.raw or [text("I think it is fine.")], stop_reason="end_turn",
                         usage={"input_tokens": 400, "output_tokens": 12})
        return Reply([tool_use("review_decision", {"decision": self.decision, "reason": self.reason})],
                     usage={"input_tokens": 400, "output_tokens": 20, "cache_read_input_tokens": 900})


def is_review(body: dict[str, Any]) -> bool:
    """A request from auto mode's reviewer (it forces its review_decision tool)."""
    choice = body.get("tool_choice") or {}
    return choice.get("type") == "tool" and choice.get("name") == "review_decision"


Scripted = Union[Reply, HTTPError, StreamError, Review, Callable[[dict[str, Any]], Any]]


class FakeAnthropic:
    """The server; use as a context manager. ``base_url`` goes into ANTHROPIC_BASE_URL."""

    def __init__(self, script: list[Scripted] | None = None, *, default: Scripted | None = None,
                 tls: ssl.SSLContext | None = None,
                 dialect: Literal["anthropic", "bedrock", "vertex"] = "anthropic") -> None:
        self.script: list[Scripted] = list(script or [])
        self.dialect = dialect
        self.paths: list[str] = []
        # Served over TLS with this (server) context: base_url is https, as the API's is.
        self.tls = tls
        self.default = default
        self.requests: list[dict[str, Any]] = []
        # The reviewer's requests and answers, apart from the turn's own (see is_review): scripted
        # with add_reviews, or answered by ``review_default`` (a Review, or a callable of the body).
        self.reviews: list[Scripted] = []
        self.review_default: Scripted | None = None
        self.review_requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.count_token_requests: list[dict[str, Any]] = []
        # Every request as (method, path, the client's port): one port per connection it came on.
        self.seen: list[tuple[str, str, int]] = []
        self.head_headers: list[dict[str, str]] = []
        # Called with (event name, data) right after each SSE event is written and flushed
        # (benchmarks time what the client shows against it).
        self.on_sent: Callable[[str, dict[str, Any]], None] | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def route(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The Messages request a POST to ``path`` is in this dialect (model and stream as the
        Anthropic API has them in the body), or None for a path the provider does not serve."""
        if self.dialect == "bedrock":
            match = re.fullmatch(r"/model/([^/]+)/(invoke|invoke-with-response-stream)", path)
            if match is None:
                return None
            return {**body, "model": unquote(match[1]), "stream": match[2] != "invoke"}
        if self.dialect == "vertex":
            match = re.fullmatch(r"/v1/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/([^/:]+)"
                                 r":(rawPredict|streamRawPredict)", path)
            if match is None:
                return None
            return {**body, "model": unquote(match[1]), "stream": match[2] == "streamRawPredict"}
        return body if path.endswith("/v1/messages") else None

    def ports(self, method: str) -> list[int]:
        """The client port of each ``method`` request, in order: equal ports, one connection."""
        return [port for seen_method, _, port in self.seen if seen_method == method]

    # -- scripting ------------------------------------------------------------------------

    def add(self, *items: Scripted) -> None:
        with self._lock:
            self.script.extend(items)

    def add_reviews(self, *items: Scripted) -> None:
        with self._lock:
            self.reviews.extend(items)

    def _next(self, body: dict[str, Any]) -> Any:
        with self._lock:
            if is_review(body):
                item = self.reviews.pop(0) if self.reviews else self.review_default
            else:
                item = self.script.pop(0) if self.script else self.default
        if item is None:
            return HTTPError(500, "api_error", "the fake server has no scripted reply left")
        if callable(item) and not isinstance(item, (Reply, HTTPError, StreamError, Review)):
            item = item(body)
        if isinstance(item, Review):
            if item.delay:
                time.sleep(item.delay)
            item = item.reply()
        return item

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "FakeAnthropic":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # As servers in front of the API do: each SSE event leaves when written. With Nagle's
            # algorithm a kept connection held an event back for the client's delayed ACK (40 ms).
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:  # noqa: N802
                # As the API answers a path it does not serve, the connection kept.
                fake.seen.append(("HEAD", self.path, self.client_address[1]))
                fake.head_headers.append(dict(self.headers))
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                fake.seen.append(("POST", self.path, self.client_address[1]))
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0]
                fake.paths.append(path)
                if path.endswith("/v1/messages/count_tokens") or path.endswith("/count-tokens:rawPredict"):
                    fake.count_token_requests.append(body)
                    tokens = len(json.dumps(body)) // 4
                    return self._json(200, {"input_tokens": tokens})
                routed = fake.route(path, body)
                if routed is None:
                    return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                body = routed
                with fake._lock:
                    if is_review(body):
                        fake.review_requests.append(body)
                    else:
                        fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                item = fake._next(body)
                if isinstance(item, HTTPError):
                    return self._json(
                        item.status, {"type": "error", "error": {"type": item.type, "message": item.message}},
                        retry_after_ms=item.retry_after_ms,
                    )
                if isinstance(item, StreamError):
                    return self._stream_error(body, item)
                assert isinstance(item, Reply), f"unscriptable item {item!r}"
                if body.get("stream"):
                    return self._stream(body, item)
                return self._json(200, _message_json(body, item))

            def _json(self, status: int, payload: dict[str, Any], retry_after_ms: int | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if status == 529 or status >= 500:
                    self.send_header("x-should-retry", "true")
                if retry_after_ms is not None:
                    self.send_header("retry-after-ms", str(retry_after_ms))
                self.end_headers()
                self.wfile.write(data)

            def _start_sse(self) -> None:
                # As the API streams over HTTP/1.1: chunked, the connection kept for the next request.
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()

            def _end_sse(self) -> None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _send(self, event: str, data: dict[str, Any], delay: float = 0.0) -> None:
                if delay:
                    time.sleep(delay)
                payload = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
                self.wfile.flush()
                if fake.on_sent is not None:
                    fake.on_sent(event, data)

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                if fake.dialect == "bedrock":
                    return self._event_stream(body, reply)
                self._start_sse()
                try:
                    for event, data in _sse_events(body, reply):
                        self._send(event, data, reply.delay)
                    self._end_sse()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (an interrupt): that is the point of the test

            def _event_stream(self, body: dict[str, Any], reply: Reply) -> None:
                # Bedrock's framing: each SSE event's JSON, base64, in a `chunk` event of its own frame.
                self.send_response(200)
                self.send_header("content-type", "application/vnd.amazon.eventstream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                try:
                    for _event, data in _sse_events(body, reply):
                        if reply.delay:
                            time.sleep(reply.delay)
                        payload = json.dumps({"bytes": base64.b64encode(json.dumps(data).encode()).decode()}).encode()
                        frame = event_stream_frame({":event-type": "chunk", ":content-type": "application/json",
                                                    ":message-type": "event"}, payload)
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                        self.wfile.flush()
                    self._end_sse()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _stream_error(self, body: dict[str, Any], item: StreamError) -> None:
                self._start_sse()
                partial = Reply([text(item.text_before)] if item.text_before else [])
                events = list(_sse_events(body, partial))
                for event, data in events[:-3] if item.text_before else events[:1]:
                    self._send(event, data)
                self._send("error", {"type": "error", "error": {"type": item.type, "message": item.message}})
                self._end_sse()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        # A short poll: shutdown() waits up to one poll interval (0.5 s by default), once per test.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "FakeAnthropic":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls is not None else 'http'}://{host}:{port}"


def event_stream_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One ``application/vnd.amazon.eventstream`` message: prelude (total and headers lengths, CRC32),
    string headers, the payload, the message's CRC32."""
    encoded = b"".join(struct.pack(">B", len(name)) + name.encode() + struct.pack(">BH", 7, len(value)) + value.encode()
                       for name, value in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _message_json(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    return {
        "id": f"msg_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": reply.content,
        "stop_reason": reply.resolved_stop_reason(),
        "stop_sequence": None,
        "usage": reply.usage,
    }


def _sse_events(body: dict[str, Any], reply: Reply):
    message = _message_json(body, reply)
    start = {**message, "content": [], "stop_reason": None, "usage": {**reply.usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply.content):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            value = block["text"]
            for i in range(0, len(value), reply.chunk):
                yield "content_block_delta", {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": value[i : i + reply.chunk]},
                }
        elif block["type"] == "tool_use":
            yield "content_block_start", {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
            }
            raw = json.dumps(block["input"])
            for i in range(0, len(raw), 16):
                yield "content_block_delta", {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": raw[i : i + 16]},
                }
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": reply.resolved_stop_reason(), "stop_sequence": None},
        "usage": {"output_tokens": reply.usage.get("output_tokens", 0)},
    }
    yield "message_stop", {"type": "message_stop"}


def _load_script(path: Path) -> list[Scripted]:
    """A JSON list of replies: {"content": [...]} | {"http_error": status, ...} | {"stream_error": type}."""
    items: list[Scripted] = []
    for raw in json.loads(path.read_text()):
        if "http_error" in raw:
            items.append(HTTPError(raw["http_error"], raw.get("type", "api_error"), raw.get("message", "")))
        elif "stream_error" in raw:
            items.append(StreamError(raw["stream_error"], raw.get("message", "")))
        else:
            content = [
                tool_use(b["name"], b["input"], b.get("id")) if b["type"] == "tool_use" else b for b in raw["content"]
            ]
            items.append(Reply(content, delay=raw.get("delay", 0.0), chunk=raw.get("chunk", 8)))
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--requests-file", type=Path)
    args = parser.parse_args()
    fake = FakeAnthropic(_load_script(args.script)).start()
    args.port_file.write_text(fake.base_url)
    try:
        while True:
            time.sleep(0.2)
            if args.requests_file:
                args.requests_file.write_text(json.dumps(fake.requests))
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
