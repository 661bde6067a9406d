"""The SDK client shared by turns: reused on one event loop while the environment is unchanged."""

from __future__ import annotations

import asyncio
import http.client
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


@pytest.mark.slow
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
        session = runtime.open_session(sys.argv[1])

        async def turn():
            await session.start()
            done = await session.run_turn("hello")
            await session.aclose()
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


# -- the connection: opened ahead of time, kept between turns ----------------------------


async def _turn(model: AnthropicModel) -> None:
    from codingcode_jupyter.engine.models.base import ModelRequest

    request = ModelRequest(model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    await model.stream(request, lambda text: None)


def test_the_first_turn_sends_on_the_connection_preconnect_opened_and_the_key_never_went_with_it(monkeypatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        fake.add(Reply([text("one")]), Reply([text("two")]))

        async def run() -> bool:
            opened = await clients.preconnect()
            await _turn(AnthropicModel("claude-test"))
            await _turn(AnthropicModel("claude-test"))
            return opened

        assert asyncio.run(run()) is True
    heads, posts = fake.ports("HEAD"), fake.ports("POST")
    assert len(heads) == 1 and posts == [heads[0], heads[0]]  # one connection for all three
    assert not any(name.lower() in ("x-api-key", "authorization") for name in fake.head_headers[0])


def test_without_preconnect_the_first_turn_opens_its_own_connection(monkeypatch):
    """The control: the preconnect test's port equality does not come for free."""
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        fake.add(Reply([text("one")]))

        other = http.client.HTTPConnection(fake.base_url.split("//", 1)[1])
        other.request("HEAD", "/")  # a connection that is not the client's
        other.getresponse().read()
        asyncio.run(_turn(AnthropicModel("claude-test")))
        other.close()
    heads, posts = fake.ports("HEAD"), fake.ports("POST")
    assert len(posts) == 1 and posts[0] not in heads


def test_preconnect_to_nothing_is_quiet_and_says_so(monkeypatch):
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: the connection is refused
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
        assert asyncio.run(clients.preconnect()) is False


def _idle_then_turn(fake: FakeAnthropic, idle: float) -> tuple[int, int]:
    fake.add(Reply([text("one")]), Reply([text("two")]))

    async def run() -> None:
        await _turn(AnthropicModel("claude-test"))
        await asyncio.sleep(idle)
        await _turn(AnthropicModel("claude-test"))

    asyncio.run(run())
    first, second = fake.ports("POST")
    return first, second


@pytest.mark.slow
def test_a_connection_idle_past_its_keepalive_is_not_reused(monkeypatch):
    """The control for the slow test below: the pool does drop an idle connection once it expires."""
    monkeypatch.setattr(clients, "KEEPALIVE_S", 0.2)
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        first, second = _idle_then_turn(fake, 0.6)
    assert first != second


@pytest.mark.slow
def test_a_connection_outlives_a_pause_longer_than_the_http_clients_default_five_seconds(monkeypatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        first, second = _idle_then_turn(fake, 6.0)
    assert first == second


def _executor_calls_of_a_turn(model: AnthropicModel) -> list[str]:
    async def run() -> list[str]:
        loop = asyncio.get_running_loop()
        calls: list[str] = []
        submit = loop.run_in_executor

        def recording(executor, func, *args):
            calls.append(getattr(func, "__name__", repr(func)))
            return submit(executor, func, *args)

        loop.run_in_executor = recording  # type: ignore[method-assign]
        await _turn(model)
        return calls

    return asyncio.run(run())


def test_the_first_request_of_a_shared_client_sends_without_a_worker_thread(monkeypatch):
    """The SDK looks its platform up in a worker thread at a client's first request; ours is looked up when made."""
    from anthropic import AsyncAnthropic

    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        fake.add(Reply([text("one")]), Reply([text("two")]))
        clients.prepare()
        ours = _executor_calls_of_a_turn(AnthropicModel("claude-test"))
        bare = _executor_calls_of_a_turn(AnthropicModel("claude-test", client=AsyncAnthropic()))
    assert ours == []
    assert bare  # the control: a client as the SDK makes it does use one
