"""A slow MCP server does not hold up the first answer: first-token delay with and without one.

Two temp projects, both trusted with CODINGCODE_TRUST=1 (an untrusted project's servers do
not start at all): one whose ``.mcp.json`` names a stdio server that sleeps 5 s before it
starts answering (the test suite's MCP server behind ``time.sleep(5)``), one with no
``.mcp.json``. Each sample is a fresh kernel (this venv's ipykernel) in one of them, against
the local Messages API server: ``%load_ext codingcode_jupyter``, a pause, then the first
``%%agent`` cell. Figure: its execute request sent → the first IOPub message holding the
streamed marker (``time.time()`` on both ends). Two pauses: 6 s, when the background loading
is over in both projects, so the row shows what the server itself costs the first answer;
and a person's 2 s, when the loading of the slow project (which also loads the MCP client,
about 0.4 s more) may not be over yet. The servers start in the background, so the first
request goes out without the slow server's tools; the number of those first requests that
listed them is reported too.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import Row, spread, start_kernel
from kernel_clock import first_message_with, run_quietly

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text

HERE = Path(__file__).resolve().parent
FAKE_SERVER = HERE.parent / "tests" / "fakes" / "mcp_server.py"
START_DELAY = 5.0
PAUSES = (6.0, 2.0)

# Measured in a kernel with timers around the first turn's steps (6 s pause, 2 cores busy with other work).
WHY = (
    "The servers start as the session opens, with the first cell, on the kernel's event loop: the server "
    "task's first slices run while the turn waits to connect, before its request goes out. Spawning the "
    "server (Popen blocks until the child has exec'd) took 6.5 ms and the MCP client's setup (streams, "
    "session, the initialize message) about 10 ms more, on a first token of 40-70 ms against a local server "
    "that answers at once. Starting the servers after the first request is on its way would remove it, at "
    "the price of servers that are ready one model round trip later; not done yet. Single samples vary by "
    "±20 ms here, so with 5 a row the ratio itself moves by about ±0.1."
)

SLOW_SERVER = '''
import runpy, sys, time
time.sleep({delay})
sys.argv = [{server!r}, "stdio"]
runpy.run_path({server!r}, run_name="__main__")
'''


def _projects(root: Path) -> dict[str, Path]:
    slow = root / "with-slow-server"
    slow.mkdir()
    script = root / "slow_mcp_server.py"
    script.write_text(SLOW_SERVER.format(delay=START_DELAY, server=str(FAKE_SERVER)))
    (slow / ".mcp.json").write_text(json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": [str(script)]}}}))
    none = root / "no-servers"
    none.mkdir()
    return {"slow": slow, "none": none}


def _sample(project: Path, fake: FakeAnthropic, env: dict[str, str], index: int, pause: float) -> tuple[float, bool]:
    """(prompt sent → first text, whether the first request listed the slow server's tools)."""
    kernel = start_kernel(project, {**env, "CODINGCODE_USER_DIR": str(project.parent / f"user-{index}")})
    try:
        run_quietly(kernel, "1 + 1")
        run_quietly(kernel, "%load_ext codingcode_jupyter")
        time.sleep(pause)
        marker = f"mcp-bench-{index}-{time.monotonic_ns()}"
        before = len(fake.requests)
        fake.add(Reply([text(marker + " answered.")], chunk=64))
        sent = time.time()
        msg_id = kernel.execute("%%agent\nsay hello")
        seen = first_message_with(kernel, msg_id, marker)
        if kernel.reply(msg_id, timeout=120)["status"] != "ok":
            raise RuntimeError(kernel.text_output(msg_id)[-2000:])
        tools = [tool.get("name", "") for tool in fake.requests[before].get("tools", [])]
        return seen - sent, any("echo" in name for name in tools)
    finally:
        kernel.close()


def measure(quick: bool) -> list[Row]:
    repeat = 1 if quick else 5
    rows = []
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as fake:
        projects = _projects(Path(tmp))
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
               "CODINGCODE_TRUST": "1"}
        index = 0
        for pause in PAUSES:
            results: dict[str, list[float]] = {"slow": [], "none": []}
            listed = 0
            for _ in range(repeat):
                for name in ("none", "slow"):
                    index += 1
                    seconds, with_tools = _sample(projects[name], fake, env, index, pause)
                    results[name].append(seconds)
                    listed += with_tools if name == "slow" else 0
            ratio = statistics.median(results["slow"]) / max(statistics.median(results["none"]), 1e-9)
            rows.append(Row(
                name=f"first token with an MCP server that takes {START_DELAY:g} s to start (first cell {pause:g} s after %load_ext)",
                ours=spread(results["slow"]) + f"; its tools in {listed} of {repeat} first requests",
                baseline=spread(results["none"]) + " project with no .mcp.json",
                result=f"{ratio:.2f}x",
                target="<= 1.1x",
                met=ratio <= 1.1,
                method=__doc__.strip().replace("\n", " "),
                note="" if ratio <= 1.1 else WHY,
            ))
    return rows
