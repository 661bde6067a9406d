"""The first ``%%agent`` cell after ``%load_ext`` against the tenth cell of the same kernel.

Each sample starts a fresh kernel (this venv's ipykernel) in an empty temp project, with the
local Messages API server in ANTHROPIC_BASE_URL. The harness plays the browser: it sends
``%load_ext codingcode_jupyter`` and, either after a person's think time (2 s after the
load cell's reply) or at once (Run All: both execute requests sent back to back, so the
agent cell is queued behind the load), the first ``%%agent`` cell; then eight more, each to
its end; then the tenth. Each cell's reply streams a marker the harness looks for. Figure:
the ``%%agent`` cell's execute request sent → the first IOPub message of that cell whose
content holds the marker received (``time.time()`` on both ends, one machine). Under Run
All the first cell's figure includes the ``%load_ext`` cell ahead of it in the queue, as a
person pressing Run All waits for it too.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from common import Row, spread, start_kernel
from kernel_clock import first_message_with, run_quietly

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text

THINK = 2.0
LOAD = "%load_ext codingcode_jupyter"


def _agent(kernel, fake: FakeAnthropic, n: int) -> tuple[str, str, float]:
    """Send the n-th ``%%agent`` cell; (msg id, marker, when sent)."""
    marker = f"first-text-{n}-{time.monotonic_ns()}"
    fake.add(Reply([text(f"{marker} and the rest of the answer.")], chunk=64))
    sent = time.time()
    return kernel.execute(f"%%agent\nsay hello ({n})"), marker, sent


def _sample(root: Path, fake: FakeAnthropic, think: float | None, index: int, env: dict[str, str]) -> tuple[float, float]:
    """(first cell, tenth cell) seconds, prompt sent → first text on IOPub, in one fresh kernel."""
    project = root / f"k{index}" / "project"
    project.mkdir(parents=True)
    kernel = start_kernel(project, {**env, "CODINGCODE_USER_DIR": str(root / f"k{index}" / "user")})
    try:
        run_quietly(kernel, "1 + 1")  # the kernel is up and answering, as when a person opens a notebook
        if think is None:
            load_id = kernel.execute(LOAD)
            msg_id, marker, sent = _agent(kernel, fake, 1)
        else:
            load_id = kernel.execute(LOAD)
            if kernel.reply(load_id)["status"] != "ok":
                raise RuntimeError(kernel.text_output(load_id)[-2000:])
            time.sleep(think)
            msg_id, marker, sent = _agent(kernel, fake, 1)
        first = first_message_with(kernel, msg_id, marker) - sent
        if kernel.reply(msg_id, timeout=120)["status"] != "ok" or kernel.reply(load_id)["status"] != "ok":
            raise RuntimeError(kernel.text_output(msg_id)[-2000:])
        for n in range(2, 10):
            cell_id, _, _ = _agent(kernel, fake, n)
            if kernel.reply(cell_id, timeout=120)["status"] != "ok":
                raise RuntimeError(kernel.text_output(cell_id)[-2000:])
        msg_id, marker, sent = _agent(kernel, fake, 10)
        tenth = first_message_with(kernel, msg_id, marker) - sent
        kernel.reply(msg_id, timeout=120)
        return first, tenth
    finally:
        kernel.close()


def measure(quick: bool) -> list[Row]:
    repeat = 2 if quick else 5
    results: dict[str, tuple[list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as fake:
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test"}
        index = 0
        for label, think in ((f"{THINK:g} s think time", THINK), ("Run All", None)):
            firsts, tenths = [], []
            for _ in range(repeat):
                index += 1
                first, tenth = _sample(Path(tmp), fake, think, index, env)
                firsts.append(first)
                tenths.append(tenth)
            results[label] = (firsts, tenths)
    rows = []
    for label, (firsts, tenths) in results.items():
        ratio = statistics.median(firsts) / max(statistics.median(tenths), 1e-9)
        rows.append(Row(
            name=f"first %%agent cell after %load_ext ({label}): prompt sent → first text",
            ours=spread(firsts),
            baseline=spread(tenths) + " tenth cell, same kernel",
            result=f"{ratio:.2f}x",
            target="<= 1.2x",
            met=ratio <= 1.2,
            method=__doc__.strip().replace("\n", " "),
        ))
    return rows
