"""A stdio MCP server may opt in to the command sandbox ("sandbox": true in .mcp.json)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.mcp.manager import McpManager
from codingcode_jupyter.engine.sandbox import CommandSandbox
from codingcode_jupyter.engine.settings import SandboxFilesystem, SandboxSettings
from tests.engine.test_mcp_servers import STDIO, call

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _config(tmp_path, sandbox: bool) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"boxed": {**STDIO, "sandbox": sandbox}}}))


@pytest.mark.slow
async def test_opted_in_server_runs_confined(tmp_path):
    # The sandbox gives the command a private /tmp; a checkout (and its venv, which runs the
    # fake server) may itself live under /tmp, so it is bound in explicitly.
    checkout = Path(__file__).resolve().parents[2]
    settings = SandboxSettings(filesystem=SandboxFilesystem(allowWrite=[str(checkout), sys.prefix]))
    sandbox = CommandSandbox.create(tmp_path, settings)
    assert sandbox.active, sandbox.unavailable_reason
    _config(tmp_path, True)
    manager = McpManager(tmp_path, start_timeout=20, sandbox=sandbox)
    try:
        await manager.start()
        result = await call(manager, "boxed:pid", {}, tmp_path)
        assert not result.is_error, result.text_content
        # In its own PID namespace the server sees itself among the first few processes.
        assert int(result.text_content.strip()) < 10
    finally:
        await manager.aclose()
        await sandbox.aclose()


@pytest.mark.slow
async def test_opted_out_server_sees_the_host_pid_namespace(tmp_path):
    _config(tmp_path, False)
    manager = McpManager(tmp_path, start_timeout=20)
    try:
        await manager.start()
        result = await call(manager, "boxed:pid", {}, tmp_path)
        assert int(result.text_content.strip()) > 10
    finally:
        await manager.aclose()


async def test_opted_in_server_never_starts_without_the_sandbox(tmp_path):
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings(backend="bwrap"), bwrap=str(tmp_path / "no-bwrap"))
    assert not sandbox.active
    _config(tmp_path, True)
    manager = McpManager(tmp_path, start_timeout=20, sandbox=sandbox)
    try:
        await manager.start()
        status = {s.name: s for s in manager.status()}["boxed"]
        assert status.state == "failed" and "sandbox" in (status.error or "")
    finally:
        await manager.aclose()
