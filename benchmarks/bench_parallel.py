"""Parallel read-only tools: 8 fetch_url calls in one assistant message.

A local HTTP server answers every request after 200 ms. One turn whose single assistant
message holds 8 fetch_url calls, against the same turn with one call, both through the real
loop, SDK and local Messages API server in the same run. Read-only calls run concurrently,
so the ratio should stay near 1.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from common import Row, spread

from codingcode_jupyter.engine.agent import AgentLoop, Conversation
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.web import fetch_url_tool
from tests.engine.helpers import AllowAll, StaticTools, make_deps
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use

LATENCY = 0.2


class _Server(ThreadingHTTPServer):
    request_queue_size = 64  # the default backlog of 5 would make the 8 concurrent connects queue


class _Slow(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        time.sleep(LATENCY)
        body = b"slow page"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def _turn(calls: int, url: str, project: Path) -> float:
    loop = AgentLoop(model=AnthropicModel("claude-sonnet-5", max_retries=0), tools=StaticTools([fetch_url_tool()]),
                     approver=AllowAll(), deps=make_deps(project), session_id="bench", state=SessionState())
    start = time.perf_counter()
    await loop.run(Conversation(), "fetch", 1)
    return time.perf_counter() - start


def measure(quick: bool) -> list[Row]:
    repeat = 2 if quick else 5
    web = _Server(("127.0.0.1", 0), _Slow)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{web.server_address[1]}/page"
    one, eight = [], []
    try:
        with FakeAnthropic() as api, tempfile.TemporaryDirectory() as project:
            os.environ["ANTHROPIC_BASE_URL"] = api.base_url
            os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
            for sample in range(repeat + 1):  # the first pair warms imports and connections
                api.add(Reply([tool_use("fetch_url", {"url": f"{url}?0"})]), Reply([text("ok")]))
                single = asyncio.run(_turn(1, url, Path(project)))
                api.add(Reply([tool_use("fetch_url", {"url": f"{url}?{i}"}) for i in range(8)]), Reply([text("ok")]))
                parallel = asyncio.run(_turn(8, url, Path(project)))
                if sample:
                    one.append(single)
                    eight.append(parallel)
    finally:
        web.shutdown()
    ratio = statistics.median(eight) / statistics.median(one)
    return [
        Row(
            name="8 parallel fetch_url (200 ms each) vs 1",
            ours=spread(eight),
            baseline=spread(one) + " one call",
            result=f"{ratio:.2f}x",
            target="< 1.5x",
            met=ratio < 1.5,
            method=__doc__.strip().replace("\n", " "),
        )
    ]
