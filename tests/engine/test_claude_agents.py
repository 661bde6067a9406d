"""Claude Code's agent files: their tools, models, turns, modes and the fields we do not use."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode_jupyter.engine.agents.dispatch import profile_resolver
from codingcode_jupyter.engine.agents.profiles import ProfileError, load_profile_file, load_profiles, profile_mode
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from codingcode_jupyter.engine.tools.registry import ToolRegistry


def agent(project: Path, name: str, front: str, body: str = "Do the work.") -> Path:
    directory = project / ".claude" / "agents"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(f"---\nname: {name}\n{front}\n---\n{body}\n")
    return path


def offered(project: Path, name: str) -> list[str]:
    profile = load_profiles(project).get(name)
    resolver = profile_resolver(ToolRegistry(builtin_tools()), profile, state=SessionState(), can_dispatch=False)
    return [tool.name for tool in resolver.offered()]


def test_claude_code_tool_names_give_the_agent_those_tools(tmp_path):
    agent(tmp_path, "reader", "description: reads\ntools: Read, Grep, Glob")
    assert offered(tmp_path, "reader") == ["read_file", "search_code", "search_files"]


def test_disallowed_tools_are_never_offered(tmp_path):
    agent(tmp_path, "no-shell", "description: x\ndisallowedTools: Bash, WebFetch")
    names = offered(tmp_path, "no-shell")
    assert "execute_command" not in names and "fetch_url" not in names and "read_file" in names


@pytest.mark.parametrize(("written", "model"), [("haiku", "claude-haiku-4-5"), ("opus", "claude-opus-4-5"),
                                                ("sonnet", "claude-sonnet-5"), ("inherit", None),
                                                ("claude-some-id", "claude-some-id")])
def test_model_aliases_become_model_ids(tmp_path, written, model):
    agent(tmp_path, "m", f"description: x\nmodel: {written}")
    assert load_profiles(tmp_path).get("m").model == model


def test_max_turns_and_mode_names(tmp_path):
    agent(tmp_path, "t", "description: x\nmaxTurns: 9\npermissionMode: bypassPermissions")
    profile = load_profiles(tmp_path).get("t")
    assert profile.max_steps == 9 and profile.permission_mode == "bypass"


def test_unused_fields_are_kept_out_and_listed_and_near_misses_are_errors(tmp_path):
    path = agent(tmp_path, "c", "description: x\ncolor: red\nskills: [a]\nmemory: user\nnewFieldFromTheFuture: 1")
    profile = load_profile_file(path)
    assert any("'color'" in note for note in profile.ignored) and any("newFieldFromTheFuture" in n for n in profile.ignored)
    bad = agent(tmp_path, "d", "description: x\ndisalowedTools: Bash")
    with pytest.raises(ProfileError, match="did you mean 'disallowedTools'"):
        load_profile_file(bad)


def test_a_looser_project_mode_needs_trust_and_a_stricter_one_applies_at_once(tmp_path, monkeypatch):
    monkeypatch.delenv("CODINGCODE_TRUST")
    loose = agent(tmp_path, "loose", "description: x\npermissionMode: acceptEdits")
    agent(tmp_path, "strict", "description: x\npermissionMode: plan")
    settings = ProjectSettings(tmp_path)
    effective = settings.current()
    assert [item.kind for item in effective.ignored] == ["agentMode"] and str(loose) in effective.untrusted_profile_modes
    catalog = load_profiles(tmp_path, untrusted_modes=effective.untrusted_profile_modes)
    assert profile_mode("default", catalog.get("loose")) == "default"
    assert profile_mode("default", catalog.get("strict")) == "plan"
    settings.trust()
    catalog = load_profiles(tmp_path, untrusted_modes=settings.current().untrusted_profile_modes)
    assert profile_mode("plan", catalog.get("loose")) == "acceptEdits"


def test_the_persons_own_agent_files_are_trusted(tmp_path, monkeypatch):
    monkeypatch.delenv("CODINGCODE_TRUST")
    home = tmp_path / "home"
    (home / ".claude" / "agents").mkdir(parents=True)
    (home / ".claude" / "agents" / "mine.md").write_text("---\nname: mine\ndescription: x\npermissionMode: acceptEdits\n---\nGo.\n")
    profile = load_profiles(tmp_path / "proj", home=home, untrusted_modes=frozenset()).get("mine")
    assert profile.source == "claude-user" and profile_mode("plan", profile) == "acceptEdits"


def test_ours_replace_claude_codes_of_the_same_name_at_the_same_level(tmp_path):
    agent(tmp_path, "twin", "description: from .claude")
    ours = tmp_path / ".codingcode" / "agents"
    ours.mkdir(parents=True)
    (ours / "twin.md").write_text("---\ndescription: from .codingcode\n---\nGo.\n")
    assert load_profiles(tmp_path).get("twin").description == "from .codingcode"


def test_a_settings_files_model_alias_is_resolved_where_every_model_is(tmp_path):
    from codingcode_jupyter.engine.models import resolve_model_name
    from codingcode_jupyter.engine.models.aliases import MODEL_ALIASES

    for alias, model_id in MODEL_ALIASES.items():
        assert resolve_model_name(alias)[0] == model_id
    assert resolve_model_name("claude-exact-id")[0] == "claude-exact-id"
