"""%%agent in a real kernel: streaming, approval clicks over the wire, interrupt, magics.

Each test starts a kernel (this venv's ipykernel 7.x, and ipykernel 6.x when
CODINGCODE_IPYKERNEL6_PYTHON names a Python that has it) in a temp project, with the fake
Messages API server running in this process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import HTTPError, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel, agent_kernel

pytestmark = pytest.mark.kernel


def _pythons() -> list:
    params = [pytest.param(sys.executable, id="ipykernel7")]
    six = os.environ.get("CODINGCODE_IPYKERNEL6_PYTHON")
    reason = "CODINGCODE_IPYKERNEL6_PYTHON is not set (CI sets it to a venv with ipykernel 6.29)"
    if six and Path(six).exists():
        reason = ""
    params.append(pytest.param(six or sys.executable, id="ipykernel6", marks=pytest.mark.skipif(bool(reason), reason=reason)))
    return params


@pytest.fixture(params=_pythons())
def kernel(request, tmp_path):
    python = request.param
    if request.node.callspec.id.endswith("ipykernel6") or "ipykernel6" in request.node.callspec.id:
        version = subprocess.run([python, "-c", "import ipykernel; print(ipykernel.__version__)"],
                                 capture_output=True, text=True).stdout.strip()
        if not version.startswith("6."):
            pytest.skip(f"{python} has ipykernel {version or 'missing'}, not 6.x")
    with agent_kernel(python, tmp_path) as k:
        yield k


@pytest.fixture
def kernel_latest(tmp_path):
    """This venv's ipykernel only: for tests of what the agent does, not of how a kernel version
    carries it (the click, stdin, interrupt, output and loading paths run on 6.x in the files
    that use ``kernel``)."""
    with agent_kernel(sys.executable, tmp_path) as k:
        yield k


def _write_script(k: Kernel, path: str = "notes.txt", content: str = "hello\n") -> None:
    k.fake.add(
        Reply([text("I will write the file."), tool_use("write_file", {"path": path, "content": content}, id="toolu_w1")]),
        Reply([text("All done.")]),
    )


def _audit(k: Kernel) -> list[dict]:
    path = k.project / ".codingcode" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _button(k: Kernel, label: str) -> str:
    return k.wait_for(lambda: (k.find(_model_name="ButtonModel", description=label) or [None])[0], 30, f"button {label}")


def _render(k: Kernel, msg_id: str) -> None:
    root = k.wait_for(lambda: k.displayed_models(msg_id), 30, "the cell's widget")[0]
    k.render(root)


def _html_text(k: Kernel, css: str) -> str:
    return "".join(k.widgets[cid].get("value", "") for cid in k.with_class(css))


def test_streams_text_throttled(kernel):
    words = " ".join(f"word{i}" for i in range(600))
    kernel.fake.add(Reply([text(words)], chunk=3))
    msg_id = kernel.execute("%%agent\nSay many words")
    reply = kernel.reply(msg_id)
    assert reply["status"] == "ok", kernel.text_output(msg_id)
    segments = kernel.with_class("codingcode-text")
    assert len(segments) == 1
    assert "word599" in kernel.widgets[segments[0]]["value"]
    # 600 words in 3-character deltas is ~1400 deltas; at most ~20 updates a second reach the browser.
    updates = [u for u in kernel.updates.get(segments[0], []) if "value" in u]
    started = next(m for m in kernel.messages if m["msg_type"] == "status" and m["parent_header"].get("msg_id") == msg_id)
    elapsed = time.time() - _ts(started)
    assert 1 <= len(updates) <= elapsed * 20 + 5, (len(updates), elapsed)
    assert "codingcode-usage" in _all_html(kernel) and " in / " in _all_html(kernel)
    request = kernel.fake.requests[-1]
    assert request["messages"][0]["content"] == "Say many words" or "Say many words" in json.dumps(request["messages"][0])


def _ts(msg: dict) -> float:
    date = msg["header"]["date"]
    return date.timestamp() if hasattr(date, "timestamp") else time.time()


def test_allow_click_writes_file_and_records_audit(kernel):
    _write_script(kernel)
    msg_id = kernel.execute("%%agent\nWrite notes.txt")
    _render(kernel, msg_id)
    allow = _button(kernel, "Allow")
    # The card's class comes in an update after its buttons' models: wait for it, do not assume it.
    kernel.wait_for(lambda: kernel.with_class("codingcode-approval"), 10, "the approval card's class")
    assert not (kernel.project / "notes.txt").exists()
    kernel.click(allow)
    reply = kernel.reply(msg_id)
    assert reply["status"] == "ok", kernel.text_output(msg_id)
    assert (kernel.project / "notes.txt").read_text() == "hello\n"
    decisions = [r for r in _audit(kernel) if r.get("event") == "decision"]
    assert decisions and decisions[-1]["tool"] == "write_file" and decisions[-1]["decision"] == "allow"
    assert decisions[-1]["by"] == "user"
    for label in ("Allow", "Deny", "Always allow", "Never allow"):
        assert kernel.widgets[_button(kernel, label)].get("disabled") is True
    assert "Allowed" in kernel.wait_for(lambda: "Allowed" in _html_text(kernel, "codingcode-approval") or _all_html(kernel), 5)
    assert "write_file" in _html_text(kernel, "codingcode-audit")
    assert "All done." in _html_text(kernel, "codingcode-text")


def _all_html(kernel: Kernel) -> str:
    return "".join(s.get("value", "") for s in kernel.widgets.values() if isinstance(s.get("value"), str))


def test_deny_click_leaves_file_alone(kernel):
    _write_script(kernel)
    msg_id = kernel.execute("%%agent\nWrite notes.txt")
    _render(kernel, msg_id)
    kernel.click(_button(kernel, "Deny"))
    reply = kernel.reply(msg_id)
    assert reply["status"] == "ok", kernel.text_output(msg_id)
    assert not (kernel.project / "notes.txt").exists()
    decisions = [r for r in _audit(kernel) if r.get("event") == "decision"]
    assert decisions[-1]["decision"] == "deny" and decisions[-1]["by"] == "user"
    # The model was told it was denied.
    assert "declined" in json.dumps(kernel.fake.requests[-1]["messages"][-1])
    assert "Denied" in _all_html(kernel)


def test_interrupt_during_approval_ends_cleanly_and_next_cell_works(kernel):
    _write_script(kernel)
    msg_id = kernel.execute("%%agent\nWrite notes.txt")
    _render(kernel, msg_id)
    _button(kernel, "Allow")  # the card is up: the turn is awaiting the person
    kernel.km.interrupt_kernel()
    reply = kernel.reply(msg_id, timeout=20)
    assert reply["status"] == "error" and reply["ename"] == "AgentInterrupted"
    assert "Interrupted." in kernel.text_output(msg_id)
    assert "Traceback" not in kernel.text_output(msg_id)
    assert not (kernel.project / "notes.txt").exists()
    assert "Interrupted" in _all_html(kernel)
    records = _audit(kernel)
    assert any(r.get("by") == "interrupted" for r in records if r.get("event") == "decision")
    kernel.fake.script.clear()  # the interrupted turn never asked for its second reply
    kernel.fake.add(Reply([text("Still here.")]))
    second = kernel.execute("%%agent\nAre you there?")
    assert kernel.reply(second)["status"] == "ok", kernel.text_output(second)
    assert "Still here." in _html_text(kernel, "codingcode-text")


def test_stdin_fallback_when_no_widget_view_renders(kernel):
    _write_script(kernel)
    msg_id = kernel.execute("%%agent\nWrite notes.txt", allow_stdin=True)
    request = kernel.kc.get_stdin_msg(timeout=30)
    assert request["msg_type"] == "input_request"
    assert "write_file" in request["content"]["prompt"] and "notes.txt" in request["content"]["prompt"]
    kernel.kc.input("y")
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    assert (kernel.project / "notes.txt").read_text() == "hello\n"


def test_no_frontend_no_stdin_denies_after_timeout(kernel):
    _write_script(kernel)
    start = time.monotonic()
    msg_id = kernel.execute("%%agent\nWrite notes.txt")
    reply = kernel.reply(msg_id, timeout=30)
    assert reply["status"] == "ok"
    assert 3.5 <= time.monotonic() - start < 25
    assert not (kernel.project / "notes.txt").exists()
    assert "nobody could answer" in _all_html(kernel)


def test_status_audit_and_bad_input_magics(kernel):
    _write_script(kernel)
    msg_id = kernel.execute("%%agent --mode acceptEdits\nWrite notes.txt")
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    assert (kernel.project / "notes.txt").exists()  # acceptEdits: no card needed
    status = kernel.execute("%agent status")
    kernel.reply(status)
    out = kernel.text_output(status)
    assert "session" in out and re.search(r"^mode +default$", out, re.M) and "claude-test" in out and "sandbox" in out
    audit = kernel.execute("%agent audit 5")
    kernel.reply(audit)
    assert "write_file" in kernel.text_output(audit)
    bad = kernel.execute("%%agent --mode yolo\nhi")
    reply = kernel.reply(bad)
    assert reply["status"] == "error" and "yolo" in kernel.text_output(bad)
    empty = kernel.execute("%%agent\n   ")
    assert kernel.reply(empty)["status"] == "error"
    unknown = kernel.execute("%agent frobnicate")
    assert kernel.reply(unknown)["status"] == "error"
    assert "has no subcommand 'frobnicate'" in kernel.text_output(unknown)


def test_run_all_keeps_order_while_a_card_waits(kernel):
    _write_script(kernel)
    first = kernel.execute("%%agent\nWrite notes.txt")
    second = kernel.execute("import pathlib\nseen = pathlib.Path('notes.txt').read_text()\nprint('second saw', repr(seen))")
    _render(kernel, first)
    allow = _button(kernel, "Allow")
    # While the card waits, the queued cell does not run: no output of it in half a second of IOPub (it
    # would have failed on the missing file). Under ipykernel 6 the kernel may already announce it.
    kernel.pump(timeout=0.5)
    assert not any(m["parent_header"].get("msg_id") == second and m["msg_type"] in ("stream", "error", "execute_result")
                   for m in kernel.messages)
    kernel.click(allow)
    assert kernel.reply(first)["status"] == "ok"
    assert kernel.reply(second)["status"] == "ok", kernel.text_output(second)
    assert "second saw 'hello\\n'" in kernel.text_output(second)


def test_line_magic_subcommands(kernel):
    def run(code: str) -> tuple[str, str]:
        msg_id = kernel.execute(code)
        reply = kernel.reply(msg_id)
        return reply["status"], kernel.text_output(msg_id)

    status, out = run("%agent mode plan")
    assert status == "ok" and "plan" in out
    assert re.search(r"^mode +plan  \(set by the session", run("%agent status")[1], re.M)
    assert run("%agent mode yolo")[0] == "error"
    status, out = run("%agent rules")
    assert status == "ok" and "builtin" in out and "deny" in out
    status, out = run("%agent tools")
    assert status == "ok" and "write_file" in out and "read_file" in out
    status, out = run("%agent mcp")
    assert status == "ok" and "no MCP servers" in out
    assert run("%agent mcp add broken {not json")[0] == "error"
    # JSON as typed, no shell quoting: parsed, added, and its failure to start is its status.
    status, out = run('%agent mcp add gone {"command": "no-such-mcp-server-xyz", "args": ["a b"]}')
    assert status == "ok" and "gone" in out and "failed" in out, out
    assert "gone [stdio] failed" in run("%agent mcp")[1]
    old = run("%agent status")[1].split()[1]
    status, out = run("%agent reset")
    assert status == "ok" and "new session" in out and old not in out
    kernel.fake.add(Reply([text("Hello there.")]))
    assert run("%%agent\nhello")[0] == "ok"
    status, out = run("%agent sessions")
    assert status == "ok" and "hello" in out
    assert run(f"%agent resume {old}")[0] == "ok"
    assert run("%agent resume nope-123")[0] == "error"
    assert "audit" in run("%agent")[1]
    # The same subcommand inside a larger cell runs through the ordinary line magic.
    status, out = run("x = 1\n%agent mode\nprint('after')")
    assert status == "ok" and "after" in out
    # Long sessions: the context gauge and instruction files in status; a forced compaction
    # asks the model for a summary of the older turns.
    (kernel.project / "AGENTS.md").write_text("Use tabs.\n")
    status, out = run("%agent status")
    assert re.search(r"^context +about [\d,]+ of", out, re.M) and "AGENTS.md" in out
    for i in range(3):
        kernel.fake.add(Reply([text(f"Answer {i}.")]))
        assert run(f"%%agent\nquestion {i}")[0] == "ok"
    kernel.fake.add(Reply([text("Summary: three questions were answered.")]))
    before = len(kernel.fake.requests)
    status, out = run("%agent compact")
    assert status == "ok", out
    summary_requests = kernel.fake.requests[before:]
    assert summary_requests and not summary_requests[-1].get("tools")


def test_help_and_config(kernel):
    msg_id = kernel.execute("%%agent?")
    kernel.reply(msg_id)
    payload = json.dumps([m["content"] for m in kernel.messages if m["parent_header"].get("msg_id") == msg_id])
    assert "--approval-timeout" in payload or "--approval-timeout" in json.dumps(kernel.run("%%agent?")), payload
    bad = kernel.execute('%config CodingCode.mode = "nonsense"')
    kernel.reply(bad)
    assert "mode must be one of" in kernel.text_output(bad)
    assert kernel.run('%config CodingCode.model = "claude-x"')["status"] == "ok"
    kernel.fake.add(Reply([text("ok")]))
    assert kernel.run("%%agent --new\nhi")["status"] == "ok"
    assert kernel.fake.requests[-1]["model"] == "claude-x"


def test_interrupt_during_stream_stops_the_turn(kernel):
    kernel.fake.add(Reply([text("slow " * 400)], chunk=5, delay=0.02))
    msg_id = kernel.execute("%%agent\nTalk slowly")
    kernel.wait_for(lambda: "slow" in _html_text(kernel, "codingcode-text"), 30, "some streamed text")
    start = time.monotonic()
    kernel.km.interrupt_kernel()
    reply = kernel.reply(msg_id, timeout=20)
    assert reply["status"] == "error" and reply["ename"] == "AgentInterrupted"
    assert time.monotonic() - start < 5
    assert _html_text(kernel, "codingcode-text").count("slow") < 400
    kernel.fake.script.clear()
    kernel.fake.add(Reply([text("Next turn.")]))
    second = kernel.execute("%%agent\nAgain")
    assert kernel.reply(second)["status"] == "ok", kernel.text_output(second)


def test_agent_profile_runs_as_the_main_agent(kernel):
    agents = kernel.project / ".codingcode" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews code without changing it.\ntools: [read_file, search_code]\n---\n"
        "You are the reviewer. You never edit files.\n"
    )
    kernel.fake.add(Reply([text("Looks fine.")]), Reply([text("Main agent here.")]))
    msg_id = kernel.execute("%%agent --agent reviewer\nReview cli.py")
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    profiled = kernel.fake.requests[-1]
    system = " ".join(block["text"] for block in profiled["system"])
    assert "You are the reviewer." in system
    assert sorted(tool["name"] for tool in profiled["tools"]) == ["read_file", "search_code"]
    # the main session is untouched: its own prompt, its own tools, no trace of the review
    main = kernel.execute("%%agent\nHello")
    assert kernel.reply(main)["status"] == "ok", kernel.text_output(main)
    request = kernel.fake.requests[-1]
    assert "You are the reviewer." not in json.dumps(request["system"])
    assert "write_file" in [tool["name"] for tool in request["tools"]]
    assert "Review cli.py" not in json.dumps(request["messages"])
    unknown = kernel.execute("%%agent --agent nobody\nhi")
    assert kernel.reply(unknown)["status"] == "error"
    assert "nobody" in kernel.text_output(unknown)


def test_interrupt_during_a_command_kills_it_and_records_the_outcome(kernel):
    marker = kernel.project / "still-running.txt"
    started = kernel.project / "started.txt"
    token = f"4.{os.getpid()}{int(time.time()) % 10_000}"
    # A command with a background child; both must die with the interrupt.
    command = f"touch {started}; (sleep {token}; touch {marker}) & sleep 30.{token.split('.')[1]}"
    kernel.fake.add(Reply([tool_use("execute_command", {"command": command}, id="toolu_cmd")]))
    msg_id = kernel.execute("%%agent --mode bypass\nRun the long thing")
    _render(kernel, msg_id)
    kernel.wait_for(started.exists, 30, "the command to start")
    kernel.km.interrupt_kernel()
    reply = kernel.reply(msg_id, timeout=20)
    assert reply["status"] == "error" and reply["ename"] == "AgentInterrupted"
    outcomes = [r for r in _audit(kernel) if r.get("event") == "outcome" and r.get("tool_use_id") == "toolu_cmd"]
    assert outcomes and outcomes[-1]["outcome"] == "interrupted"
    kernel.wait_for(lambda: not _processes_with(token), 10, "the background child to be gone")
    assert not marker.exists()
    kernel.fake.script.clear()
    kernel.fake.add(Reply([text("Ready again.")]))
    second = kernel.execute("%%agent\nStill there?")
    assert kernel.reply(second)["status"] == "ok", kernel.text_output(second)
    # the model learns the command was interrupted: its tool_use was answered
    sent = kernel.fake.requests[-1]["messages"]
    answered = [b for m in sent if m["role"] == "user" for b in m["content"] if b.get("tool_use_id") == "toolu_cmd"]
    assert answered and answered[0]["is_error"]


def test_broken_settings_and_api_outage_give_one_clear_line_and_lose_nothing(kernel):
    settings = kernel.project / ".codingcode" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"permissions": {"allow": ["execute_command(pytest *)"],}}')  # a trailing comma
    msg_id = kernel.execute("%%agent --new\nhello")
    reply = kernel.reply(msg_id)
    out = kernel.text_output(msg_id)
    assert reply["status"] == "error" and "settings.json" in out and "line 1" in out
    assert "Traceback" not in out
    settings.write_text('{"permissions": {"allow": ["execute_command(pytest *)"]}}')
    # The API goes away: the SDK's retries end in one sentence naming what could not be reached.
    kernel.fake.add(HTTPError(529, "overloaded_error", "busy"), HTTPError(529, "overloaded_error", "busy"),
                    HTTPError(529, "overloaded_error", "busy"))
    down = kernel.execute("%%agent --new\nhello again")
    assert kernel.reply(down, timeout=60)["status"] == "ok", kernel.text_output(down)
    assert "overloaded" in _all_html(kernel)
    kernel.fake.add(Reply([text("Back online.")]))
    up = kernel.execute("%%agent\nand now?")
    assert kernel.reply(up)["status"] == "ok"
    assert "Back online." in _html_text(kernel, "codingcode-text")
    sent = kernel.fake.requests[-1]["messages"]
    assert "hello again" in json.dumps(sent) and "and now?" in json.dumps(sent)  # the failed turn's prompt kept


def _processes_with(token: str) -> list[str]:
    """Command lines of running processes that mention ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if token in line and "pytest" not in line:
                found.append(line)
    return found
