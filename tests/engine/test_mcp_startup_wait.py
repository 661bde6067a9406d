"""How long a turn waits for MCP servers still starting: our setting, else Claude Code's
MCP_TIMEOUT (milliseconds; the settings' env before the kernel's), else 5 s; a bad value said."""

from __future__ import annotations

import json

from codingcode_jupyter.engine.mcp.startup import DEFAULT_WAIT_S, startup_wait
from codingcode_jupyter.engine.runtime import open_session


def test_the_default_is_five_seconds():
    assert startup_wait(None, {}, {}).seconds == DEFAULT_WAIT_S == 5.0


def test_mcp_timeout_is_milliseconds_as_claude_code_reads_it():
    wait = startup_wait(None, {}, {"MCP_TIMEOUT": "12000"})
    assert (wait.seconds, wait.source, wait.problem) == (12.0, "MCP_TIMEOUT", None)


def test_the_settings_env_comes_before_the_kernels_and_our_setting_before_both():
    assert startup_wait(None, {"MCP_TIMEOUT": "2500"}, {"MCP_TIMEOUT": "12000"}).seconds == 2.5
    assert startup_wait(0.0, {"MCP_TIMEOUT": "2500"}, {"MCP_TIMEOUT": "12000"}).seconds == 0.0


def test_a_value_that_is_not_milliseconds_is_said_and_the_default_applies():
    for bad in ("ten", "-5", "inf"):
        wait = startup_wait(None, {}, {"MCP_TIMEOUT": bad})
        assert wait.seconds == DEFAULT_WAIT_S and wait.problem and "MCP_TIMEOUT" in wait.problem and bad in wait.problem


def test_a_session_reads_the_setting_and_mcp_timeout_from_its_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("MCP_TIMEOUT", raising=False)
    settings = tmp_path / ".codingcode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {"MCP_TIMEOUT": "7000"}}))
    session = open_session(tmp_path, model="demo")
    assert session.mcp._wait().seconds == 7.0
    settings.write_text(json.dumps({"env": {"MCP_TIMEOUT": "7000"}, "mcpStartupWaitSeconds": 1.5}))
    assert session.mcp._wait().seconds == 1.5
