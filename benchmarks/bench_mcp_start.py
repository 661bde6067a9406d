"""The first ``%%agent`` cell in a project with an MCP server: the server's tools are in the
model's first request, and what that costs the first text.

Three temp projects, all trusted with CODINGCODE_TRUST=1 (an untrusted project's servers do
not start at all): one whose ``.mcp.json`` names a stdio server that is ready as soon as it
runs (the test suite's MCP server), one whose server sleeps 5 s before it starts answering
(the same server behind ``time.sleep(5)``), one with no ``.mcp.json``. Each sample is a fresh
kernel (this venv's ipykernel) in one of them, against the local Messages API server:
``%load_ext codingcode_jupyter``, a person's 2 s pause, then the first ``%%agent`` cell.
Figure: its execute request sent → the first IOPub message holding the streamed marker
(``time.time()`` on both ends), counted only as what it is when the first request offered the
server's tools (how many did is reported). The servers start with the background loading that
``%load_ext`` begins (the MCP client imported on its thread); a turn's request waits for a
server still starting, up to 5 s (the default bound), with a line in the cell. The ready
server's row shows what a configured server costs a first cell that finds it ready; the slow
one's shows the wait itself, which is the trade: up to the bound of latency on a first cell
whose server is still starting, for its tools in the first request. The ready server's baseline
is what a person would otherwise run in that moment: a cell calling the bare SDK (imported in
the cell, as the loading imports it) in a fresh kernel, after the same pause.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import Row, spread, start_kernel
from kernel_clock import bare_sdk_first_cell, first_message_with, run_quietly

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text

HERE = Path(__file__).resolve().parent
FAKE_SERVER = HERE.parent / "tests" / "fakes" / "mcp_server.py"
START_DELAY = 5.0
PAUSE = 2.0
# The bound a turn waits for a server still starting (mcp.startup's default).
BOUND = 5.0

WHY_READY = (
    "The background loading now also imports the MCP client (about 0.8 s of CPU) and starts the server, so a first "
    "cell 2 s after %load_ext may still wait for the end of the loading; the turn then finds the server ready. "
    "Single samples vary by ±20 ms here, so with few samples a row's ratio moves by about ±0.1."
)
WHY_SLOW = (
    "By design: the turn waits for a server still starting, up to 5 s, so that its tools are in the first request "
    "(a function is never traded for a figure). Before, the first text came at once and the tools in 0 first requests."
)

SLOW_SERVER = '''
import runpy, sys, time
time.sleep({delay})
sys.argv = [{server!r}, "stdio"]
runpy.run_path({server!r}, run_name="__main__")
'''


def _projects(root: Path) -> dict[str, Path]:
    projects = {}
    for name, delay in (("ready", 0.0), ("slow", START_DELAY)):
        project = projects[name] = root / f"with-{name}-server"
        project.mkdir()
        script = root / f"{name}_mcp_server.py"
        script.write_text(SLOW_SERVER.format(delay=delay, server=str(FAKE_SERVER)))
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {name: {"command": sys.executable,
                                                                             "args": [str(script)]}}}))
    none = projects["none"] = root / "no-servers"
    none.mkdir()
    return projects


def _sample(project: Path, fake: FakeAnthropic, env: dict[str, str], index: int,
            pause: float) -> tuple[float, bool]:
    """(prompt sent → first text, whether the first request offered the server's tools)."""
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
        return seen - sent, any(name.endswith("__echo") for name in tools)
    finally:
        kernel.close()


def measure(quick: bool) -> list[Row]:
    repeat = 1 if quick else 5
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as fake:
        projects = _projects(Path(tmp))
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
               "CODINGCODE_TRUST": "1"}
        results: dict[str, list[float]] = {name: [] for name in [*projects, "bare"]}
        offered = {name: 0 for name in projects}
        index = 0
        for _ in range(repeat):
            for name in ("none", "ready", "slow"):
                index += 1
                seconds, with_tools = _sample(projects[name], fake, env, index, PAUSE)
                results[name].append(seconds)
                offered[name] += with_tools
            # The ready server's baseline: what a person would otherwise run, the bare SDK in a fresh kernel.
            index += 1
            results["bare"].append(bare_sdk_first_cell(projects["none"], fake, {
                **env, "CODINGCODE_USER_DIR": str(Path(tmp) / f"user-{index}")}, PAUSE))
    baseline = statistics.median(results["none"])
    bare = statistics.median(results["bare"])
    rows = []
    for name, what, target, limit, why in (
        ("ready", "an MCP server ready at once", "<= 1.2x", 1.2, WHY_READY),
        ("slow", f"an MCP server that takes {START_DELAY:g} s to start", f"its tools offered; + <= the {BOUND:g} s bound",
         None, WHY_SLOW),
    ):
        median = statistics.median(results[name])
        ratio = median / max(bare if limit is not None else baseline, 1e-9)
        all_offered = offered[name] == repeat
        # The slow server's row: the wait over the same first cell without a server, against the bound.
        met = all_offered and (ratio <= limit if limit is not None else median - baseline <= BOUND + 0.5)
        rows.append(Row(
            name=f"first %%agent cell with {what} (2 s after %load_ext): prompt sent → first text",
            ours=spread(results[name]) + f"; its tools in {offered[name]} of {repeat} first requests",
            baseline=(spread(results["bare"]) + " a bare-SDK cell in a fresh kernel, after the same pause; "
                      if limit is not None else "") + spread(results["none"]) + " project with no .mcp.json",
            result=f"{ratio:.2f}x" if limit is not None else f"+{median - baseline:.2f} s ({ratio:.2f}x)",
            target=target,
            met=met,
            method=__doc__.strip().replace("\n", " "),
            note="" if met else why,
        ))
    return rows
