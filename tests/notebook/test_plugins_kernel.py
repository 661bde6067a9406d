"""Plugins in a real kernel: real plugins from public repositories (tests/data/claude/plugins) enabled
through a local marketplace, their command, skill, agent, hook and MCP server all acting in one session.

Written at run time, never committed: the script explanatory-output-style's SessionStart hook runs (its
repository's copy is not in the stored index; this one prints the documented JSON answer), and a plugin
`kit` whose .mcp.json starts tests/fakes/mcp_server.py, so that a plugin's server acts without the network.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel

pytestmark = pytest.mark.kernel

DATA = Path(__file__).resolve().parents[1] / "data" / "claude" / "plugins" / "marketplace"
FAKE_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"
MARKET = "codingcode-test-market"
MARKER = "EXPLANATORY-MODE-MARKER"


def _marketplace(root: Path) -> Path:
    market = root / "market"
    shutil.copytree(DATA, market)
    script = market / "plugins" / "explanatory-output-style" / "hooks-handlers" / "session-start.sh"
    script.parent.mkdir(parents=True)
    answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": MARKER}}
    script.write_text(f"#!/bin/sh\ncat > /dev/null\necho '{json.dumps(answer)}'\n")
    script.chmod(0o755)
    (market / "plugins" / "kit" / ".claude-plugin").mkdir(parents=True)
    (market / "plugins" / "kit" / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "kit"}))
    (market / "plugins" / "kit" / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"fake": {"command": sys.executable, "args": [str(FAKE_SERVER), "stdio"]}}}))
    listing = market / ".claude-plugin" / "marketplace.json"
    data = json.loads(listing.read_text())
    data["plugins"].append({"name": "kit", "source": "./plugins/kit"})
    listing.write_text(json.dumps(data))
    return market


@pytest.fixture
def plugin_project(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("hello\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first"]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    market = _marketplace(tmp_path)
    enabled = ["commit-commands", "code-simplifier", "explanatory-output-style", "xbo-ai-flow", "kit"]
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({
        "extraKnownMarketplaces": {MARKET: {"source": {"source": "directory", "path": str(market)}}},
        "enabledPlugins": {f"{name}@{MARKET}": True for name in enabled}}))
    fake = FakeAnthropic().start()
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
           "CODINGCODE_TRUST": "1", "CODINGCODE_USER_DIR": str(tmp_path / "user"),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    kernel = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    kernel.fake, kernel.project = fake, project
    assert kernel.run("%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0")["status"] == "ok"
    yield kernel
    kernel.close()
    fake.stop()


def _results(request: dict) -> str:
    return json.dumps(request["messages"][-1]["content"])


def test_a_plugins_command_skill_agent_hook_and_mcp_server_act_in_one_session(plugin_project):
    k = plugin_project
    k.fake.add(
        Reply([tool_use("load_skill", {"name": "xbo-ai-flow:readme-update"}, id="s1")]),
        Reply([tool_use("plugin_kit_fake__echo", {"text": "from the plugin"}, id="m1")]),
        Reply([tool_use("dispatch_agent", {"agent": "code-simplifier:code-simplifier", "prompt": "CHILD: simplify"},
                        id="d1")]),
        Reply([text("simplified nothing")]),  # the sub-agent
        Reply([text("all done")]),
    )
    msg = k.execute("%%agent --mode bypass\n/commit-commands:commit")
    reply = k.reply(msg, timeout=120)
    assert reply["status"] == "ok", k.text_output(msg)
    first, after_skill, after_echo, child, after_agent = k.fake.requests[:5]
    sent = json.dumps(first["messages"])
    # The command: its body, its four `!` git lines run first (read-only: no card), their output inlined.
    assert "create a single git commit" in sent and "git branch --show-current" not in sent and "first" in sent
    # The hook: the SessionStart hook of explanatory-output-style, run through ${CLAUDE_PLUGIN_ROOT}.
    assert MARKER in sent
    # The skill: loaded by its plugin-qualified name.
    assert "README Update \\u2014 Landing Page Generator" in _results(after_skill) or \
        "README Update" in _results(after_skill)
    # The MCP server: the plugin's, named as Claude Code names it.
    assert "echo: from the plugin" in _results(after_echo)
    # The agent: its own prompt, dispatched by its plugin-qualified name.
    system = "".join(block["text"] for block in child.get("system", []))
    assert "expert code simplification specialist" in system
    assert "simplified nothing" in _results(after_agent)
    listing = k.execute("%agent plugins")
    assert k.reply(listing)["status"] == "ok"
    out = k.text_output(listing)
    assert f"commit-commands@{MARKET}: on" in out and "MCP servers plugin_kit_fake" in out
    assert "hooks — must be an object keyed by event name" in out  # xbo-ai-flow's list-shaped hooks.json, said


def _git_repository(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    _commit(dest, "first")
    return dest


def _commit(repo: Path, message: str) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def said(k: Kernel, code: str) -> str:
    """A cell's text with its wrapping undone (the listing wraps long lines at spaces)."""
    return " ".join(k.ok(code)["output"].split())


