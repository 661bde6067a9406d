"""A project carrying Claude Code's configuration (tests/data/claude) works here unchanged: every file
loads, every key applies or is reported, every deny rule denies what it names in every mode."""

from __future__ import annotations

import json

import pytest

from codingcode_jupyter.__main__ import check_permission
from codingcode_jupyter.engine.agents.profiles import load_profiles
from codingcode_jupyter.engine.doctor import doctor_report
from codingcode_jupyter.engine.mcp.config import read_mcp_config
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.prompts import build_system_prompt, loaded_instructions
from codingcode_jupyter.engine.settings import HooksSettings, PermissionsSettings, SandboxSettings, Settings
from tests.engine.claude_helpers import corpus_rules, deny_cases, install_corpus


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    return install_corpus(tmp_path, monkeypatch)


def _unknown_keys(raw: dict) -> set[str]:
    """The keys of a settings file our schema does not have, dotted (what must be reported)."""
    keys = {key for key in raw if key not in Settings.model_fields}
    for section, model in (("permissions", PermissionsSettings), ("hooks", HooksSettings), ("sandbox", SandboxSettings)):
        keys |= {f"{section}.{key}" for key in raw.get(section, {}) if key not in model.model_fields}
    keys |= {f"sandbox.network.{key}" for key in raw.get("sandbox", {}).get("network", {}) if key != "allowedDomains"}
    return keys


def test_every_settings_file_loads_and_every_unused_key_is_reported(corpus):
    project, claude_dir = corpus
    effective = ProjectSettings(project).current()
    assert effective.warnings == ()
    for path in (project / ".claude" / "settings.json", project / ".claude" / "settings.local.json",
                 claude_dir / "settings.json"):
        raw = json.loads(path.read_text())
        reported = {entry.key for entry in effective.ignored_settings if entry.path == path}
        assert _unknown_keys(raw) <= reported, (path, _unknown_keys(raw) - reported)
        assert all(entry.reason for entry in effective.ignored_settings)
    # What the files do set applies: their rules (as written), env, model, the bypass lock.
    texts = {rule.text for rule in effective.rules}
    for action in ("allow", "deny", "ask"):
        assert set(corpus_rules(claude_dir, project, action)) <= texts
    assert effective.merged.env == {"FOO": "bar", "NODE_ENV": "test", "LOCAL_ONLY": "1"}
    assert effective.merged.model == "sonnet" and effective.bypass_disabled
    # The local file is more specific than the project's: its mode wins.
    assert effective.default_mode == "default" and effective.default_mode_source == "claude-local"
    events = {hook.event for hook in effective.hooks}
    assert events == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "Notification", "UserPromptSubmit", "Stop",
                      "SubagentStop", "PreCompact", "SessionStart", "SessionEnd", "PermissionRequest", "SubagentStart"}
    assert {hook.dialect for hook in effective.hooks} == {"claude"}


def test_every_agent_file_loads_with_its_fields_honoured_or_reported(corpus):
    project, claude_dir = corpus
    catalog = load_profiles(project)
    assert catalog.errors == {}
    reviewer = catalog.get("code-reviewer")
    assert reviewer.tools == ("read_file", "search_code", "search_files", "execute_command", "github:get_issue")
    assert reviewer.disallowed_tools == ("write_file", "edit_file")
    assert reviewer.model == "claude-haiku-4-5" and reviewer.max_steps == 12
    assert reviewer.permission_mode == "acceptEdits" and reviewer.mcp_servers == ("github",)
    for field in ("color", "memory", "hooks", "isolation", "background", "effort", "initialPrompt"):
        assert any(f"'{field}'" in note for note in reviewer.ignored), field
    assert reviewer.skills  # skills are read now: the agent starts with their instructions
    assert any("mcpServers" in note for note in reviewer.ignored)  # the inline server definition
    assert catalog.get("explorer").model is None  # inherit
    assert catalog.get("runner").permission_mode == "bypass" and catalog.get("runner").model == "claude-opus-4-5"
    helper = catalog.get("helper")  # the person's own ~/.claude/agents
    assert helper.source == "claude-user" and helper.mode_trusted and helper.tools == ("read_file",)


def test_mcp_json_loads_with_extra_keys_and_unsafe_names(corpus, monkeypatch):
    project, _ = corpus
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    config = read_mcp_config(project)
    assert config.errors == {}
    assert set(config.servers) == {"memory", "github", "legacy_events", "filesystem"}
    assert config.renamed == {"legacy_events": "legacy events"}
    assert config.servers["memory"].env["MEMORY_DIR"] == f"{project.resolve()}/.memory"
    assert config.servers["filesystem"].args[-1] == str(project.resolve())
    assert config.servers["legacy_events"].type == "sse"
    for key in ("description", "disabled", "alwaysAllow"):
        assert any(f"'{key}'" in note for note in config.notes), key


