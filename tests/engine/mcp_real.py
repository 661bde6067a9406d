"""Where the real MCP servers are (scripts/test.sh installs them) and how tests start them.

Every server listens on 127.0.0.1 only; a test that needs one that is not installed is
skipped with the reason, so a partial local setup still runs the rest.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codingcode_jupyter.engine.agent import AgentLoop
from codingcode_jupyter.engine.mcp.manager import McpManager
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import ToolContext
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from codingcode_jupyter.engine.tools.resolver import SessionToolResolver
from tests.engine.helpers import AllowAll, Recorder, make_deps
from tests.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
_NPM = ROOT / ".mcp-servers" / "node_modules" / "@modelcontextprotocol"
EVERYTHING = _NPM / "server-everything" / "dist" / "index.js"
FILESYSTEM = _NPM / "server-filesystem" / "dist" / "index.js"
PY_SERVERS = ROOT / ".venv-mcp-servers" / "bin"
LOOPBACK_SHIM = Path(__file__).with_name("node_loopback.cjs")
FAKE = str(ROOT / "tests" / "fakes" / "mcp_server.py")
STDIO_FAKE = {"command": sys.executable, "args": [FAKE, "stdio"]}


def needs(path: Path, what: str) -> pytest.MarkDecorator:
    missing = not path.exists() or (path.suffix == ".js" and NODE is None)
    return pytest.mark.skipif(missing, reason=f"{what} is not installed here ({path}); scripts/test.sh installs it")


def py_server(name: str) -> str:
    return str(PY_SERVERS / name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def wait_port(port: int, process: subprocess.Popen, seconds: float = 30) -> None:
    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before listening on {port}")
        return listening(port)

    wait_until(up, seconds, f"something to listen on 127.0.0.1:{port}", interval=0.02)


class Listening:
    """A server process listening on a loopback port; stopped on exit."""

    def __init__(self, argv: list[str], *, port: int, env: dict[str, str] | None = None, log: Path | None = None) -> None:
        self.port = port
        self.log = open(log, "w") if log else subprocess.DEVNULL
        self.process = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=self.log, stderr=self.log)
        try:
            wait_port(port, self.process)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        if self.log is not subprocess.DEVNULL:
            self.log.close()


def everything_http(transport: str, log: Path | None = None) -> Listening:
    """server-everything over ``streamableHttp`` or ``sse``, bound to 127.0.0.1."""
    port = free_port()
    return Listening([NODE or "node", "-r", str(LOOPBACK_SHIM), str(EVERYTHING), transport], port=port,
                     env={"PORT": str(port)}, log=log)


def ctx(project: Path) -> ToolContext:
    return ToolContext.standalone(project, session_id="s", turn_id=1, state=SessionState())


def by_display(manager: McpManager) -> dict[str, Any]:
    return {tool.display_name: tool for tool in manager.tools()}


def agent_loop(project: Path, manager: McpManager, *, ask: Any = None) -> tuple[AgentLoop, Recorder]:
    """The real loop with the real SDK model (talking to the fake Messages server), MCP tools only."""
    events = Recorder()
    loop = AgentLoop(
        model=AnthropicModel("claude-sonnet-5", max_retries=0),
        tools=SessionToolResolver(ToolRegistry(), state=SessionState(), mcp=manager),
        approver=AllowAll(),
        deps=make_deps(project),
        session_id="s1",
        state=SessionState(),
        emit=events,
        ask=ask,
    )
    return loop, events


def tool_results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool_result blocks of a request's last message, by tool_use_id."""
    return {b["tool_use_id"]: b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"}


def text_of(block: dict[str, Any]) -> str:
    return "\n".join(part["text"] for part in block["content"] if part.get("type") == "text")
