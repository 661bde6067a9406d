"""Custom tools defined in a notebook cell, in a real kernel, through the local Messages API server.

The harness plays the browser: it finds the approval card's "Allow" button on IOPub and sends
the comm message a click sends, while a sync custom tool blocks in the kernel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel
from tests.notebook.test_kernel import _pythons

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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    settings = project / ".codingcode"
    settings.mkdir(parents=True)
    # probe is read-only, so only a rule makes it ask: the card shows while slow_sum blocks.
    # boom is allowed by a rule naming it; greet by the Python hook.
    (settings / "settings.json").write_text(json.dumps({"permissions": {"ask": ["probe(*)"], "allow": ["boom(*)"]}}))
    return project


@pytest.mark.parametrize("python", _pythons())
def test_cell_defined_tools_in_a_real_kernel(python: str, project: Path, tmp_path: Path):
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
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test"}
        kernel = Kernel(python, project, env, tmp_path / "jupyter")
        try:
            define_id = kernel.execute(DEFINE_TOOLS)
            assert kernel.reply(define_id)["status"] == "ok", kernel.text_output(define_id)

            listed_id = kernel.execute("%agent tools")
            assert kernel.reply(listed_id)["status"] == "ok", kernel.text_output(listed_id)
            rows = {line.split()[0]: line for line in kernel.text_output(listed_id).splitlines() if line.strip()}
            assert "custom" in rows["slow_sum"] and "custom" in rows["greet"], rows
            assert "read_file" in rows and "custom" not in rows["read_file"]

            turn_id = kernel.execute("%%agent\nAdd 2 and 3, then try the others.")
            allow = kernel.wait_for(
                lambda: (kernel.find(_model_name="ButtonModel", description="Allow") or [None])[0], 30, "the Allow button"
            )
            kernel.click(allow)
            turn = kernel.reply(turn_id)
            assert turn["status"] == "ok", kernel.text_output(turn_id)

            log_id = kernel.execute("import json; print(json.dumps(log))")
            kernel.reply(log_id)
            log = json.loads(kernel.text_output(log_id))
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