def test_claude_md_and_its_imports_reach_the_prompt_and_secrets_do_not(corpus):
    project, _ = corpus
    prompt = build_system_prompt(project)
    for marker in ("CORPUS-README-MARKER", "CORPUS-STYLE-MARKER", "CORPUS-LOCAL-MARKER", "CORPUS-DOT-CLAUDE-MARKER",
                   "CORPUS-USER-MARKER"):
        assert marker in prompt, marker
    assert "CORPUS-NOT-IMPORTED-MARKER" not in prompt  # inside a code block
    assert "do-not-import" not in prompt
    claude_md = next(info for info in loaded_instructions(project) if info.name == "CLAUDE.md")
    assert any(".env" in why and "dotenv" in why for why in claude_md.refused)
    assert {p.rsplit("/", 1)[-1] for p in claude_md.imports} == {"style.md", "README.md", "CLAUDE.local.md"}


def _without_bypass_lock(project):
    path = project / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    del data["permissions"]["disableBypassPermissionsMode"]
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("trusted", [True, False])
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypass"])
async def test_every_deny_rule_denies_the_call_it_names(corpus, monkeypatch, mode, trusted):
    project, claude_dir = corpus
    if not trusted:
        monkeypatch.delenv("CODINGCODE_TRUST")  # deny rules apply at once, trusted or not
    if mode == "bypass":
        _without_bypass_lock(project)  # else the corpus itself turns bypass off (tested below)
    cases = deny_cases(project, claude_dir)
    rules = corpus_rules(claude_dir, project, "deny")
    assert set(rules) == set(cases), "every deny rule of the corpus needs a case, and every case a rule"
    for rule in rules:
        for tool, tool_input in cases[rule]:
            result = await check_permission(project, tool, tool_input, mode, sandbox="off")
            assert result["mode"] == mode
            assert result["decision"] == "deny" and result["rule"] == rule, (rule, tool, tool_input, result)


async def test_the_corpus_locks_bypass_mode_off(corpus):
    project, _ = corpus
    result = await check_permission(project, "execute_command", {"command": "make"}, "bypass", sandbox="off")
    assert result["mode"] == "default" and result["decision"] != "allow"


async def test_allow_and_ask_rules_of_the_corpus_apply_once_trusted(corpus, monkeypatch):
    project, _ = corpus
    monkeypatch.setenv("CC_TEST_LOG", str(project / "hooks.log"))
    allowed = await check_permission(project, "execute_command", {"command": "npm run test -- --watch"}, "default",
                                     sandbox="on")
    assert allowed["decision"] == "allow" and allowed["rule"] == "Bash(npm run test:*)"
    asked = await check_permission(project, "execute_command", {"command": "git push origin main"}, "default",
                                   sandbox="on")
    assert asked["decision"] == "ask" and asked["rule"] == "Bash(git push:*)"
    # The project's Bash hook ran for both, told Claude Code's name for the tool.
    told = [json.loads(line) for line in (project / "hooks.log").read_text().splitlines()]
    assert [(t["argv"], t["payload"]["tool_name"]) for t in told] == [("PreToolUse", "Bash")] * 2
    monkeypatch.delenv("CODINGCODE_TRUST")
    untrusted = await check_permission(project, "execute_command", {"command": "npm run test"}, "default", sandbox="on")
    assert untrusted["decision"] == "ask" and untrusted["layer"] == "trust"


def test_doctor_names_every_file_key_rule_and_hook_of_the_corpus(corpus):
    project, claude_dir = corpus
    effective = ProjectSettings(project).current()
    text = doctor_report(project, effective).render()
    for path in (project / ".claude" / "settings.json", project / ".claude" / "settings.local.json",
                 claude_dir / "settings.json", project / ".claude" / "agents" / "code-reviewer.md"):
        assert str(path) in text, path
    for entry in effective.ignored_settings:
        assert entry.describe() in text
    for action in ("allow", "deny", "ask"):
        for rule in corpus_rules(claude_dir, project, action):
            assert f"{rule}  (" in text, rule
    for hook in effective.hooks:
        assert f"{hook.event}: " in text and hook.command in text
    assert "legacy events" in text and "mcp__legacy_events__TOOL" in text
