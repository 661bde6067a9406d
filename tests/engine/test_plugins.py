"""Plugins as Claude Code has them, read from real plugins (tests/data/claude/plugins, sources in its README):
marketplaces from settings (a directory, a git repository cloned from a file:// URL, a GitHub repository),
enabledPlugins at every scope, what each plugin brings (commands, skills, agents, hooks, MCP servers) with
${CLAUDE_PLUGIN_ROOT} filled in, the trust a project's plugin needs, and what doctor says of each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codingcode_jupyter.engine.agents.profiles import load_profiles
from codingcode_jupyter.engine.approval.amend import persist_plugin
from codingcode_jupyter.engine.commands import expand_command, load_commands
from codingcode_jupyter.engine.doctor import doctor_report
from codingcode_jupyter.engine.plugins.catalog import fetch_plugins
from codingcode_jupyter.engine.plugins.sources import marketplace_source
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.skills import load_skills

DATA = Path(__file__).resolve().parents[1] / "data" / "claude"
MARKET = DATA / "plugins" / "marketplace"
NAME = "codingcode-test-market"
ALL = ["commit-commands", "code-simplifier", "explanatory-output-style", "context7", "xbo-ai-flow", "basivo-journal",
       "claude-history", "contextpilot", "discord", "hookify", "plugin-dev"]
FAKE_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def enable(project: Path, names: list[str], *, source: dict[str, Any] | None = None,
           file: str = ".claude/settings.json") -> Path:
    """A settings file declaring the test marketplace and enabling ``names`` of it."""
    return write(project / file, {
        "extraKnownMarketplaces": {NAME: {"source": source or {"source": "directory", "path": str(MARKET)}}},
        "enabledPlugins": {f"{name}@{NAME}": True for name in names}})


def effective(project: Path):
    return ProjectSettings(project).current()


def test_every_real_plugin_is_read_with_what_it_brings_or_a_line_saying_why_not(project: Path):
    enable(project, ALL)
    current = effective(project)
    plugins = {plugin.name: plugin for plugin in current.plugins.plugins}
    assert sorted(plugins) == sorted(ALL) and all(plugin.usable for plugin in plugins.values())
    assert [key for key in ALL if f"{key}@{NAME}" not in {p.key for p in current.active_plugins}] == []
    content = {name: plugin.content for name, plugin in plugins.items()}
    assert [name for name, _ in content["commit-commands"].commands] == ["commit"]
    # No plugin.json (as in its repository): the default folders are read, the name is the entry's.
    assert content["code-simplifier"].name == "code-simplifier" and len(content["code-simplifier"].agents) == 1
    # A .mcp.json without `mcpServers` (the form Claude Code also reads in a plugin).
    assert [(s.name, s.config["command"]) for s in content["context7"].servers] == [("context7", "npx")]
    root = str(plugins["discord"].root)
    hooks = {(h.event, h.command) for h in current.hooks if h.source == f"plugin discord@{NAME}"}
    assert hooks == {("SessionStart", f'node "{root}/session-map.mjs"')}  # ${CLAUDE_PLUGIN_ROOT} filled in
    # What cannot apply is left out with one line naming the file, the key and why; the rest applies.
    xbo = "\n".join(plugins["xbo-ai-flow"].notes)
    assert "xbo-ai-flow/hooks/hooks.json: hooks — must be an object keyed by event name" in xbo and "not a list" in xbo
    lines = [*current.warnings, *(entry.describe() for entry in current.ignored_settings)]
    assert any("claude-history/hooks/hooks.json: hooks.UserPromptSubmit.0 is a hook where a group is wanted" in line
               for line in lines)
    assert any("contextpilot/hooks/hooks.json: hooks.SessionStart is one object" in line for line in lines)
    assert any("explanatory-output-style/hooks/hooks.json" in line and "async" in line for line in lines)


def test_a_plugin_a_project_enables_is_one_trust_item_and_applies_only_once_trusted(tmp_path: Path, project: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CODINGCODE_TRUST")
    market = tmp_path / "market"
    shutil.copytree(MARKET, market)
    enable(project, ["commit-commands", "discord", "context7"], source={"source": "directory", "path": str(market)})
    settings = ProjectSettings(project)
    pending = [item for item in settings.current().ignored if item.kind == "plugin"]
    assert len(pending) == 3 and settings.current().active_plugins == ()
    card = {item.detail["plugin"]: item.summary for item in pending}
    # The card says exactly what would run: the hook's command line, the server's, the commands added.
    assert f'runs `node "{market}/plugins/discord/session-map.mjs"`' in card[f"discord@{NAME}"]
    assert "runs `npx --force -y @upstash/context7-mcp`" in card[f"context7@{NAME}"]
    assert "/commit-commands:commit" in card[f"commit-commands@{NAME}"]
    untrusted = settings.current()
    assert untrusted.hooks == () and "commit-commands:commit" not in load_commands(project, plugins=untrusted.active_plugins).commands
    settings.trust()
    assert len(settings.current().active_plugins) == 3 and settings.current().ignored == ()
    # A changed file of a plugin is a changed plugin: asked about again, alone.
    (market / "plugins" / "discord" / "session-map.mjs").write_text("// added later\n")
    again = ProjectSettings(project).current()
    assert [item.detail["plugin"] for item in again.ignored] == [f"discord@{NAME}"]


def test_the_persons_own_plugins_need_no_trust_and_a_project_cannot_redirect_their_marketplace(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CODINGCODE_TRUST")
    enable(Path(os.environ["CLAUDE_CONFIG_DIR"]), ["commit-commands"], file="settings.json")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(MARKET, elsewhere)
    enable(project, [], source={"source": "directory", "path": str(elsewhere)})
    current = effective(project)
    [plugin] = current.plugins.plugins
    assert plugin.owned and plugin.usable and current.active_plugins == (plugin,) and current.ignored == ()
    assert plugin.root == MARKET / "plugins" / "commit-commands"  # the person's marketplace, not the project's
    assert any("a project cannot redirect it" in warning for warning in current.warnings)


def _git_repository(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return dest


@pytest.mark.parametrize("form", ["file URL", "path", "path relative to the project"])
def test_a_git_marketplace_is_cloned_from_the_url_or_path_given_when_asked_and_read_from_the_clone(
        project: Path, tmp_path: Path, form: str):
    repo = _git_repository(MARKET, tmp_path / "remote")
    url = {"file URL": f"file://{repo}", "path": str(repo), "path relative to the project": os.path.relpath(repo, project)}[form]
    enable(project, ["basivo-journal"], source={"source": "git", "url": url})
    before = effective(project).plugins.plugins[0]
    assert not before.usable and "not fetched yet" in (before.problem or "")
    assert fetch_plugins(project, effective(project).layers) == []
    after = ProjectSettings(project).current().plugins.plugins[0]
    cache = Path(os.environ["CODINGCODE_USER_DIR"]) / "plugins" / "marketplaces"
    assert after.usable and after.root is not None and cache in after.root.parents
    assert [name for name, _ in after.content.commands] == ["journal-report"]


def test_a_real_settings_files_github_marketplace_is_cloned_from_github(project: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    """microsoft/fluentui's settings, unchanged: its marketplace is cloned from github.com/nrwl/nx-ai-agents-config
    (here redirected by git's own insteadOf to a local repository of the test marketplace, which lists no `nx`)."""
    repo = _git_repository(MARKET, tmp_path / "mirror")
    config = write(tmp_path / "gitconfig", f'[url "file://{repo}"]\n\tinsteadOf = https://github.com/nrwl/nx-ai-agents-config.git\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    shutil.copy(DATA / "real" / "microsoft__fluentui" / ".claude" / "settings.json", write(project / ".claude" / "x", "").parent / "settings.json")
    [plugin] = effective(project).plugins.plugins
    assert plugin.key == "nx@nx-claude-plugins" and "not fetched yet" in (plugin.problem or "")
    assert fetch_plugins(project, effective(project).layers) == []
    current = ProjectSettings(project).current()
    assert "lists no plugin 'nx'" in (current.plugins.plugins[0].problem or "")
    assert any("enabledPlugins.nx@nx-claude-plugins" in warning and "lists no plugin" in warning
               for warning in current.warnings)


@pytest.mark.parametrize("url", ["ext::sh -c touch% /tmp/pwned", "--upload-pack=touch /tmp/pwned", "fd::3"])
def test_a_git_url_that_would_run_a_command_is_refused(url: str, tmp_path: Path):
    source = marketplace_source({"source": "git", "url": url}, tmp_path)
    assert source.problem is not None and not source.fetched


def test_enabled_plugins_at_user_project_and_local_scope_the_most_specific_wins(project: Path):
    enable(project, ["commit-commands", "context7"])
    persist_plugin(project, f"context7@{NAME}", False, "local")
    persist_plugin(project, f"discord@{NAME}", True, "user")
    plugins = {plugin.name: plugin for plugin in effective(project).plugins.plugins}
    assert plugins["commit-commands"].enabled and not plugins["context7"].enabled and plugins["discord"].enabled
    assert plugins["context7"].enabled_in == project / ".codingcode" / "settings.local.json"
    user = json.loads((Path(os.environ["CODINGCODE_USER_DIR"]) / "settings.json").read_text())
    assert user["enabledPlugins"] == {f"discord@{NAME}": True}


def test_a_plugins_commands_skills_and_agents_join_under_their_plugins_name(project: Path):
    enable(project, ["commit-commands", "context7", "xbo-ai-flow", "basivo-journal", "code-simplifier"])
    active = effective(project).active_plugins
    catalog = load_commands(project, plugins=active)
    assert {"commit-commands:commit", "context7:docs", "xbo-ai-flow:status", "basivo-journal:journal-report",
            "xbo-ai-flow:readme-update"} <= set(catalog.commands)
    assert catalog.get("commit") is catalog.get("commit-commands:commit")  # the short name, unambiguous
    write(project / ".claude" / "commands" / "review" / "commit.md", "Review the last commit.\n")
    shared = load_commands(project, plugins=active)
    assert shared.get("commit") is None and shared.ambiguous["commit"] == ("commit-commands:commit", "review:commit")
    docs = expand_command(catalog.commands["context7:docs"], "react hooks", project).render([])
    assert "`react hooks` = `<library> [query]`" in docs and "$ARGUMENTS" not in docs
    report = catalog.commands["basivo-journal:journal-report"]
    assert report.argument_hint == "[output.html]"  # YAML's list, shown as written
    body = expand_command(report, "out.html", project).render([])
    assert f'sh "{MARKET}/plugins/basivo-journal/scripts/run" journal.py report out.html' in body
    commit = expand_command(catalog.commands["commit-commands:commit"], "", project)
    assert commit.shell == ["git status", "git diff HEAD", "git branch --show-current", "git log --oneline -10"]
    assert load_skills(project, plugins=active).skills["xbo-ai-flow:readme-update"].description.startswith("This skill")
    profiles = load_profiles(project, plugins=active)
    verifier = profiles.get("verifier")  # xbo-ai-flow:verifier, by its short name
    assert verifier.name == "xbo-ai-flow:verifier" and verifier.description.endswith("</example>")
    assert "user: \"Run all quality checks on the plugin\"" in verifier.description
    assert profiles.get("code-simplifier:code-simplifier").model is not None


def test_claude_plugin_root_is_filled_in_in_a_plugins_skill_and_agent(project: Path):
    from codingcode_jupyter.engine.skills import skill_text

    enable(project, ["hookify", "plugin-dev"])
    active = effective(project).active_plugins
    skills = load_skills(project, plugins=active).skills
    [name] = [name for name in skills if name.startswith("hookify:")]
    body = skill_text(skills[name])
    assert f"See `{MARKET}/plugins/hookify/examples/` for complete examples" in body
    assert "${CLAUDE_PLUGIN_ROOT}" not in body
    # The same skill typed as a slash command.
    typed = expand_command(load_commands(project, plugins=active).commands[name], "", project).render([])
    assert f"{MARKET}/plugins/hookify/examples/" in typed and "${CLAUDE_PLUGIN_ROOT}" not in typed
    validator = load_profiles(project, plugins=active).get("plugin-validator")
    assert validator.name == "plugin-dev:plugin-validator"
    assert f"Commands reference existing scripts with {MARKET}/plugins/plugin-dev" in validator.system_prompt
    assert "${CLAUDE_PLUGIN_ROOT}" not in validator.system_prompt
    assert validator.description.startswith('Use this agent when the user asks to "validate my plugin"')


async def test_a_skill_rule_names_a_plugins_skill(project: Path):
    from codingcode_jupyter.engine.approval.rule_syntax import parse_rule
    from codingcode_jupyter.engine.approval.rules import judge
    from codingcode_jupyter.engine.approval.subject import build_subject
    from codingcode_jupyter.engine.tools.skill import load_skill_tool

    enable(project, ["xbo-ai-flow"])
    active = effective(project).active_plugins
    tool = load_skill_tool(project, plugins=lambda: active)
    subject = build_subject(tool, {"name": "xbo-ai-flow:readme-update"}, project)
    for rule in ("Skill(xbo-ai-flow:readme-update)", "Skill(xbo-ai-flow:*)"):
        verdict = judge(subject, [parse_rule(rule, "deny")])
        assert verdict is not None and verdict.action == "deny", rule
    assert judge(subject, [parse_rule("Skill(readme-update)", "deny")]) is None  # control: another name


@pytest.mark.slow
async def test_a_plugins_mcp_server_starts_with_its_variables_and_is_named_as_in_claude_code(project: Path,
                                                                                            tmp_path: Path):
    from codingcode_jupyter.engine.runtime import open_session

    market = tmp_path / "market"
    write(market / ".claude-plugin" / "marketplace.json",
          {"name": NAME, "owner": {"name": "t"}, "plugins": [{"name": "kit", "source": "./kit"}]})
    write(market / "kit" / ".mcp.json", {"mcpServers": {"fake": {
        "command": sys.executable, "args": [str(FAKE_SERVER), "stdio"], "env": {"KIT": "${CLAUDE_PLUGIN_ROOT}"}}}})
    enable(project, ["kit"], source={"source": "directory", "path": str(market)})
    session = open_session(project, model="demo")
    try:
        await session.start()
        await session.mcp.wait_ready(30)
        status = {server.name: server for server in session.mcp.status()}
        assert status["plugin_kit_fake"].state == "running", status
        assert any(tool.display_name == "plugin_kit_fake:echo" for tool in session.mcp.tools())
        config = session.mcp._configs["plugin_kit_fake"]
        assert config.env["KIT"] == str(market / "kit") and config.env["CLAUDE_PLUGIN_ROOT"] == str(market / "kit")
    finally:
        await session.aclose()


def test_doctor_names_every_plugin_with_what_it_adds_or_why_not(project: Path):
    enable(project, ["commit-commands", "context7", "missing"])
    write(project / ".claude" / "settings.local.json", {"enabledPlugins": {"x@nowhere": True}})
    current = effective(project)
    text = doctor_report(project, current).render()
    section = text.split("Plugins (%agent plugins)")[1].split("Command sandbox")[0]
    assert f"commit-commands@{NAME}: on" in section and "adds commands /commit-commands:commit" in section
    assert "MCP servers plugin_context7_context7" in section
    assert f"missing@{NAME}: on, but brings nothing: the marketplace '{NAME}'" in section and "lists no plugin" in section
    assert "x@nowhere: on, but brings nothing: the marketplace 'nowhere' is not known" in section
    assert f"marketplace {NAME}: directory {MARKET}" in section and "also lists:" in section


# -- the organisation's managed settings and plugins ------------------------------------------------------


def managed(settings: dict[str, Any]) -> Path:
    return write(Path(os.environ["CODINGCODE_CLAUDE_MANAGED_DIR"]) / "managed-settings.json", settings)


def test_a_plugin_the_managed_settings_enable_is_the_organisations_and_the_person_cannot_turn_it_off(
        project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CODINGCODE_TRUST")
    managed({"extraKnownMarketplaces": {NAME: {"source": {"source": "directory", "path": str(MARKET)}}},
             "enabledPlugins": {f"discord@{NAME}": True}})
    persist_plugin(project, f"discord@{NAME}", False, "user")
    current = effective(project)
    [plugin] = current.plugins.plugins
    # No trust asked (the organisation installed it), and the person's `false` loses to the policy.
    assert plugin.managed and plugin.owned and plugin.usable and current.ignored == ()
    assert current.active_plugins == (plugin,)
    assert any(entry.key == f"enabledPlugins.discord@{NAME}" for entry in current.policy.overrides)
    section = doctor_report(project, current).render().split("Plugins (%agent plugins)")[1]
    assert f"discord@{NAME}: on (your organisation's" in section


def test_allow_managed_hooks_only_keeps_the_hooks_of_the_plugins_it_enables_and_says_so_of_the_others(
        project: Path):
    managed({"allowManagedHooksOnly": True,
             "extraKnownMarketplaces": {NAME: {"source": {"source": "directory", "path": str(MARKET)}}},
             "enabledPlugins": {f"discord@{NAME}": True}})
    enable(project, ["claude-history"])
    current = effective(project)
    sources = {hook.source for hook in current.hooks}
    assert sources == {f"plugin discord@{NAME}"}
    left_out = [entry.describe() for entry in current.ignored_settings if "claude-history" in entry.key]
    assert len(left_out) == 1 and "allowManagedHooksOnly" in left_out[0] and "hooks/hooks.json" in left_out[0]
    # The plugin's other parts still apply: only its hooks are the policy's business.
    assert f"claude-history@{NAME}" in {plugin.key for plugin in current.active_plugins}


def test_a_blocked_marketplace_is_neither_read_nor_fetched(project: Path, tmp_path: Path):
    repo = _git_repository(MARKET, tmp_path / "remote")
    managed({"blockedMarketplaces": [{"source": "git", "url": f"file://{repo}.git"},
                                     {"source": "pathPattern", "pathPattern": "^/nowhere"}]})
    enable(project, ["basivo-journal"], source={"source": "git", "url": f"file://{repo}"})
    assert fetch_plugins(project, effective(project).layers) == []
    assert not (Path(os.environ["CODINGCODE_USER_DIR"]) / "plugins" / "marketplaces").exists()
    current = effective(project)
    [plugin] = current.plugins.plugins
    assert not plugin.usable and "blockedMarketplaces" in (plugin.problem or "")
    assert current.plugins.marketplaces == ()
    lines = [line for line in current.warnings if f"marketplace {NAME}" in line]
    assert len(lines) == 1 and "nothing of it is read or fetched" in lines[0]
    section = doctor_report(project, current).render().split("Plugins (%agent plugins)")[1]
    assert "blockedMarketplaces" in section and "nothing of it is read or fetched" in section
    # Control: the same marketplace, not blocked, is fetched.
    managed({"blockedMarketplaces": [{"source": "pathPattern", "pathPattern": "^/nowhere"}]})
    assert fetch_plugins(project, effective(project).layers) == []
    assert ProjectSettings(project).current().plugins.plugins[0].usable


def test_strict_known_marketplaces_allows_only_what_it_lists(project: Path):
    enable(project, ["commit-commands"])
    managed({"strictKnownMarketplaces": []})  # lockdown: no marketplace but the organisation's own
    assert "strictKnownMarketplaces" in (effective(project).plugins.plugins[0].problem or "")
    managed({"strictKnownMarketplaces": [{"source": "hostPattern", "hostPattern": r"^github\.com$"}]})
    assert not effective(project).plugins.plugins[0].usable  # a directory has no host
    managed({"strictKnownMarketplaces": [{"source": "pathPattern", "pathPattern": f"^{MARKET}"},
                                         {"source": "hostPattern", "hostPattern": "("}]})
    current = effective(project)
    assert current.plugins.plugins[0].usable
    assert any("strictKnownMarketplaces[1] — `hostPattern` is not a regular expression" in line
               for line in current.warnings)
    managed({"strictKnownMarketplaces": [{"source": "directory", "path": str(MARKET)}]})
    assert effective(project).plugins.plugins[0].usable
    # A marketplace the managed files declare is theirs: their allowlist does not hold it back.
    managed({"strictKnownMarketplaces": [],
             "extraKnownMarketplaces": {NAME: {"source": {"source": "directory", "path": str(MARKET)}}}})
    assert effective(project).plugins.plugins[0].usable


def test_a_marketplace_restriction_in_the_persons_or_a_projects_file_is_named_as_ignored(project: Path):
    write(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json", {"strictKnownMarketplaces": []})
    write(project / ".claude" / "settings.json", {"blockedMarketplaces": [{"source": "github", "repo": "a/b"}]})
    current = effective(project)
    assert current.merged.strictKnownMarketplaces is None and current.merged.blockedMarketplaces is None
    lines = {entry.key: entry.reason for entry in current.ignored_settings}
    assert "read from managed settings only" in lines["strictKnownMarketplaces"]
    assert "read from managed settings only" in lines["blockedMarketplaces"]


@pytest.mark.slow
async def test_a_git_marketplace_with_auto_update_is_fetched_again_when_a_session_starts(project: Path,
                                                                                        tmp_path: Path):
    from codingcode_jupyter.engine.runtime import open_session

    repo = _git_repository(MARKET, tmp_path / "remote")
    write(project / ".claude" / "settings.json", {
        "extraKnownMarketplaces": {NAME: {"source": {"source": "git", "url": f"file://{repo}"}, "autoUpdate": True}},
        "enabledPlugins": {f"basivo-journal@{NAME}": True}})
    assert fetch_plugins(project, effective(project).layers) == []
    write(repo / "plugins" / "basivo-journal" / "commands" / "weekly.md", "Summarise this week's journal.\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "weekly"], cwd=repo,
                   check=True, capture_output=True)
    assert "basivo-journal:weekly" not in load_commands(project, plugins=effective(project).active_plugins).commands
    session = open_session(project, model="demo")
    try:
        await session.start()
        assert session.plugin_update is not None and await session.plugin_update == []
        active = session.settings.current().active_plugins
        assert "basivo-journal:weekly" in load_commands(project, plugins=active).commands
    finally:
        await session.aclose()
    # Control: without autoUpdate the copy on disk stays as it was fetched.
    write(project / ".claude" / "settings.json", {
        "extraKnownMarketplaces": {NAME: {"source": {"source": "git", "url": f"file://{repo}"}, "autoUpdate": "daily"}},
        "enabledPlugins": {f"basivo-journal@{NAME}": True}})
    current = effective(project)
    assert not current.plugins.marketplaces[0].auto_update
    assert any(f"extraKnownMarketplaces.{NAME}.autoUpdate — write true or false" in line for line in current.warnings)


def test_what_the_catalog_cannot_use_as_written_is_said_in_one_line_each(project: Path, tmp_path: Path):
    market = tmp_path / "market"
    shutil.copytree(MARKET, market)
    listing = market / ".claude-plugin" / "marketplace.json"
    listing.write_text(listing.read_text().replace('"name": "codingcode-test-market"', '"name": "renamed"'))
    manifest = market / "plugins" / "commit-commands" / ".claude-plugin" / "plugin.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "commands": 5}))
    write(manifest.parent.parent / ".lsp.json", {"python": {"command": "pyright-langserver"}})
    write(manifest.parent.parent / "output-styles" / "terse.md", "---\nname: terse\n---\nBe terse.\n")
    write(project / ".claude" / "settings.json", {
        "extraKnownMarketplaces": {NAME: {"source": {"source": "directory", "path": str(market)},
                                          "installLocation": "/elsewhere"}},
        "enabledPlugins": {f"commit-commands@{NAME}": ["1.0.0"]}})
    current = effective(project)
    [plugin] = current.plugins.plugins
    assert plugin.usable and [name for name, _ in plugin.content.commands] == ["commit"]  # the rest still applies
    said = "\n".join(current.warnings)
    assert f"enabledPlugins.commit-commands@{NAME} — a list of versions is read as on" in said
    assert f"extraKnownMarketplaces.{NAME}.installLocation — where Claude Code keeps its copy" in said
    assert f"{listing}: name — 'renamed', while the settings call this marketplace '{NAME}'" in said
    assert f"{manifest}: commands: 5 is not a path; left out" in said
    assert f"{manifest.parent.parent / '.lsp.json'}: language servers are not started here" in said
    assert f"{manifest.parent.parent / 'output-styles'}: answers are rendered as Markdown" in said


def test_a_marketplace_added_in_claude_code_is_judged_by_where_it_was_added_from(project: Path):
    record = {NAME: {"source": {"source": "github", "repo": "acme/tools"}, "installLocation": str(MARKET)}}
    write(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "plugins" / "known_marketplaces.json", record)
    write(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json", {"enabledPlugins": {f"commit-commands@{NAME}": True}})
    assert effective(project).plugins.plugins[0].usable  # read from Claude Code's copy
    managed({"blockedMarketplaces": [{"source": "github", "repo": "acme/tools"}]})
    assert "blockedMarketplaces" in (effective(project).plugins.plugins[0].problem or "")
    managed({"strictKnownMarketplaces": [{"source": "hostPattern", "hostPattern": r"^github\.com$"}]})
    assert effective(project).plugins.plugins[0].usable
