"""Fixtures shared by every test: a scripted Messages API server on loopback."""

from __future__ import annotations

import pytest

from tests.fakes.anthropic_server import FakeAnthropic


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch):
    """A fake Anthropic server; the real SDK in this process talks to it."""
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield server
