"""The organisation's MCP policy (engine/mcp/policy.py): allowedMcpServers, deniedMcpServers and
managed-mcp.json decide which servers start, wherever they come from (.mcp.json, a plugin,
%agent mcp add, an editor's session); a refused server never starts and the person is told in
one line. Every refusal below has a control that starts, on the same real servers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from codingcode_jupyter.acp.kernel_side import _add_servers
from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.doctor import doctor_report
from codingcode_jupyter.engine.mcp.config import McpConfigError, parse_server
from codingcode_jupyter.engine.mcp.policy import mcp_policy
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.runtime import open_session
from codingcode_jupyter.engine.settings import Settings
from tests.engine.approval_helpers import call, context
from tests.engine.mcp_real import FAKE, STDIO_FAKE, Listening, free_port
from tests.engine.test_plugins import FAKE_SERVER, NAME, enable, write

ORG = "refused by your organisation's policy"


def managed(settings: dict[str, Any], *, claude: bool = True) -> Path:
    directory = Path(os.environ["CODINGCODE_CLAUDE_MANAGED_DIR" if claude else "CODINGCODE_MANAGED_DIR"])
    return write(directory / "managed-settings.json", settings)


def managed_mcp(servers: dict[str, Any], *, claude: bool = True) -> Path:
    directory = Path(os.environ["CODINGCODE_CLAUDE_MANAGED_DIR" if claude else "CODINGCODE_MANAGED_DIR"])
    return write(directory / "managed-mcp.json", {"mcpServers": servers})


def user(settings: dict[str, Any]) -> Path:
    return write(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json", settings)


def servers(project: Path, entries: dict[str, Any]) -> None:
    write(project / ".mcp.json", {"mcpServers": entries})


async def started(project: Path):
    """A session of ``project`` with its servers started, and each server's status by name."""
    session = open_session(project, model="demo")
    await session.start()
    await session.mcp.wait_ready(30)
    return session, {status.name: status for status in session.mcp.status()}


# -- how an entry matches, as Claude Code's documentation lays it out -------------------------------------------

def judge(policy: dict[str, Any], name: str, entry: dict[str, Any]) -> str | None:
    layers = [(Path("/etc/claude-code/managed-settings.json"), "managed", Settings.model_validate(policy))]
    return mcp_policy(layers, environ={"HOME": "/home/me"}).refusal(name, parse_server(name, entry))


URL_ONLY = {"allowedMcpServers": [{"serverUrl": "https://mcp.example.com/*"},
                                  {"serverUrl": "https://*.internal.example.com/*"}]}
COMMAND_ONLY = {"allowedMcpServers": [{"serverCommand": ["npx", "-y", "approved-package"]}]}
MIXED = {"allowedMcpServers": [{"serverName": "github"}, {"serverCommand": ["npx", "-y", "approved-package"]}]}
NAMES = {"allowedMcpServers": [{"serverName": "github"}, {"serverName": "internal-tool"}]}
DENY_WINS = {"allowedMcpServers": [{"serverUrl": "https://*.example.com/*"}],
             "deniedMcpServers": [{"serverUrl": "https://staging.example.com/*"}]}
APPROVED = {"command": "npx", "args": ["-y", "approved-package"]}
OTHER = {"command": "node", "args": ["server.js"]}


def http(url: str) -> dict[str, str]:
    return {"type": "http", "url": url}


