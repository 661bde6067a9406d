"""``codingcode acp``'s lifecycle end to end: cancel, a restart, a signal, a kernel that runs already."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from acp import text_block

from tests.acp.acp_harness import RecordingClient, agent_process, texts, updates_of
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.polling import eventually

pytestmark = pytest.mark.kernel


def _sleeping(marker: str) -> bool:
    """Whether a process runs ``sleep MARKER`` on this machine (the sandbox's processes are visible here)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                return True
        except OSError:
            continue
    return False


async def test_cancel_stops_a_running_command(fake, project):
    marker = "6061"
    fake.add(Reply([tool_use("execute_command", {"command": f"touch started && sleep {marker}"})]),
             Reply([text("never sent")]))
    client = RecordingClient(lambda call, options: next(o.option_id for o in options if o.kind.startswith("allow")))
    async with agent_process(client, project, fake.base_url) as conn:
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("Sleep")]))
        await eventually(lambda: (project / "started").exists() and _sleeping(marker), 60, "the command to run")
        await conn.cancel(session_id=session.session_id)
        response = await prompt
        assert response.stop_reason == "cancelled"
        await eventually(lambda: not _sleeping(marker), 30, "the command to be killed")
        commands = [u for u in updates_of(client, "tool_call") if u.kind == "execute"]
        assert commands and commands[0].raw_input["command"] == f"touch started && sleep {marker}"
        assert any(c.type == "content" and marker in c.content.text for c in commands[0].content)
        # The session goes on after a cancel.
        fake.script.clear()
        fake.add(Reply([text("Still here.")]))
        again = await conn.prompt(session_id=session.session_id, prompt=[text_block("Are you there?")])
    assert again.stop_reason == "end_turn"
    assert texts(client).endswith("Still here.")


async def test_a_session_loads_after_the_process_restarts(fake, project):
    fake.add(Reply([text("Noted: 42.")]))
    first = RecordingClient()
    async with agent_process(first, project, fake.base_url) as conn:
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("Remember the number 42.")])
    fake.add(Reply([text("It was 42.")]))
    second = RecordingClient()
    async with agent_process(second, project, fake.base_url) as conn:
        loaded = await conn.load_session(cwd=str(project), session_id=session.session_id, mcp_servers=[])
        assert loaded.modes.current_mode_id == "default"
        # The conversation is replayed before the answer.
        assert texts(second, "user_message_chunk") == "Remember the number 42."
        assert texts(second) == "Noted: 42."
        listed = await conn.list_sessions(cwd=str(project))
        assert [info.session_id for info in listed.sessions] == [session.session_id]
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("Which number?")])
    assert response.stop_reason == "end_turn"
    sent = fake.requests[-1]["messages"]
    assert "Remember the number 42." in json.dumps(sent[0]) and "Noted: 42." in json.dumps(sent[1])
    assert "Which number?" in json.dumps(sent[-1])


def _kernel_pythons() -> list:
    """This venv's ipykernel, and 6.x (where nothing reaches a running cell unless it pumps the shell) when CI has it."""
    six = os.environ.get("CODINGCODE_IPYKERNEL6_PYTHON")
    return [pytest.param(sys.executable, id="ipykernel7"),
            pytest.param(six or sys.executable, id="ipykernel6", marks=pytest.mark.skipif(
                not six, reason="CODINGCODE_IPYKERNEL6_PYTHON is not set (CI sets it to a venv with ipykernel 6.29)"))]


@pytest.mark.parametrize("python", _kernel_pythons())
async def test_an_existing_kernel_is_shared_with_the_editor(fake, project, tmp_path, python):
    from tests.notebook.kernel_harness import Kernel

    # A notebook's kernel: the key and the API are in its environment, a variable in its namespace.
    kernel = Kernel(python, project, {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key",
                                      "CODINGCODE_MODEL": "claude-test"}, tmp_path / "jupyter")
    try:
        assert kernel.run("x = 1")["status"] == "ok"
        # A call on the kernel's variable, then a write whose answer reaches the turn while its cell runs.
        fake.add(Reply([tool_use("run_python", {"code": "x + 1"})]),
                 Reply([tool_use("write_file", {"path": "answer.txt", "content": "42\n"})]), Reply([text("It is 42.")]))
        client = RecordingClient()
        async with agent_process(client, project, fake.base_url, "--existing", kernel.km.connection_file) as conn:
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            # The person empties their namespace after the agent set up: its turns do not depend on it.
            assert kernel.run("%reset -f\nx = 41")["status"] == "ok"
            before = kernel.run("1")["execution_count"]
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("What is x + 1?")])
        assert response.stop_reason == "end_turn"
        finished = [u for u in updates_of(client, "tool_call_update") if u.status == "completed"]
        assert len(finished) == 2 and "42" in finished[0].raw_output["result"]
        assert [call.tool_call_id for call, _ in client.questions][-1] == finished[1].tool_call_id
        assert (project / "answer.txt").read_text() == "42\n"
        # The kernel goes on after the editor left: its variables, the agent's magics, its own numbering.
        reply = kernel.ok("print(x, 'agent' in get_ipython().magics_manager.magics['line'])")
        assert reply["output"].strip() == "41 True"
        assert reply["execution_count"] == before + 1
    finally:
        kernel.close()


async def test_sigterm_ends_the_sessions_before_the_agent_exits(fake, project):
    # A SessionEnd hook leaves a file: it runs only if the agent closes its sessions on the signal.
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionEnd": [
        {"hooks": [{"type": "command", "command": "touch session-ended"}]}]}}))
    client = RecordingClient()
    async with agent_process(client, project, fake.base_url) as conn:
        await conn.new_session(cwd=str(project), mcp_servers=[])
        client.process.terminate()
        assert await client.process.wait() == 0
    assert (project / "session-ended").exists()