def test_agent_plugins_lists_fetches_updates_and_switches_plugins_and_agent_setup_runs_setup_hooks(plugin_project):
    k = plugin_project
    repo = _git_repository(DATA, k.project.parent / "git-market")
    (k.project / ".codingcode").mkdir()
    (k.project / ".codingcode" / "settings.json").write_text(json.dumps({
        "extraKnownMarketplaces": {"git-market": {"source": {"source": "git", "url": f"file://{repo}"}}},
        "enabledPlugins": {"basivo-journal@git-market": True}}))
    claude = k.project / ".claude" / "settings.json"
    # A Claude Code hook: its plain stdout is context, as Claude Code reads a Setup hook's.
    claude.write_text(json.dumps({**json.loads(claude.read_text()), "hooks": {
        "Setup": [{"matcher": "init", "hooks": [{"type": "command", "command": "echo SETUP-MARKER"}]}]}}))

    # The listing: a git marketplace is cloned first, then every plugin with what it adds, every marketplace
    # with the plugins it lists that nothing enables.
    listing = said(k, "%agent plugins")
    assert "basivo-journal@git-market: on (the project's" in listing, listing
    assert "adds commands /basivo-journal:journal-report" in listing
    assert f"marketplace git-market: git file://{repo}" in listing
    assert "also lists: basivo-journal, claude-history, context7, contextpilot, discord" in listing

    # update: the marketplace changed upstream; its new command arrives only when fetched again.
    command = repo / "plugins" / "basivo-journal" / "commands" / "weekly.md"
    command.write_text("---\ndescription: The week's journal\n---\nSummarise the journal of this week.\n")
    _commit(repo, "weekly")
    assert "/basivo-journal:weekly" not in said(k, "%agent commands")
    assert said(k, "%agent plugins update").strip() == "Fetched the git marketplaces and plugins again."
    assert "/basivo-journal:weekly" in said(k, "%agent commands")

    # A short name two commands end with is no alias: the person is told which ones there are.
    (k.project / ".claude" / "commands" / "review").mkdir(parents=True)
    (k.project / ".claude" / "commands" / "review" / "commit.md").write_text("Review the last commit.\n")
    both = k.execute("%%agent\n/commit")
    assert k.reply(both)["status"] == "error"
    assert "/commit could be any of /commit-commands:commit, /review:commit: type the one you mean." in \
        " ".join(k.text_output(both).split())

    # disable: in the person's settings it is outweighed by the project's file, and they are told so;
    # in the project's local file it turns the plugin off.
    key = f"commit-commands@{MARKET}"
    stays = said(k, f"%agent plugins disable {key}")
    assert f"{key} stays on: enabledPlugins in {k.project / '.claude' / 'settings.json'} decides" in stays, stays
    off = said(k, f"%agent plugins disable {key} --scope local")
    assert f"{key} is off (enabledPlugins in {k.project / '.codingcode' / 'settings.local.json'})" in off, off
    assert "/commit-commands:commit" not in said(k, "%agent commands")
    assert f"{key}: off" in said(k, "%agent plugins")

    # enable: in the person's own settings by default; what it adds joins at once.
    on = said(k, f"%agent plugins enable context7@{MARKET} --scope project")
    assert f"context7@{MARKET} is on (enabledPlugins in {k.project / '.codingcode' / 'settings.json'})" in on, on
    assert "/context7:docs" in said(k, "%agent commands")
    user = said(k, f"%agent plugins enable discord@{MARKET}")
    assert f"is on (enabledPlugins in {k.project.parent / 'user' / 'settings.json'})" in user, user

    # A malformed request is refused with the usage, nothing written.
    for wrong in ("enable commit-commands", f"enable {key} --scope everywhere", "frobnicate"):
        msg = k.execute(f"%agent plugins {wrong}")
        assert k.reply(msg)["status"] == "error" and "usage: %agent plugins" in k.text_output(msg), wrong
    assert "enable|disable NAME@MARKETPLACE [--scope user|project|local]" in said(k, "%agent help plugins")

    # %agent setup runs the Setup hooks; what they print goes with the next request.
    setup = said(k, "%agent setup")
    assert "ran 1 Setup hook(s)" in setup and "goes with your next request" in setup, setup
    assert "ran" not in said(k, "%agent setup maintenance")  # its matcher is init
    k.fake.add(Reply([text("noted")]))
    k.ok("%%agent\nwhat did setup say?", timeout=120)
    assert "SETUP-MARKER" in json.dumps(k.fake.requests[-1]["messages"])