@pytest.mark.parametrize("policy,name,entry,allowed", [
    (URL_ONLY, "a", http("https://mcp.example.com/api"), True),
    (URL_ONLY, "a", http("https://api.internal.example.com/mcp"), True),
    (URL_ONLY, "a", http("https://external.example.com/mcp"), False),
    (URL_ONLY, "a", APPROVED, False),  # no name or command entries to match
    (COMMAND_ONLY, "a", APPROVED, True),
    (COMMAND_ONLY, "a", OTHER, False),
    (COMMAND_ONLY, "a", {"command": "npx", "args": ["approved-package"]}, False),  # every argument, in order
    (COMMAND_ONLY, "a", {"command": "npx", "args": ["-y", "approved-package", "--flag"]}, False),
    (COMMAND_ONLY, "my-api", http("https://mcp.example.com/"), False),
    (MIXED, "local-tool", APPROVED, True),
    (MIXED, "github", OTHER, False),  # a name never lets through a command the list pins down
    (MIXED, "github", http("https://anything.example/"), True),
    (MIXED, "other-api", http("https://anything.example/"), False),
    (NAMES, "github", OTHER, True),
    (NAMES, "internal-tool", http("https://x.example/"), True),
    (NAMES, "other", OTHER, False),
    (DENY_WINS, "a", http("https://mcp.example.com/api"), True),
    (DENY_WINS, "a", http("https://staging.example.com/api"), False),
    (DENY_WINS, "a", http("https://other.com/mcp"), False),
    ({"allowedMcpServers": [{"serverUrl": "https://Mcp.Example.com"}]}, "a", http("https://mcp.example.com./deep/path"),
     True),  # the host without case or a trailing dot; no path in the pattern: every path
    ({"allowedMcpServers": [{"serverUrl": "https://mcp.example.com/API/*"}]}, "a", http("https://mcp.example.com/api/x"),
     False),  # paths keep their case
    ({"allowedMcpServers": [{"serverUrl": "http://localhost:*/*"}]}, "a", http("http://localhost:8123/mcp"), True),
    ({"allowedMcpServers": [{"serverUrl": "*://mcp.example.com/*"}]}, "a", http("http://mcp.example.com/x"), True),
    ({"allowedMcpServers": [{"serverCommand": ["${HOME}/bin/server"]}]}, "a", {"command": "/home/me/bin/server"}, True),
    ({"allowedMcpServers": []}, "a", APPROVED, False),  # [] allows none
    ({}, "a", OTHER, True),  # unset allows all
    ({"deniedMcpServers": []}, "a", OTHER, True),
    ({"deniedMcpServers": [{"serverName": "a"}], "allowedMcpServers": [{"serverName": "a"}]}, "a", OTHER, False),
])
def test_an_entry_matches_as_claude_code_documents_it(policy, name, entry, allowed):
    why = judge(policy, name, entry)
    assert (why is None) == allowed, why
    if why:
        assert why.startswith(ORG)


def test_an_entry_that_cannot_be_read_is_left_out_with_a_line_and_never_widens_an_allowlist():
    layers = [(Path("m.json"), "managed", Settings.model_validate(
        {"allowedMcpServers": [{"serverName": "a", "serverUrl": "https://x/*"}, {"serverCommand": "npx"}]}))]
    policy = mcp_policy(layers)
    assert len(policy.notes) == 2 and "allowedMcpServers.0" in policy.notes[0]
    assert policy.refusal("a", parse_server("a", OTHER)) is not None  # what is left is [] : none allowed


# -- on real servers -----------------------------------------------------------------------------------

@pytest.mark.slow
async def test_a_denied_server_never_starts_and_the_person_is_told_at_once(project: Path):
    managed({"deniedMcpServers": [{"serverName": "blocked"}]})
    servers(project, {"blocked": STDIO_FAKE, "ok": STDIO_FAKE})
    session, status = await started(project)
    try:
        assert status["ok"].state == "running"  # the control: the same server under another name
        assert status["blocked"].state == "refused" and status["blocked"].error.startswith(ORG)
        assert "deniedMcpServers" in status["blocked"].error
        assert session.mcp.connection("blocked") is None  # nothing of it was ever made, so nothing ran
        names = {tool.display_name for tool in session.mcp.tools()}
        assert "ok:echo" in names and not any(name.startswith("blocked:") for name in names)
        told = [line for line in session.pending_notices if "blocked" in line]
        assert told == [f"MCP server blocked is not started: {status['blocked'].error}"]
        assert "blocked not started: " + ORG in session.mcp.describe()
        report = doctor_report(project, ProjectSettings(project).current()).render()
        assert "blocked (stdio)" in report and f"not started: {ORG}" in report
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_an_allowlist_of_commands_lets_only_those_start_whatever_the_name(project: Path):
    managed({"allowedMcpServers": [{"serverName": "github"}, {"serverCommand": [sys.executable, FAKE, "stdio"]}]})
    # The same real server, started another way: it would run, but its command is not the one listed.
    servers(project, {"github": {"command": sys.executable, "args": ["-u", FAKE, "stdio"]}, "listed": STDIO_FAKE})
    session, status = await started(project)
    try:
        assert status["listed"].state == "running"
        assert status["github"].state == "refused"
        assert "its command is not in allowedMcpServers" in status["github"].error
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_an_empty_allowlist_starts_no_server_and_unset_starts_them_all(project: Path):
    servers(project, {"one": STDIO_FAKE})
    session, status = await started(project)
    try:
        assert status["one"].state == "running"  # the control: no policy
    finally:
        await session.aclose()
    managed({"allowedMcpServers": []})
    session, status = await started(project)
    try:
        assert status["one"].state == "refused"
        assert status["one"].error == (f"{ORG}: it is not in allowedMcpServers "
                                       f"({Path(os.environ['CODINGCODE_CLAUDE_MANAGED_DIR']) / 'managed-settings.json'})")
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_a_remote_server_is_judged_by_its_url(project: Path):
    port = free_port()
    listening = Listening([sys.executable, FAKE, "http", "--port", str(port)], port=port)
    try:
        managed({"deniedMcpServers": [{"serverUrl": "http://localhost:*/*"}]})
        servers(project, {"by-name": http(f"http://localhost:{port}/mcp"), "by-address": http(f"http://127.0.0.1:{port}/mcp")})
        session, status = await started(project)
        try:
            assert status["by-address"].state == "running"  # the same server, at an address not denied
            assert status["by-name"].state == "refused" and "http://localhost:*/*" in status["by-name"].error
        finally:
            await session.aclose()
    finally:
        listening.stop()


