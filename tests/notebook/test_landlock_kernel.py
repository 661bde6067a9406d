"""execute_command under Landlock in a real kernel: commands start from the launcher the kernel keeps
warm (sandbox/warm.py), an interrupt still kills a command and what it left, and the warm process
ends with the kernel."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import landlock
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.notebook.kernel_harness import agent_kernel

pytestmark = [pytest.mark.kernel, pytest.mark.skipif(landlock.landlock_abi() < 1, reason="no Landlock here")]

# A line of the warm process's source: how its command line is told from others.
SERVER_MARK = "import _socket, marshal"


@pytest.fixture
def kernel(tmp_path: Path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "settings.json").write_text(json.dumps({"sandbox": {"backend": "landlock"}}))
    with agent_kernel(sys.executable, tmp_path, env={"CODINGCODE_USER_DIR": str(user)}) as k:
        (k.project / ".env").write_text("KEY=value\n")  # a hidden file: the top level granted entry by entry
        (k.project / "src").mkdir()
        yield k


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process now."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            status = (entry / "status").read_text()
        except OSError:
            continue
        parent = int(next(row for row in status.splitlines() if row.startswith("PPid:")).split()[1])
        found[int(entry.name)] = (parent, line)
    return found


def _warm_processes(kernel_pid: int) -> list[int]:
    return [pid for pid, (parent, line) in _processes().items() if parent == kernel_pid and SERVER_MARK in line]


def _tool_result(kernel, tool_use_id: str) -> str:
    for message in kernel.fake.requests[-1]["messages"]:
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block.get("tool_use_id") == tool_use_id:
                content = block["content"]
                return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
    raise AssertionError(f"no result for {tool_use_id}")


def test_commands_start_from_the_warm_launcher_and_it_ends_with_the_kernel(kernel):
    kernel.fake.add(
        Reply([tool_use("execute_command", {"command": "echo first; echo x > /usr/local/pwned"}, id="toolu_1")]),
        Reply([tool_use("execute_command", {"command": "echo second > src/b.txt && cat src/b.txt"}, id="toolu_2")]),
        Reply([text("Done.")]),
    )
    msg_id = kernel.execute("%%agent --mode bypass\nRun them")
    assert kernel.reply(msg_id, timeout=60)["status"] == "ok", kernel.text_output(msg_id)
    first, second = _tool_result(kernel, "toolu_1"), _tool_result(kernel, "toolu_2")
    assert "first" in first and "pwned: Permission denied" in first, first
    assert "exit code 0" in second, second
    kernel_pid = kernel.km.provisioner.pid
    warm = _warm_processes(kernel_pid)
    assert len(warm) == 1, "one warm launcher, kept by the kernel for every command"
    kernel.kc.stop_channels()
    kernel.km.shutdown_kernel(now=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{warm[0]}"):
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{warm[0]}"), "the warm launcher outlived its kernel"


def test_an_interrupt_kills_a_command_the_warm_launcher_started(kernel):
    token = f"7.{os.getpid()}{int(time.time()) % 10_000}"
    started = kernel.project / "started.txt"
    command = f"touch started.txt; (sleep {token}; touch late.txt) & sleep 30.{token.split('.')[1]}"
    kernel.fake.add(Reply([tool_use("execute_command", {"command": command}, id="toolu_cmd")]))
    msg_id = kernel.execute("%%agent --mode bypass\nRun the long thing")
    kernel.wait_for(started.exists, 60, "the command to start")
    kernel.km.interrupt_kernel()
    reply = kernel.reply(msg_id, timeout=20)
    assert reply["status"] == "error" and reply["ename"] == "AgentInterrupted"
    kernel.wait_for(lambda: not any(token in line for _parent, line in _processes().values()), 10,
                    "the command and its background child to be gone")
    assert not (kernel.project / "late.txt").exists()
    # The warm launcher was not interrupted with the kernel (its own session): the next command runs.
    kernel.fake.script.clear()
    kernel.fake.add(Reply([tool_use("execute_command", {"command": "echo again"}, id="toolu_again")]),
                    Reply([text("Ready.")]))
    second = kernel.execute("%%agent --mode bypass\nAgain")
    assert kernel.reply(second, timeout=60)["status"] == "ok", kernel.text_output(second)
    assert "again" in _tool_result(kernel, "toolu_again")
    assert len(_warm_processes(kernel.km.provisioner.pid)) == 1
