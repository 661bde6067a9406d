"""Custom tools defined in a notebook cell, in a real kernel, through the local Messages API server.

A script plays the browser: it watches IOPub for the approval card's "Allow" button and sends
the same comm message a click sends, while a sync custom tool blocks in the kernel.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use

jupyter_client = pytest.importorskip("jupyter_client")

pytestmark = pytest.mark.kernel

DEFINE_TOOLS = '''
%load_ext codingcode_jupyter
%config CodingCode.frontend_wait = 0.2
import threading, time
from typing import Annotated
from pydantic import Field
from codingcode_jupyter import tool, pre_tool_use, ToolContext

log = []

@tool(read_only=True)
def slow_sum(a: int, b: Annotated[int, Field(description="Second addend.")] = 1, seconds: float = 0.0) -> dict:
    """Add two numbers, slowly."""
    log.append(["slow start", time.monotonic(), threading.current_thread() is threading.main_thread()])
    time.sleep(seconds)
    log.append(["slow end", time.monotonic()])
    return {"sum": a + b}

@tool(read_only=True)
def probe(note: str, ctx: ToolContext) -> str:
    """Record a note."""
    log.append(["probe", time.monotonic(), ctx.session_id != ""])
    return f"noted {note}"

@tool
def boom() -> str:
    """Always fails."""
    raise RuntimeError("the boom tool exploded")

@tool
def greet(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"

@pre_tool_use("greet")
def shout(payload):
    return {"decision": "allow", "modified_input": {"name": payload["tool_input"]["name"].upper()}}
'''


class Kernel:
    """A real kernel and a client that can play the browser's part for widget clicks."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.manager = jupyter_client.KernelManager()
        self.manager.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        self.manager.start_kernel(cwd=str(cwd), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.comms: dict[str, dict[str, Any]] = {}

    def click(self, comm_id: str) -> None:
        message = self.client.session.msg(
            "comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
        )
        self.client.shell_channel.send(message)

    def run(self, code: str, *, timeout: float = 60, on_button: dict[str, int] | None = None) -> dict[str, Any]:
        """Execute a cell; click buttons labelled in ``on_button`` (label → how many times) as they appear."""
        msg_id = self.client.execute(code, allow_stdin=False)
        outputs: list[str] = []
        errors: list[str] = []
        clicks = dict(on_button or {})
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"cell did not finish in {timeout} s; output so far: {outputs} {errors}")
            try:
                msg = self.client.get_iopub_msg(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "comm_open":
                state = content.get("data", {}).get("state", {})
                self.comms[content["comm_id"]] = state
                label = state.get("description")
                if state.get("_model_name") == "ButtonModel" and clicks.get(label, 0) > 0:
                    clicks[label] -= 1
                    self.click(content["comm_id"])
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if kind == "stream":
                outputs.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                outputs.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                errors.append("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                break
        return {"output": "".join(outputs), "errors": errors}

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    settings = tmp_path / ".codingcode"
    settings.mkdir()
    # probe is read-only, so only a rule makes it ask: the card shows while slow_sum blocks.
    (settings / "settings.json").write_text(json.dumps({"permissions": {"ask": ["probe(*)"]}}))
    return tmp_path


def test_cell_defined_tools_in_a_real_kernel(project: Path):
    server = FakeAnthropic()
    server.add(
        # two read-only calls run together: slow_sum blocks its thread for 2 s while probe is
        # asked, clicked and run
        Reply([tool_use("slow_sum", {"a": 2, "b": 3, "seconds": 2.0}, id="t1"), tool_use("probe", {"note": "hi"}, id="t2")]),
        Reply([
            tool_use("slow_sum", {"a": "two"}, id="t3"),
            tool_use("boom", {}, id="t4"),
            tool_use("greet", {"name": "ada"}, id="t5"),
        ]),
        Reply([text("All done.")]),
    )
    with server:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "CODINGCODE_MODEL": "claude-sonnet-4-5",
            "HOME": str(project),  # no user-level settings leak in
        }
        env.pop("CODINGCODE_DEMO", None)
        kernel = Kernel(project, env)
        try:
            defined = kernel.run(DEFINE_TOOLS)
            assert not defined["errors"], defined["errors"]

            listed = kernel.run("%agent tools")
            assert not listed["errors"], listed["errors"]
            rows = {line.split()[0]: line for line in listed["output"].splitlines() if line.strip()}
            assert "custom" in rows["slow_sum"] and "custom" in rows["greet"]
            assert "read_file" in rows and "custom" not in rows["read_file"]

            turn = kernel.run("%%agent\nAdd 2 and 3, then try the others.", on_button={"Allow": 1})
            assert not turn["errors"], turn["errors"]
            log = json.loads(kernel.run("import json; print(json.dumps(log))")["output"])
        finally:
            kernel.close()

    first = server.requests[0]
    offered = {t["name"]: t for t in first["tools"]}
    assert offered["slow_sum"]["description"] == "Add two numbers, slowly."
    assert offered["slow_sum"]["input_schema"] == {
        "additionalProperties": False,
        "properties": {
            "a": {"type": "integer"},
            "b": {"default": 1, "description": "Second addend.", "type": "integer"},
            "seconds": {"default": 0.0, "type": "number"},
        },
        "required": ["a"],
        "type": "object",
    }
    assert offered["probe"]["input_schema"]["properties"] == {"note": {"type": "string"}}

    def results(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {b["tool_use_id"]: b for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"}

    step1 = results(server.requests[1])
    assert step1["t1"]["content"][0]["text"] == '{"sum": 5}' and not step1["t1"].get("is_error")
    assert step1["t2"]["content"][0]["text"] == "noted hi" and not step1["t2"].get("is_error")

    step2 = results(server.requests[2])
    assert step2["t3"]["is_error"] and "Invalid arguments for slow_sum: a: Input should be a valid integer" in step2["t3"]["content"][0]["text"]
    assert step2["t4"]["is_error"] and step2["t4"]["content"][0]["text"] == "boom failed: RuntimeError: the boom tool exploded"
    assert step2["t5"]["content"][0]["text"] == "hello ADA" and not step2["t5"].get("is_error")

    # The click arrived and probe ran while slow_sum was still blocking its worker thread.
    events = {entry[0]: entry for entry in log}
    assert events["slow start"][2] is False  # not on the kernel's main thread
    assert events["slow start"][1] < events["probe"][1] < events["slow end"][1]
    assert events["probe"][2] is True