@pytest.mark.slow
async def test_mcp_add_and_an_editors_servers_are_refused_alike(project: Path):
    managed({"deniedMcpServers": [{"serverCommand": [sys.executable, "-u", FAKE, "stdio"]}]})
    session = open_session(project, model="demo")
    try:
        await session.start()
        with pytest.raises(McpConfigError, match="cannot add MCP server 'mine': " + ORG):
            await session.mcp.add("mine", {"command": sys.executable, "args": ["-u", FAKE, "stdio"]})
        assert session.mcp.connection("mine") is None
        assert (await session.mcp.add("control", STDIO_FAKE)).state == "running"
        await _add_servers(session, {"editor": {"command": sys.executable, "args": ["-u", FAKE, "stdio"]},
                                     "editor-ok": STDIO_FAKE})
        assert [line for line in session.pending_notices if "editor" in line] == [
            f"The editor's MCP server editor could not be added: cannot add MCP server 'editor': {ORG} "
            f"(deniedMcpServers in {Path(os.environ['CODINGCODE_CLAUDE_MANAGED_DIR']) / 'managed-settings.json'}: "
            f"serverCommand {sys.executable} -u {FAKE} stdio)"]
        assert session.mcp.connection("editor-ok").state == "running"
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_a_plugins_server_is_refused_like_any_other(project: Path, tmp_path: Path):
    market = tmp_path / "market"
    write(market / ".claude-plugin" / "marketplace.json",
          {"name": NAME, "owner": {"name": "t"}, "plugins": [{"name": "kit", "source": "./kit"}]})
    write(market / "kit" / ".mcp.json", {"mcpServers": {"fake": {"command": sys.executable,
                                                                 "args": [str(FAKE_SERVER), "stdio"]}}})
    enable(project, ["kit"], source={"source": "directory", "path": str(market)})
    servers(project, {"fake": STDIO_FAKE})
    managed({"deniedMcpServers": [{"serverName": "plugin_kit_fake"}]})
    session, status = await started(project)
    try:
        assert status["fake"].state == "running"
        assert status["plugin_kit_fake"].state == "refused"
        assert not any(tool.display_name.startswith("plugin_kit_fake:") for tool in session.mcp.tools())
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_managed_mcp_json_is_the_only_source_of_servers(project: Path):
    managed_mcp({"org": STDIO_FAKE})
    servers(project, {"mine": STDIO_FAKE})
    managed({"allowedMcpServers": []})  # the organisation's own servers need no allowlist entry
    session, status = await started(project)
    try:
        assert status["org"].state == "running"
        assert status["mine"].state == "refused" and "has exclusive control of MCP servers" in status["mine"].error
        with pytest.raises(McpConfigError, match="exclusive control"):
            await session.mcp.add("added", STDIO_FAKE)
        assert any("only the MCP servers of" in line for line in ProjectSettings(project).current().policy.lines())
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_the_deny_list_applies_to_managed_mcp_json_and_a_variable_brings_the_allowlist_back(
        project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_PATH", FAKE)
    managed_mcp({"org": STDIO_FAKE, "denied": STDIO_FAKE,
                 "from-env": {"command": sys.executable, "args": ["${FAKE_PATH}", "stdio"]}})
    managed({"deniedMcpServers": [{"serverName": "denied"}], "allowedMcpServers": []})
    session, status = await started(project)
    try:
        assert status["org"].state == "running"
        assert status["denied"].state == "refused" and "deniedMcpServers" in status["denied"].error
        assert status["from-env"].state == "refused" and "allowedMcpServers" in status["from-env"].error
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_a_persons_allowlist_adds_to_the_organisations_unless_it_allows_only_its_own(project: Path):
    servers(project, {"org-ok": STDIO_FAKE, "mine": STDIO_FAKE})
    managed({"allowedMcpServers": [{"serverName": "org-ok"}]})
    user({"allowedMcpServers": [{"serverName": "mine"}], "allowManagedMcpServersOnly": False})
    session, status = await started(project)
    try:
        assert status["mine"].state == "running"  # Claude Code's soft allowlist: a person's list adds
    finally:
        await session.aclose()
    managed({"allowedMcpServers": [{"serverName": "org-ok"}], "allowManagedMcpServersOnly": True})
    session, status = await started(project)
    try:
        assert status["org-ok"].state == "running"
        assert status["mine"].state == "refused" and status["mine"].error.startswith(ORG)
        current = ProjectSettings(project).current()
        assert any(line.startswith("overrides ") and ": allowedMcpServers — " in line and "allowManagedMcpServersOnly" in line
                   for line in current.policy.lines())
        ignored = {entry.key: entry.reason for entry in current.ignored_settings}
        assert ignored["allowManagedMcpServersOnly"] == "read from managed settings only"
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_a_person_may_deny_a_server_for_themselves(project: Path):
    servers(project, {"theirs": STDIO_FAKE, "kept": STDIO_FAKE})
    user({"deniedMcpServers": [{"serverName": "theirs"}]})
    session, status = await started(project)
    try:
        assert status["kept"].state == "running"
        assert status["theirs"].state == "refused" and status["theirs"].error.startswith("refused by your settings")
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_a_server_refused_since_the_session_began_does_not_come_back_on_restart(project: Path):
    servers(project, {"later": STDIO_FAKE})
    session, status = await started(project)
    try:
        assert status["later"].state == "running"
        managed({"deniedMcpServers": [{"serverName": "later"}]})
        after = await session.mcp.restart("later")
        assert after.state == "refused" and after.error.startswith(ORG)
    finally:
        await session.aclose()


def test_status_lines_name_the_policy(project: Path):
    managed({"allowManagedMcpServersOnly": True, "allowedMcpServers": [{"serverName": "x"}]})
    lines = ProjectSettings(project).current().policy.lines()
    assert "only its MCP allowlist applies (allowManagedMcpServersOnly)" in lines
    assert json.loads((Path(os.environ["CODINGCODE_CLAUDE_MANAGED_DIR"]) / "managed-settings.json").read_text())


@pytest.mark.slow
async def test_drop_in_fragments_beside_the_managed_file_apply_in_name_order(project: Path):
    from codingcode_jupyter.engine.managed_paths import MANAGED_SOURCES

    directory = Path(os.environ["CODINGCODE_CLAUDE_MANAGED_DIR"]) / "managed-settings.d"
    write(directory / "10-mcp.json", {"deniedMcpServers": [{"serverName": "dropped"}],
                                      "permissions": {"deny": ["Bash(curl:*)"]}, "model": "claude-sonnet-4-5"})
    write(directory / "20-later.json", {"model": "claude-opus-4-1"})
    write(directory / ".30-hidden.json", {"deniedMcpServers": [{"serverName": "ok"}]})  # hidden: not read
    write(directory / "40-notes.txt", "not json: not read")
    servers(project, {"dropped": STDIO_FAKE, "ok": STDIO_FAKE})
    session, status = await started(project)
    try:
        assert status["ok"].state == "running"
        assert status["dropped"].state == "refused" and "10-mcp.json" in status["dropped"].error
        current = ProjectSettings(project).current()
        assert current.merged.model == "claude-opus-4-1"  # a later fragment wins a value
        deny = next(rule for rule in current.rules if rule.action == "deny" and "curl" in rule.text)
        assert deny.source == "claude-managed.d/10-mcp.json" and deny.source in MANAGED_SOURCES
        assert "managed.d/x.json" in MANAGED_SOURCES and "local" not in MANAGED_SOURCES
        verdict = await ApprovalPipeline(project, python_hooks=[]).evaluate(
            call("execute_command", {"command": "curl https://example.com"}), context(project, mode="bypass"))
        assert verdict.kind == "deny" and "managed settings (managed-settings.d/10-mcp.json)" in verdict.reason
    finally:
        await session.aclose()
