"""Streaming into the cell: 20,000 text deltas through a ``%%agent`` cell in a real kernel.

A real ipykernel runs ``%%agent`` against the local Messages API server, which streams one
text block as 20,000 one-character deltas with no delay; the harness plays the browser
(renders the cell's widget, reads IOPub). IOPub rate: every IOPub message the kernel sends
for the cell while text flows (first to last update of the text widget), per second of that
window; the baseline is the rate of deltas in the same window, i.e. what one display update
per delta would send. Kernel CPU: user + system CPU of the kernel process across the cell
(psutil), per 1,000 deltas, against a cell in the same kernel that consumes the same stream
with the bare SDK (``AsyncAnthropic().messages.stream``) and displays nothing.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from common import Row, kernel_cpu, kernel_pid, spread, start_kernel

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text

# Seconds the server sleeps before each SSE event: a fast model's pace, so the stream lasts
# long enough (a few seconds) for the display throttle to reach its ceiling.
PACE = 0.0001

BARE_CELL = '''
import anthropic as __bench_anthropic

async def __bench_bare():
    client = __bench_anthropic.AsyncAnthropic(max_retries=0)
    deltas = 0
    async with client.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "stream"}]
    ) as stream:
        async for event in stream:
            if event.type == "text":
                deltas += 1
    await client.close()
    return deltas
'''


def _seconds(msg: dict) -> float:
    return msg["header"]["date"].timestamp()


def _value_updates(kernel, msg_id: str) -> list[dict]:
    """IOPub messages of the cell that set the value of a streamed-text widget."""
    texts = set(kernel.with_class("codingcode-text"))
    return [
        m for m in kernel.messages
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] in texts and "value" in m["content"].get("data", {}).get("state", {})
    ]


def _agent_sample(kernel, fake: FakeAnthropic, deltas: int, pid: int) -> dict:
    fake.add(Reply([text("x" * deltas)], chunk=1, delay=PACE))
    kernel.messages.clear()
    before = kernel_cpu(pid)
    msg_id = kernel.execute("%%agent\nstream")
    root = kernel.wait_for(lambda: kernel.displayed_models(msg_id), 60, "the cell's widget")[0]
    kernel.render(root)
    reply = kernel.reply(msg_id, timeout=600)
    cpu = kernel_cpu(pid) - before
    if reply["status"] != "ok":
        raise RuntimeError(f"%%agent cell failed: {kernel.text_output(msg_id)[-2000:]}")
    segments = kernel.with_class("codingcode-text")
    shown = "".join(kernel.widgets[cid].get("value", "") for cid in segments)
    if shown.count("x") < deltas:
        raise RuntimeError(f"the cell shows {shown.count('x')} of {deltas} characters")
    updates = _value_updates(kernel, msg_id)
    start, end = _seconds(updates[0]), _seconds(updates[-1])
    window = max(end - start, 1e-3)
    in_window = [
        m for m in kernel.messages
        if m["parent_header"].get("msg_id") == msg_id and start <= _seconds(m) <= end
    ]
    cell = [m for m in kernel.messages if m["parent_header"].get("msg_id") == msg_id]
    return {
        "rate": (len(in_window) - 1) / window,  # events per second between the first and the last
        "delta_rate": deltas / window,
        "cpu": cpu,
        "messages": len(cell),
        "window": window,
    }


def _bare_sample(kernel, fake: FakeAnthropic, deltas: int, pid: int) -> float:
    fake.add(Reply([text("x" * deltas)], chunk=1, delay=PACE))
    before = kernel_cpu(pid)
    msg_id = kernel.execute("print(await __bench_bare())")
    reply = kernel.reply(msg_id, timeout=600)
    cpu = kernel_cpu(pid) - before
    out = kernel.text_output(msg_id).strip()
    if reply["status"] != "ok" or out != str(deltas):
        raise RuntimeError(f"bare SDK cell: {out[-2000:]}")
    return cpu


def measure(quick: bool) -> list[Row]:
    deltas = 2_000 if quick else 20_000
    repeat = 1 if quick else 3
    agent, bare = [], []
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as fake:
        project = Path(tmp) / "project"
        project.mkdir()
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test"}
        kernel = start_kernel(project, env)
        try:
            setup_id = kernel.execute("%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0\n" + BARE_CELL)
            setup = kernel.reply(setup_id)
            if setup["status"] != "ok":
                raise RuntimeError(f"kernel setup failed: {setup.get('ename')}: {setup.get('evalue')} {kernel.text_output(setup_id)[-2000:]}")
            pid = kernel_pid(kernel)
            # Warm both paths (imports, first connection) before measuring.
            _bare_sample(kernel, fake, 200, pid)
            _agent_sample(kernel, fake, 200, pid)
            for _ in range(repeat):
                bare.append(_bare_sample(kernel, fake, deltas, pid))
                kernel.run("%agent reset")
                agent.append(_agent_sample(kernel, fake, deltas, pid))
        finally:
            kernel.close()

    rates = [s["rate"] for s in agent]
    delta_rates = [s["delta_rate"] for s in agent]
    per_k_agent = [s["cpu"] / deltas * 1000 for s in agent]
    per_k_bare = [c / deltas * 1000 for c in bare]
    rate = statistics.median(rates)
    cpu_ratio = statistics.median(per_k_agent) / max(statistics.median(per_k_bare), 1e-9)
    cpu_extra = (statistics.median(per_k_agent) - statistics.median(per_k_bare)) * 1000
    method = __doc__.strip().replace("\n", " ")
    windows = ", ".join(f"{s['window']:.2f} s" for s in agent)
    totals = ", ".join(str(s["messages"]) for s in agent)
    return [
        Row(
            name=f"IOPub messages per second of stream ({deltas:,} deltas in a %%agent cell)",
            ours=spread(rates, "msg/s", 1.0) + f"; stream window {windows}; {totals} IOPub messages in all",
            baseline=spread(delta_rates, "msg/s", 1.0) + " one update per delta",
            result=f"{rate:.1f} msg/s",
            target="<= 25 msg/s",
            met=rate <= 25,
            method=method,
        ),
        Row(
            name=f"kernel CPU per 1,000 deltas ({deltas:,} deltas in a %%agent cell)",
            ours=spread(per_k_agent),
            baseline=spread(per_k_bare) + " bare SDK stream in the same kernel",
            result=f"{cpu_ratio:.2f}x ({cpu_extra:+.1f} ms per 1,000)",
            target="— (reported)",
            met=None,
            method=method,
        ),
    ]

