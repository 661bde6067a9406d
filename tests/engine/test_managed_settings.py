"""The organisation's managed settings (engine/managed.py): they outrank every file, mode and
session rule, and nothing below loosens them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.approval.types import ApprovalRequest, Reply
from codingcode_jupyter.engine.doctor import doctor_report
from codingcode_jupyter.engine.modes import decide_mode, forbidden_mode
from codingcode_jupyter.engine.project_settings import ProjectSettings
from tests.engine.approval_helpers import call, context, make_project


def managed(settings: dict, *, claude: bool = False) -> Path:
    """Install ``settings`` as the managed file (ours, or Claude Code's) the way an admin would."""
    directory = Path(os.environ["CODINGCODE_CLAUDE_MANAGED_DIR" if claude else "CODINGCODE_MANAGED_DIR"])
    path = directory / "managed-settings.json"
    path.write_text(json.dumps(settings))
    return path


def user(settings: dict) -> None:
    path = Path(os.environ["CODINGCODE_USER_DIR"]) / "settings.json"
    path.write_text(json.dumps(settings))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, {"permissions": {"allow": ["execute_command(curl *)", "execute_command(pytest *)"],
                                                   "defaultMode": "bypass"}})


async def judge(project: Path, command: str, mode: str = "default", session_rules=()):
    pipeline = ApprovalPipeline(project, python_hooks=[], session_rules=session_rules)
    return await pipeline.evaluate(call("execute_command", {"command": command}), context(project, mode=mode))


async def test_without_a_managed_file_the_project_rules_apply(project: Path):
    assert (await judge(project, "curl https://example.com")).kind == "allow"
    assert not ProjectSettings(project).current().policy.active


@pytest.mark.parametrize("claude", [False, True])
async def test_a_managed_deny_beats_allow_rules_session_rules_and_bypass(project: Path, claude: bool):
    managed({"permissions": {"deny": ["Bash(curl:*)"]}}, claude=claude)
    for mode in ("default", "bypass", "acceptEdits"):
        verdict = await judge(project, "curl https://example.com", mode, session_rules=["execute_command(curl *)"])
        assert verdict.kind == "deny", (mode, verdict)
        assert "managed settings" in verdict.reason
    # What the policy does not name is untouched.
    assert (await judge(project, "pytest -q")).kind == "allow"


async def test_a_managed_ask_is_forced_and_offers_no_rule_to_save(project: Path):
    managed({"permissions": {"ask": ["Bash(pytest:*)"]}})
    for mode in ("default", "bypass", "auto"):
        verdict = await judge(project, "pytest -q", mode)
        assert verdict.kind == "ask" and verdict.forced, (mode, verdict)
        assert verdict.allow_choices == [] and verdict.policy
    # Without the policy the same call is allowed by the project's rule.
    os.remove(Path(os.environ["CODINGCODE_MANAGED_DIR"]) / "managed-settings.json")
    assert (await judge(project, "pytest -q")).kind == "allow"


async def test_always_on_a_policy_question_allows_once_and_saves_nothing(project: Path):
    managed({"permissions": {"ask": ["Bash(pytest:*)"]}})
    pipeline = ApprovalPipeline(project, python_hooks=[])
    asked: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest):
        asked.append(request)
        return Reply(answer="always")

    decision = await pipeline.decide(call("execute_command", {"command": "pytest -q"}), context(project), ask)
    assert decision.kind == "allow"
    assert asked[0].policy and asked[0].forced
    local = project / ".codingcode" / "settings.local.json"
    assert not local.exists() or "pytest" not in local.read_text()


