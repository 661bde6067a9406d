"""Fixtures shared by every test: a user directory of their own, and a scripted Messages API
server on loopback."""

from __future__ import annotations

import pytest

from tests.fakes.anthropic_server import FakeAnthropic


@pytest.fixture(autouse=True)
def own_user_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """No test reads or writes the real ~/.codingcode (trust store, user settings, profiles) or ~/.claude.

    Projects the tests make are trusted (CODINGCODE_TRUST=1) unless a test is about trust:
    it removes the variable and sees the boundary as a person with a cloned repository does.
    """
    monkeypatch.setenv("CODINGCODE_USER_DIR", str(tmp_path_factory.mktemp("user-dir")))
    # Nor the person's ~/.claude (Claude Code's settings, agents and CLAUDE.md are read beside ours).
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path_factory.mktemp("claude-dir")))
    # Nor a machine's managed policy (/etc/codingcode, /etc/claude-code): empty directories of their own.
    monkeypatch.setenv("CODINGCODE_MANAGED_DIR", str(tmp_path_factory.mktemp("managed-dir")))
    monkeypatch.setenv("CODINGCODE_CLAUDE_MANAGED_DIR", str(tmp_path_factory.mktemp("claude-managed-dir")))
    # Nor the machine's provider or telemetry switches.
    for name in ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_ENABLE_TELEMETRY",
                 "ANTHROPIC_CUSTOM_HEADERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CODINGCODE_TRUST", "1")


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch):
    """A fake Anthropic server; the real SDK in this process talks to it."""
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield server
