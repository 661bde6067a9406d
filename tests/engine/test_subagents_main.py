"""A profile as the main agent (``%%agent --agent NAME``) and the main agent's sub-agent listing."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode_jupyter.engine.agents.profiles import ProfileError
from codingcode_jupyter.engine.agents.setup import DEFAULT_MAIN_STEPS, main_agent_setup
from codingcode_jupyter.engine.session import Session
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from tests.engine.helpers import AllowAll, Recorder, make_deps
from tests.fakes.anthropic_server import Reply, text, tool_use


def write_profile(project: Path, name: str, front: str, body: str) -> Path:
    directory = project / ".codingcode" / "agents"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")
    return path


def setup(project: Path, **kw):
    return main_agent_setup(project, registry=ToolRegistry(builtin_tools()), state=SessionState(), home=project / "_home", **kw)


def offered(agent) -> list[str]:
    return [tool.name for tool in agent.resolver.offered()]


def test_plain_main_agent_lists_profiles_and_can_dispatch(tmp_path):
    write_profile(tmp_path, "reviewer", "description: Reviews   a\n  diff.", "Review.")
    agent = setup(tmp_path)
    assert agent.profile is None and agent.model is None and agent.max_steps == DEFAULT_MAIN_STEPS
    assert "dispatch_agent" in offered(agent) and "write_file" in offered(agent)
    system = agent.system()
    assert system.startswith("You are codingcode")
    assert "- explore: " in system and "- plan: " in system and "- reviewer: Reviews a diff." in system
    # A profile added mid-session is listed from the next turn.
    write_profile(tmp_path, "late", "description: Added later.", "Late.")
    assert "- late: Added later." in agent.system()


def test_profile_as_main_agent(tmp_path):
    write_profile(
        tmp_path, "reviewer",
        "description: Reviews.\ntools: [read_file, search_code]\nmodel: claude-haiku-4-5\nmax_steps: 5\npermission_mode: plan",
        "You are a strict reviewer.",
    )
    agent = setup(tmp_path, agent_profile="reviewer")
    assert offered(agent) == ["read_file", "search_code"]  # no dispatch_agent: not in its tool list
    system = agent.system()
    assert system.startswith("You are a strict reviewer.") and "You are codingcode" not in system
    assert "Sub-agents:" not in system and str(tmp_path) in system
    assert agent.model == "claude-haiku-4-5" and agent.max_steps == 5 and agent.profile.permission_mode == "plan"
    # What the person asked for on the command line wins over the profile's model.
    assert setup(tmp_path, agent_profile="reviewer", model="claude-sonnet-5").model == "claude-sonnet-5"


def test_profile_as_main_agent_may_dispatch_when_listed(tmp_path):
    write_profile(tmp_path, "boss", "description: Delegates.\ntools: [read_file, dispatch_agent]", "You delegate.")
    agent = setup(tmp_path, agent_profile="boss")
    assert offered(agent) == ["read_file", "dispatch_agent"]
    assert "- explore: " in agent.system() and "- boss: Delegates." in agent.system()


@pytest.mark.parametrize(
    ("settings", "profile_mode", "asked", "untrusted", "trusted"),
    [
        ({"defaultMode": "bypass"}, "default", None, "default", "default"),
        ({"permissions": {"defaultMode": "default"}}, "bypass", None, "default", "bypass"),
        ({"defaultMode": "default"}, "plan", "acceptEdits", "plan", "plan"),
        ({"defaultMode": "plan"}, "acceptEdits", None, "plan", "acceptEdits"),
        # Both keys in one file, set differently: the stricter applies (and the file is warned about),
        # whichever order the readers look in; a profile asking for `default` loosens it only when trusted.
        ({"defaultMode": "plan", "permissions": {"defaultMode": "acceptEdits"}}, "default", None, "plan", "default"),
        ({"defaultMode": "acceptEdits", "permissions": {"defaultMode": "plan"}}, "default", None, "plan", "default"),
    ],
)
@pytest.mark.parametrize("trust", [False, True])
def test_main_profile_mode_tightens_and_loosens_only_when_trusted(tmp_path, monkeypatch, settings, profile_mode,
                                                                   asked, untrusted, trusted, trust):
    from codingcode_jupyter.engine.runtime import open_session
    from tests.engine.helpers import write_settings

    if not trust:
        monkeypatch.delenv("CODINGCODE_TRUST")
    write_settings(tmp_path, settings)
    write_profile(tmp_path, "p", f"description: x\npermission_mode: {profile_mode}", "P.")
    session = open_session(tmp_path, agent_profile="p", mode=asked, model="demo")
    choice = session.mode_choice()
    assert choice.mode == (trusted if trust else untrusted)
    # The cell's own --mode is never loosened by the profile, trusted or not.
    assert session.mode_choice("plan").mode == "plan"
    # Untrusted, the looser of two modes in one file is not applied at all, so there is nothing to warn about.
    both = "permissions" in settings and "defaultMode" in settings and trust
    assert any("sets the permission mode twice" in w for w in session.settings.current().warnings) == both
    if both:
        assert any("twice" in notice for notice in session.pending_notices)


def test_unusable_main_profile_is_a_clear_error(tmp_path):
    path = write_profile(tmp_path, "bad", "description: x\ntools: 7", "P.")
    with pytest.raises(ProfileError) as raised:
        setup(tmp_path, agent_profile="bad")
    assert str(path) in str(raised.value) and "field 'tools'" in str(raised.value)
    with pytest.raises(ProfileError, match="No agent profile named 'nobody'"):
        setup(tmp_path, agent_profile="nobody")


async def test_session_runs_a_profile_and_dispatches(fake_api, tmp_path):
    """The session as open_session assembles it: a profile as main agent that dispatches explore."""
    write_profile(tmp_path, "boss", "description: Delegates.\ntools: [dispatch_agent]\nmodel: claude-sonnet-5", "You are the boss.")
    agent = setup(tmp_path, agent_profile="boss")
    session = Session(tools=agent.resolver, approver=AllowAll(), model_name=agent.model, system=agent.system,
        max_steps=agent.max_steps, deps=make_deps(tmp_path, dispatch=agent.dispatch),
    )

    def route(body):
        first = body["messages"][0]["content"][0]["text"]
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if first == "look around":
            return [Reply([tool_use("dispatch_agent", {"agent": "explore", "prompt": "list files"}, id="d")]), Reply([text("boss done")])][step]
        return Reply([text("found nothing")], usage={"input_tokens": 1000, "output_tokens": 100})

    fake_api.default = route
    events = Recorder()
    done = await session.run_turn("look around", events)
    assert done.text == "boss done"
    main_request, child_request = fake_api.requests[0], fake_api.requests[1]
    assert main_request["system"][0]["text"].startswith("You are the boss.")
    assert [t["name"] for t in main_request["tools"]] == ["dispatch_agent"]
    assert child_request["system"][0]["text"].startswith("You are explore")
    assert session.usage.input_tokens == 1020 and session.usage.output_tokens == 110
    # The child's todo/turn events do not end the session's turn or touch its transcript's todo.
    assert [e.agent for e in events.of("turn_done")] == ["main/explore#1", "main"]


def test_open_session_with_agent_profile(tmp_path):
    from codingcode_jupyter.engine import runtime

    write_profile(tmp_path, "reviewer", "description: Reviews.\ntools: [read_file]\nmax_steps: 9", "You review.")
    session = runtime.open_session(tmp_path, agent_profile="reviewer", model="demo")
    assert [t.name for t in session.resolver.offered()] == ["read_file"]
    assert session.max_steps == 9 and session.profile is not None and session.profile.name == "reviewer"
    assert (session.system() if callable(session.system) else session.system).startswith("You review.")
    plain = runtime.open_session(tmp_path, model="demo")
    assert "dispatch_agent" in [t.name for t in plain.resolver.offered()]
    assert plain.deps is not None and plain.deps.dispatch is not None
    with pytest.raises(ProfileError):
        runtime.open_session(tmp_path, agent_profile="missing")