async def test_managed_rules_only_drops_every_other_files_and_the_sessions_rules(project: Path):
    managed({"allowManagedPermissionRulesOnly": True, "permissions": {"allow": ["Bash(ls:*)"]}})
    verdict = await judge(project, "pytest -q", session_rules=["execute_command(pytest *)"])
    assert verdict.kind == "ask"
    assert verdict.allow_choices == [] and verdict.deny_choices == [] and verdict.policy
    effective = ProjectSettings(project).current()
    assert effective.policy.rules_only
    assert any(entry.key == "permissions.allow" and "allowManagedPermissionRulesOnly" in entry.reason
               for entry in effective.policy.overrides)


async def test_allow_managed_rules_only_in_a_project_file_is_ignored(project: Path):
    (project / ".codingcode" / "settings.json").write_text(json.dumps(
        {"allowManagedPermissionRulesOnly": True, "permissions": {"allow": ["execute_command(pytest *)"]}}))
    assert (await judge(project, "pytest -q")).kind == "allow"
    assert not ProjectSettings(project).current().policy.rules_only


def test_managed_hooks_only_keeps_only_the_policys_hooks(project: Path):
    hook = {"hooks": [{"type": "command", "command": "true"}]}
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [hook]}}))
    assert len(ProjectSettings(project).current().hooks) == 1
    managed({"allowManagedHooksOnly": True, "hooks": {"Stop": [hook]}})
    effective = ProjectSettings(project).current()
    assert [h.event for h in effective.hooks] == ["Stop"]
    assert effective.merged.hooks.PreToolUse == []


def test_bypass_disabled_by_the_policy_holds_for_every_way_of_asking(project: Path):
    managed({"permissions": {"disableBypassPermissionsMode": "disable"}})
    effective = ProjectSettings(project).current()
    # The project's defaultMode says bypass; the session and the cell ask for it too.
    assert decide_mode(settings=effective).mode == "default"
    assert decide_mode(session="bypass", settings=effective).mode == "default"
    assert decide_mode(cell="bypass", settings=effective).mode == "default"
    assert decide_mode(profile="bypass", profile_trusted=True, settings=effective).mode == "default"
    assert "disableBypassPermissionsMode" in (forbidden_mode(effective, "bypass") or "")
    assert forbidden_mode(effective, "acceptEdits") is None


def test_the_policys_mode_is_the_loosest_a_turn_may_have(project: Path):
    managed({"permissions": {"defaultMode": "acceptEdits"}})
    effective = ProjectSettings(project).current()
    # The project's bypass is overridden, and reported as such.
    assert decide_mode(settings=effective).mode == "acceptEdits"
    assert any(entry.key == "permissions.defaultMode" for entry in effective.policy.overrides)
    assert decide_mode(session="auto", settings=effective).mode == "acceptEdits"
    # Tightening is still the person's.
    assert decide_mode(cell="plan", settings=effective).mode == "plan"
    assert decide_mode(cell="default", settings=effective).mode == "default"
    assert "looser" in (forbidden_mode(effective, "bypass") or "")


def test_auto_mode_can_be_disabled(project: Path):
    managed({"permissions": {"disableAutoMode": "disable"}})
    effective = ProjectSettings(project).current()
    assert decide_mode(session="auto", settings=effective).mode == "default"


def test_values_and_env_of_the_policy_win(project: Path):
    user({"model": "claude-opus-4-5", "env": {"A": "user", "B": "user"}})
    managed({"model": "claude-haiku-4-5", "env": {"A": "managed"}})
    effective = ProjectSettings(project).current()
    assert effective.merged.model == "claude-haiku-4-5"
    assert effective.merged.env == {"A": "managed", "B": "user"}
    assert effective.policy.env == {"A": "managed"}
    assert any(entry.key == "model" for entry in effective.policy.overrides)


