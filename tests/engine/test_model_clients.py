"""The SDK client shared by turns: reused on one event loop while the environment is unchanged."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

from codingcode_jupyter.engine.models import clients
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text


@pytest.fixture(autouse=True)
def _no_shared_clients(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    clients.forget()
    yield
    clients.forget()


def test_turns_on_one_loop_share_a_client_and_a_new_key_makes_a_new_one(monkeypatch: pytest.MonkeyPatch):
    async def two_models() -> tuple[object, object, object]:
        first, second = AnthropicModel("m").client, AnthropicModel("m").client
        monkeypatch.setenv("ANTHROPIC_API_KEY", "another-key")  # as `%agent login` sets it
        return first, second, AnthropicModel("m").client

    first, second, after_login = asyncio.run(two_models())
    assert first is second
    assert after_login is not first and after_login.api_key == "another-key"


def test_another_event_loop_gets_a_client_of_its_own():
    async def client() -> object:
        return AnthropicModel("m").client

    assert asyncio.run(client()) is not asyncio.run(client())  # a console runs each turn in a new loop


def test_a_prepared_client_is_taken_by_the_first_loop_that_asks():
    clients.prepare()

    async def client() -> object:
        return AnthropicModel("m").client

    prepared = next(iter(clients._CLIENTS.values())).client
    assert asyncio.run(client()) is prepared
    assert asyncio.run(client()) is not prepared


def test_a_client_given_to_the_model_is_the_one_it_uses():
    own = object()
    assert AnthropicModel("m", client=own).client is own


def test_after_the_warm_ups_the_first_turn_imports_nothing(tmp_path):
    """What the first turn of a process would import, the warm-ups (the notebook runs them in the background) import."""
    project = tmp_path / "project"
    project.mkdir()
    code = textwrap.dedent('''
        import asyncio, json, sys
        from codingcode_jupyter.engine import runtime
        from codingcode_jupyter.engine.models import anthropic

        runtime.warm_up(sys.argv[1])
        anthropic.warm_up()
        before = set(sys.modules)
        session, parts = runtime.open_session(sys.argv[1])

        async def turn():
            await parts.start()
            done = await session.run_turn("hello")
            await parts.aclose()
            return done.stop_reason

        stop = asyncio.run(turn())
        print(json.dumps({"stop": stop, "imported": sorted(set(sys.modules) - before)}))
    ''')
    with FakeAnthropic() as fake:
        fake.add(Reply([text("hello back")]))
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
               "CODINGCODE_USER_DIR": str(tmp_path / "user")}
        env = {**os.environ, **env}
        out = subprocess.run([sys.executable, "-c", code, str(project)], capture_output=True, text=True, env=env,
                             cwd=str(project), timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["stop"] == "end_turn"
    assert result["imported"] == []
