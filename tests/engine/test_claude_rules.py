"""Claude Code's rule language, wherever a rule is written: tool names, `:*` and `*`, the four path
forms, domains, MCP names; and what happens to a rule that names nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.rule_syntax import RuleError, parse_rule
from codingcode_jupyter.engine.approval.rules import judge
from codingcode_jupyter.engine.approval.subject import build_subject
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.settings import SettingsError
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from tests.engine.approval_helpers import mcp_tool

TOOLS = {tool.name: tool for tool in builtin_tools()}


def decide(project: Path, rule: str, tool: str, tool_input: dict, action: str = "deny", anchor: Path | None = None):
    definition = TOOLS[tool] if tool in TOOLS else mcp_tool(tool)
    verdict = judge(build_subject(definition, tool_input, project), [parse_rule(rule, action, anchor=anchor)])  # type: ignore[arg-type]
    return verdict.action if verdict is not None else None


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "vendor" / "pkg" / "src").mkdir(parents=True)
    return Path(os.path.realpath(root))


@pytest.mark.parametrize(("rule", "command", "matches"), [
    ("Bash(npm run test:*)", "npm run test", True),
    ("Bash(npm run test:*)", "npm run test -- --watch", True),
    ("Bash(npm run test:*)", "npm run testing", False),
    ("Bash(npm *)", "npm install", True),
    ("Bash(npm *)", "npmx install", False),
    ("Bash(ls*)", "lsof", True),
    ("Bash(ls *)", "lsof", False),
    ("Bash(git * main)", "git merge main", True),
    ("Bash(git * main)", "git log", False),
    ("Bash(npm run build)", "npm run build --watch", False),
    ("Bash(*)", "anything at all", True),
    ("Bash", "anything at all", True),
    ("execute_command(npm test:*)", "npm test -x", True),  # our name takes the suffix form too
])
def test_command_patterns_match_as_in_claude_code(project, rule, command, matches):
    assert (decide(project, rule, "execute_command", {"command": command}) == "deny") is matches


def test_compound_commands_allow_only_when_every_part_is_covered_and_deny_on_any_part(project):
    assert decide(project, "Bash(npm *)", "execute_command", {"command": "npm test && npm run lint"}, "allow") == "allow"
    assert decide(project, "Bash(npm *)", "execute_command", {"command": "npm test && curl x | sh"}, "allow") is None
    assert decide(project, "Bash(curl:*)", "execute_command", {"command": "npm test; curl -s x"}) == "deny"
    assert decide(project, "Bash(curl:*)", "execute_command", {"command": 'echo "$(curl x)"'}) == "deny"


@pytest.mark.parametrize(("rule", "path", "action", "matches"), [
    # Bare names match at any depth (gitignore); so do one-directory patterns in deny and ask rules.
    ("Read(.env)", "a/b/.env", "deny", True),
    ("Read(./.env)", ".env", "deny", True),
    ("Read(./secrets/**)", "x/secrets/k", "deny", True),
    ("Read(./secrets/**)", "x/secrets/k", "allow", False),
    ("Read(./secrets/**)", "secrets/k", "allow", True),
    ("Edit(src/**)", "src/pkg/a.py", "allow", True),
    ("Edit(src/**)", "vendor/pkg/src/lib.js", "allow", False),
    ("Edit(src/**)", "vendor/pkg/src/lib.js", "deny", True),
    ("Edit(/src/**)", "vendor/pkg/src/lib.js", "deny", False),
    ("Edit(/src/**)", "src/pkg/a.py", "deny", True),
    ("Edit(**/src/**)", "vendor/pkg/src/lib.js", "allow", True),
    ("Edit(src/pkg/**)", "vendor/src/pkg/a", "deny", False),
    # A pattern naming a directory covers what is in it.
    ("Read(secrets)", "secrets/deep/k.txt", "deny", True),
])
def test_relative_path_forms(project, rule, path, action, matches):
    tool = "read_file" if rule.startswith("Read") else "write_file"
    tool_input = {"path": path} if tool == "read_file" else {"path": path, "content": ""}
    assert (decide(project, rule, tool, tool_input, action) == action) is matches


def test_absolute_home_and_anchored_path_forms(project, tmp_path):
    home = os.path.realpath(os.path.expanduser("~"))
    assert decide(project, "Read(//tmp/cc-abs/**)", "read_file", {"path": "/tmp/cc-abs/x"}) == "deny"
    # A single slash is not absolute: it starts at the settings file's anchor.
    assert decide(project, "Read(/tmp/cc-abs/**)", "read_file", {"path": "/tmp/cc-abs/x"}) is None
    assert decide(project, "Read(/tmp/cc-abs/**)", "read_file", {"path": "tmp/cc-abs/x"}) == "deny"
    assert decide(project, "Read(~/.cc-notes/**)", "read_file", {"path": f"{home}/.cc-notes/a"}) == "deny"
    assert decide(project, "Read(~/.cc-notes/**)", "read_file", {"path": "~/.cc-notes/a"}) == "deny"
    user = tmp_path / "claude-user"
    assert decide(project, "Read(/secrets/**)", "read_file", {"path": f"{user}/secrets/t"}, anchor=user) == "deny"
    assert decide(project, "Read(/secrets/**)", "read_file", {"path": "secrets/t"}, anchor=user) is None


def test_anchors_come_from_the_file_that_holds_the_rule(project, monkeypatch, tmp_path):
    user = tmp_path / "claude-user"
    user.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(user))
    (user / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(/secrets/**)"]}}))
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(/private/**)"]}}))
    rules = ProjectSettings(project).current().rules
    by_text = {rule.text: rule for rule in rules}
    assert by_text["Read(/secrets/**)"].anchor == str(user)
    assert by_text["Read(/private/**)"].anchor == str(project)


def test_a_symlink_is_judged_by_both_its_paths(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "key").write_text("k")
    (project / "link").symlink_to(outside / "key")
    # Deny holds when either the written path or its target matches.
    assert decide(project, "Read(./link)", "read_file", {"path": "link"}) == "deny"
    assert decide(project, f"Read(/{outside}/**)", "read_file", {"path": "link"}) == "deny"
    # Allow needs both: a link inside pointing outside is not allowed by an inside rule.
    assert decide(project, "Read(./link)", "read_file", {"path": "link"}, "allow") is None


@pytest.mark.parametrize(("rule", "url", "matches"), [
    ("WebFetch(domain:example.com)", "https://example.com/a", True),
    ("WebFetch(domain:example.com)", "https://api.example.com/a", False),
    ("WebFetch(domain:*.example.com)", "https://a.b.example.com/", True),
    ("WebFetch(domain:*)", "https://anything.test/", True),
    ("WebFetch", "https://anything.test/", True),
])
def test_webfetch_domains(project, rule, url, matches):
    assert (decide(project, rule, "fetch_url", {"url": url}) == "deny") is matches


@pytest.mark.parametrize(("rule", "tool", "matches"), [
    ("mcp__github", "github:create_issue", True),
    ("mcp__github__*", "github:create_issue", True),
    ("mcp__github__create_issue", "github:create_issue", True),
    ("mcp__github__create_issue", "github:delete_issue", False),
    ("mcp__github__get_*", "github:get_pr", True),
    ("mcp__my_server__x", "my_server:x", True),
    ("mcp__*", "anything:tool", True),
    ("mcp__*", "read_file", False),
])
def test_mcp_names(project, rule, tool, matches):
    tool_input = {"path": "a"} if tool in TOOLS else {}
    assert (decide(project, rule, tool, tool_input) == "deny") is matches


@pytest.mark.parametrize(("rule", "tool", "tool_input"), [
    ("Read", "read_file", {"path": "a"}),
    ("Edit", "write_file", {"path": "a", "content": ""}),
    ("MultiEdit", "edit_file", {"path": "a", "old_string": "x", "new_string": "y"}),
    ("Glob", "search_files", {"pattern": "*"}),
    ("Grep", "search_code", {"pattern": "x"}),
    ("LS", "search_files", {"pattern": "*"}),
    ("WebSearch", "web_search", {"query": "q"}),
    ("TodoWrite", "todo_write", {"plan": []}),
    ("Task(Explore)", "dispatch_agent", {"agent": "explore", "prompt": "p"}),
    ("Agent(Plan)", "dispatch_agent", {"agent": "plan", "prompt": "p"}),
])
def test_claude_code_tool_names_name_ours(project, rule, tool, tool_input):
    from codingcode_jupyter.engine.agents.dispatch import dispatch_agent_tool

    TOOLS.setdefault("dispatch_agent", dispatch_agent_tool())
    assert decide(project, rule, tool, tool_input) == "deny"


def test_notebook_edit_covers_notebook_files_only(project):
    assert decide(project, "NotebookEdit", "edit_file", {"path": "a.ipynb", "old_string": "x", "new_string": "y"}) == "deny"
    assert decide(project, "NotebookEdit", "edit_file", {"path": "a.py", "old_string": "x", "new_string": "y"}) is None


def _write(project: Path, permissions: dict) -> None:
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": permissions}))


@pytest.mark.parametrize("name", ["bash(rm *)", "read_files(secrets/**)", "Read ./secrets", "mcp__git*", "WebFetch(domain:a b)",
                                  "Bash(rm -rf *"])
@pytest.mark.parametrize("action", ["deny", "ask"])
def test_a_deny_or_ask_rule_that_names_nothing_is_reported_and_the_others_hold(project, name, action):
    # One unreadable rule used to switch the whole file off (its other deny rules with it).
    _write(project, {action: [name, "Bash(curl:*)"]})
    effective = ProjectSettings(project).current()
    assert any(f"permissions.{action}.0 is left out" in w for w in effective.warnings), effective.warnings
    assert [rule.text for rule in effective.rules] == ["Bash(curl:*)"]
    subject = build_subject(TOOLS["execute_command"], {"command": "curl http://x"}, project)
    verdict = judge(subject, effective.rules)
    assert verdict is not None and verdict.action == action


def test_an_invalid_value_is_reported_and_only_that_key_is_ignored(project):
    # Claude Code's own templates carry values we do not have; the rest of the file must apply.
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"defaultMode": "allowEdits", "deny": ["Bash(git push:*)"], "ask": ["Bash(rm:*)"]},
        "model": 42, "env": {"A": "1"}}))
    effective = ProjectSettings(project).current()
    assert [rule.text for rule in effective.rules] == ["Bash(git push:*)", "Bash(rm:*)"]
    assert effective.merged.env == {"A": "1"}
    notes = " | ".join(effective.warnings)
    assert "permissions.defaultMode = \"allowEdits\" is not valid" in notes and "'acceptEdits'" in notes, notes
    assert "model = 42 is not valid" in notes and str(project / ".claude" / "settings.json") in notes
    assert effective.default_mode is None


def test_an_allow_rule_that_names_nothing_is_a_warning_and_does_nothing(project):
    _write(project, {"allow": ["bash(rm *)", "Bash(ls *)"]})
    effective = ProjectSettings(project).current()
    assert [rule.text for rule in effective.rules] == ["Bash(ls *)"]
    assert any("permissions.allow.0" in w and "did you mean 'Bash'" in w for w in effective.warnings)


def test_suggestions_and_what_names_could_be_tools(project):
    with pytest.raises(RuleError, match="did you mean 'read_file'"):
        parse_rule("read_files", "deny")
    with pytest.raises(RuleError, match="case-sensitive"):
        parse_rule("WEBFETCH", "deny")
    # Tools that may be registered later pass: custom tools from a cell, MCP tools, kernel tools.
    for name in ("my_custom_tool", "server:tool", "mcp__srv__tool", "run_python", "insert_cell", "everything:*"):
        parse_rule(name, "deny")


def test_a_claude_code_tool_with_no_counterpart_is_kept_and_said_to_apply_to_nothing(project):
    _write(project, {"deny": ["KillShell"], "allow": ["SlashCommand(deploy)"]})
    effective = ProjectSettings(project).current()
    assert {rule.text for rule in effective.inert_rules} == {"KillShell", "SlashCommand(deploy)"}
    assert any("SlashCommand(deploy)" in w and "allows nothing" in w for w in effective.warnings)
    assert decide(project, "KillShell", "execute_command", {"command": "kill 1"}) is None


def test_unknown_settings_keys_are_reported_and_near_misses_are_errors(project):
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"statusLine": {}, "permissions": {"deny": []}}))
    effective = ProjectSettings(project).current()
    assert [entry.key for entry in effective.ignored_settings] == ["statusLine"]
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"permisions": {"deny": ["Bash(rm *)"]}}))
    with pytest.raises(SettingsError, match="did you mean 'permissions'"):
        ProjectSettings(project).current()
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUser": []}}))
    with pytest.raises(SettingsError, match="did you mean 'PreToolUse'"):
        ProjectSettings(project).current()


def test_modes_in_claude_codes_spelling(project):
    _write(project, {"defaultMode": "bypassPermissions"})
    assert ProjectSettings(project).current().default_mode == "bypass"
    _write(project, {"defaultMode": "dontAsk"})
    effective = ProjectSettings(project).current()
    assert effective.default_mode == "default"
    assert any(entry.key == "permissions.defaultMode" and "dontAsk" in entry.reason for entry in effective.ignored_settings)


def test_ours_are_more_specific_than_claude_codes_at_the_same_level(project):
    _write(project, {"defaultMode": "plan"})
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"},
                                                                       "model": "ours"}))
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "plan"},
                                                                   "model": "theirs"}))
    effective = ProjectSettings(project).current()
    assert effective.default_mode == "acceptEdits" and effective.merged.model == "ours"
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"model": "local-theirs"}))
    assert ProjectSettings(project).current().merged.model == "local-theirs"  # a more specific level wins


def test_parameter_rules(project):
    from codingcode_jupyter.engine.agents.dispatch import dispatch_agent_tool

    TOOLS.setdefault("dispatch_agent", dispatch_agent_tool())
    rule = parse_rule("Task(subagent_type:Explore)", "deny")
    assert rule.text == "Task(subagent_type:Explore)"
    assert decide(project, "Task(subagent_type:Explore)", "dispatch_agent", {"agent": "explore", "prompt": "p"}) == "deny"
    # A parameter our tool does not have: kept, and said to apply to nothing (no call can carry it).
    assert parse_rule("Bash(run_in_background:true)", "deny").missing
    # `prefix:*` is not a parameter.
    assert decide(project, "Bash(git:*)", "execute_command", {"command": "git status"}) == "deny"


async def test_tool_search_finds_an_mcp_tool_by_its_claude_code_name():
    from codingcode_jupyter.engine.tools.base import ToolContext
    from codingcode_jupyter.engine.tools.tool_search import make_tool_search

    deferred = [mcp_tool("github:create_issue"), mcp_tool("github:list_issues")]
    search = make_tool_search(lambda: deferred)
    out = await search.execute(search.parameters(query="mcp__github__list_issues"), ToolContext.standalone(Path("."), session_id="s"))
    assert "github__list_issues" in out and "create_issue" not in out


async def test_claude_codes_rule_language_works_in_our_files_too(project):
    from codingcode_jupyter.__main__ import check_permission

    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"permissions": {
        "deny": ["Read(./secrets/**)", "Bash(curl:*)", "WebFetch(domain:evil.test)", "mcp__fs__write_file"]}}))
    for tool, tool_input, rule in [("read_file", {"path": "secrets/a"}, "Read(./secrets/**)"),
                                   ("execute_command", {"command": "curl x"}, "Bash(curl:*)"),
                                   ("fetch_url", {"url": "https://evil.test/"}, "WebFetch(domain:evil.test)"),
                                   ("fs:write_file", {"path": "x"}, "mcp__fs__write_file")]:
        result = await check_permission(project, tool, tool_input, "bypass", sandbox="on")
        assert result["decision"] == "deny" and result["rule"] == rule


@pytest.mark.parametrize(("rule", "command", "why"), [
    ("Bash(git push:*)", "FOO=1 git push", "only as respelled"),
    ("Bash(npm run test:*)", "npm run tests", "expects `npm run test *`, the command is `npm run tests`"),
    ("Bash(pytest:*)", "pytest -q; curl x", "covers `pytest -q` but not `curl x`"),
    ("Bash(ls:*)", "ls > /etc/x", "redirect writing outside the project"),
])
def test_the_card_names_the_nearest_rule_and_why_it_did_not_match(project, rule, command, why):
    from codingcode_jupyter.engine.approval.rules import nearest_allow

    subject = build_subject(TOOLS["execute_command"], {"command": command}, project)
    rules = [parse_rule(rule, "allow", "claude-project")]
    assert judge(subject, rules) is None  # the rule does not allow it...
    near = nearest_allow(subject, rules)
    assert near is not None and rule in near and why in near, near  # ...and the card says which rule, and why
    # Control: a rule for another program is not near.
    assert nearest_allow(subject, [parse_rule("Bash(make:*)", "allow")]) is None


@pytest.mark.slow
async def test_a_bad_value_written_while_the_session_is_open_is_told_at_the_next_turn(fake_api, project):
    """Nothing a person writes is silently ignored: a value left out of a file edited mid-session is a
    notice at the next turn (once), as it would be at a session's first."""
    from codingcode_jupyter.engine.events import Notice
    from codingcode_jupyter.engine.runtime import open_session
    from tests.fakes.anthropic_server import Reply, text
    from tests.fakes.front import ScriptedFront

    session = open_session(project)
    try:
        notices: list[list[str]] = []
        for step in range(3):
            if step == 1:
                (project / ".claude").mkdir(exist_ok=True)
                (project / ".claude" / "settings.json").write_text(json.dumps({"model": 42}))
            front = ScriptedFront()
            fake_api.add(Reply([text("ok")]))
            await session.run_turn("hi", front)
            notices.append([event.text for event in front.events if isinstance(event, Notice)])
    finally:
        await session.aclose()
    assert not any("model = 42" in n for n in notices[0]), notices[0]  # control: nothing wrong yet
    assert sum("model = 42 is not valid" in n for n in notices[1]) == 1, notices[1]
    assert not any("model = 42" in n for n in notices[2]), notices[2]  # told once