def test_forced_sandbox_settings_cannot_be_widened(project: Path):
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"sandbox": {
        "enabled": False, "filesystem": {"allowWrite": ["/tmp/elsewhere"], "denyRead": ["secret"]},
        "network": {"allowedDomains": ["evil.example"]}}}))
    managed({"sandbox": {"enabled": True, "failIfUnavailable": True, "network": {"allowedDomains": ["pypi.org"]},
                         "filesystem": {"allowWrite": ["/srv/shared"]}}})
    merged = ProjectSettings(project).current().merged
    assert merged.sandbox.enabled and merged.sandbox.failIfUnavailable
    assert merged.sandbox.network.allowedDomains == ["pypi.org"]
    assert merged.sandbox.filesystem.allowWrite == ["/srv/shared"]
    # A list that tightens still adds up.
    assert merged.sandbox.filesystem.denyRead == ["secret"]


def test_model_allowlist_narrows_and_nothing_widens_it(project: Path):
    managed({"availableModels": ["sonnet", "claude-haiku-4-5"], "deniedModels": ["claude-sonnet-4-0"]})
    user({"availableModels": ["opus", "sonnet", "haiku"]})
    effective = ProjectSettings(project).current()
    assert effective.model_refusal("claude-sonnet-5") is None
    assert effective.model_refusal("sonnet") is None
    assert effective.model_refusal("claude-haiku-4-5-20251001") is None
    assert "availableModels" in (effective.model_refusal("claude-opus-4-5") or "")
    assert "availableModels" in (effective.model_refusal("opus") or "")
    assert "deniedModels" in (effective.model_refusal("claude-sonnet-4-0") or "")
    assert effective.model_refusal("demo") is None


def test_api_key_helper_is_not_read_from_a_project(project: Path):
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"apiKeyHelper": "echo stolen"}))
    effective = ProjectSettings(project).current()
    assert effective.merged.apiKeyHelper is None
    user({"apiKeyHelper": "echo mine"})
    assert ProjectSettings(project).current().merged.apiKeyHelper == "echo mine"


def test_a_change_to_the_managed_file_applies_at_once(project: Path):
    settings = ProjectSettings(project)
    assert settings.current().default_mode == "bypass"
    managed({"permissions": {"defaultMode": "plan"}})
    assert settings.current().default_mode == "plan"


def test_doctor_shows_the_policy_and_what_it_overrides(project: Path):
    path = managed({"permissions": {"deny": ["Bash(curl:*)"], "defaultMode": "default"},
                    "allowManagedPermissionRulesOnly": True})
    effective = ProjectSettings(project).current()
    text = doctor_report(project, effective).render()
    section = text.split("Managed policy (what it overrides)")[1].split("No effect here")[0]
    assert str(path) in section
    assert "allowManagedPermissionRulesOnly" in section
    assert "overrides" in section and "permissions.defaultMode" in section
    assert "managed" in text.split("Files read")[1].split("Managed policy")[0]


def test_a_broken_managed_file_is_an_error_not_an_empty_policy(project: Path):
    from codingcode_jupyter.engine.settings import SettingsError

    path = Path(os.environ["CODINGCODE_MANAGED_DIR"]) / "managed-settings.json"
    path.write_text("{not json")
    with pytest.raises(SettingsError, match="managed-settings.json"):
        ProjectSettings(project).current()


@pytest.mark.parametrize(("platform", "ours", "claude"), [
    ("linux", "/etc/codingcode", "/etc/claude-code"),
    ("darwin", "/Library/Application Support/codingcode", "/Library/Application Support/ClaudeCode"),
    ("win32", r"C:\ProgramData\codingcode", r"C:\Program Files\ClaudeCode"),
])
def test_the_managed_files_are_where_each_platform_keeps_them(monkeypatch: pytest.MonkeyPatch, platform: str,
                                                              ours: str, claude: str):
    from codingcode_jupyter.engine import managed_paths

    monkeypatch.delenv("CODINGCODE_MANAGED_DIR", raising=False)
    monkeypatch.delenv("CODINGCODE_CLAUDE_MANAGED_DIR", raising=False)
    monkeypatch.setattr(managed_paths.sys, "platform", platform)
    assert (str(managed_paths.managed_dir()), str(managed_paths.claude_managed_dir())) == (ours, claude)
