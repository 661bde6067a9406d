"""Agent-loop overhead: what the engine adds to each model round trip.

A 50-tool-call turn (one call per step) against the local Messages API server with zero
model latency, against the same number of bare SDK streaming requests of the same shape,
measured alone in the same run. The difference per round trip is the engine's overhead.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from common import Row, spread

from codingcode_jupyter.engine.agent import AgentLoop, Conversation
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.state import SessionState
from tests.engine.helpers import AllowAll, StaticTools, echo_tool, make_deps
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use

MODEL = "claude-sonnet-5"


async def _bare(model: AnthropicModel, steps: int) -> float:
    """`steps` streaming requests through the SDK alone, growing like the turn's conversation."""
    from codingcode_jupyter.engine.models.base import ModelRequest

    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    start = time.perf_counter()
    for i in range(steps):
        response = await model.stream(ModelRequest(model=MODEL, messages=messages, tools=[echo_tool().to_api()]), lambda t: None)
        messages.append({"role": "assistant", "content": response.content})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": response.content[-1]["id"] if response.content and response.content[-1]["type"] == "tool_use" else f"x{i}", "content": "echo: x"}]})
    return time.perf_counter() - start


async def _turn(model: AnthropicModel, steps: int, project: Path) -> float:
    loop = AgentLoop(model=model, tools=StaticTools([echo_tool()]), approver=AllowAll(), deps=make_deps(project),
                     session_id="bench", state=SessionState(), system="bench", max_steps=steps + 5)
    start = time.perf_counter()
    await loop.run(Conversation(), "go", 1)
    return time.perf_counter() - start


def measure(quick: bool) -> list[Row]:
    steps = 10 if quick else 50
    repeat = 3 if quick else 7
    step_reply = lambda body: Reply([tool_use("echo", {"text": "x"})]) if len(body["messages"]) < 2 * steps else Reply([text("done")])  # noqa: E731
    bare_samples, turn_samples = [], []
    with FakeAnthropic(default=step_reply) as server, tempfile.TemporaryDirectory() as project:
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url
        os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
        model = AnthropicModel(MODEL, max_retries=0)
        asyncio.run(_bare(model, 3))  # warm the connection pool and imports
        for _ in range(repeat):
            # A fresh model (and client) per sample, bound to this run's loop.
            bare_samples.append(asyncio.run(_bare(AnthropicModel(MODEL, max_retries=0), steps)))
            turn_samples.append(asyncio.run(_turn(AnthropicModel(MODEL, max_retries=0), steps, Path(project))))
    per_bare = [s / steps for s in bare_samples]
    per_turn = [s / steps for s in turn_samples]
    overhead_ms = (statistics.median(per_turn) - statistics.median(per_bare)) * 1000
    return [
        Row(
            name=f"agent-loop overhead per round trip ({steps} tool calls)",
            ours=spread(per_turn),
            baseline=spread(per_bare) + " bare SDK",
            result=f"{overhead_ms:+.2f} ms",
            target="< 5 ms",
            met=overhead_ms < 5,
            method=__doc__.strip().replace("\n", " "),
        )
    ]
