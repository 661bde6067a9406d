"""First streamed text: the server sends the first SSE text delta → its text is visible on IOPub.

A real ipykernel (this venv's) runs ``%%agent`` cells against the local Messages API server,
with the display throttle at its default (20 updates a second). Each reply streams its text
as 16-character deltas 5 ms apart, the first carrying a marker. The server records
``time.time()`` right after writing and flushing the first text delta; the harness records
``time.time()`` when the first IOPub message of the cell holding the marker arrives (the
widget update that shows it). One sample per cell, after a warm-up cell. Baseline, in the same
kernel: a cell that streams the same reply with the bare SDK
(``AsyncAnthropic().messages.stream``) and prints each text delta with ``flush=True``, the
floor any client in this kernel pays for SSE parsing plus IOPub.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path

from common import Row, spread, start_kernel
from kernel_clock import first_message_with, run_quietly

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text

BARE_CELL = '''
import anthropic as __bench_anthropic

async def __bench_bare_print():
    client = __bench_anthropic.AsyncAnthropic(max_retries=0)
    async with client.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "stream"}]
    ) as stream:
        async for event in stream:
            if event.type == "text":
                print(event.text, end="", flush=True)
    await client.close()
'''


class FirstDelta:
    """When the server flushed the first text delta of the current request."""

    def __init__(self) -> None:
        self.at: float | None = None
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self.at = None

    def __call__(self, event: str, data: dict) -> None:
        if event == "content_block_delta" and data.get("delta", {}).get("type") == "text_delta":
            with self._lock:
                if self.at is None:
                    self.at = time.time()


def _reply(marker: str) -> Reply:
    return Reply([text(marker + " and then the rest of a short answer, a few deltas long.")], chunk=16, delay=0.005)


def _sample(kernel, fake: FakeAnthropic, first: FirstDelta, code: str, marker: str) -> float:
    first.reset()
    fake.add(_reply(marker))
    msg_id = kernel.execute(code)
    seen = first_message_with(kernel, msg_id, marker)
    reply = kernel.reply(msg_id, timeout=120)
    if reply["status"] != "ok" or first.at is None:
        raise RuntimeError(f"cell failed: {kernel.text_output(msg_id)[-2000:]}")
    return seen - first.at


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def measure(quick: bool) -> list[Row]:
    samples = 10 if quick else 40
    ours, bare = [], []
    first = FirstDelta()
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as fake:
        fake.on_sent = first
        project = Path(tmp) / "project"
        project.mkdir()
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
               "CODINGCODE_USER_DIR": str(Path(tmp) / "user")}
        kernel = start_kernel(project, env)
        try:
            run_quietly(kernel, "%load_ext codingcode_jupyter\n" + BARE_CELL)
            _sample(kernel, fake, first, "%%agent\nwarm up", "warm-agent")
            _sample(kernel, fake, first, "await __bench_bare_print()", "warm-bare")
            for n in range(samples):
                ours.append(_sample(kernel, fake, first, f"%%agent\nanswer {n}", f"agent-{n}-marker"))
                bare.append(_sample(kernel, fake, first, "await __bench_bare_print()", f"bare-{n}-marker"))
        finally:
            kernel.close()
    median = statistics.median(ours) * 1000
    return [Row(
        name=f"first SSE text delta at the server → its text on IOPub ({samples} cells, 20 updates/s throttle)",
        ours=spread(ours) + f"; p95 {_p95(ours) * 1000:.1f} ms",
        baseline=spread(bare) + f"; p95 {_p95(bare) * 1000:.1f} ms bare SDK, print per delta",
        result=f"median {median:.1f} ms, p95 {_p95(ours) * 1000:.1f} ms ({median - statistics.median(bare) * 1000:+.1f} ms over the bare SDK)",
        target="<= 60 ms median",
        met=median <= 60,
        method=__doc__.strip().replace("\n", " "),
    )]
