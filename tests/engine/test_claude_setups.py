"""A person's Claude Code setup brought over, file by file, on real files from public repositories
(tests/data/claude/real and tests/data/claude/plugins, sources in their READMEs): agents in subfolders,
descriptions that run on over unindented lines, `allowed-tools` written with spaces, skills typed as
slash commands, fenced ```! blocks, allow rules that do not reach through package runners, a tracked
`.env.example` of placeholders, and the hook events and handler types that were never run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from codingcode_jupyter.engine.agents.profiles import load_profile_file, load_profiles
from codingcode_jupyter.engine.approval.rule_syntax import parse_rule
from codingcode_jupyter.engine.commands import expand_command, load_commands
from codingcode_jupyter.engine.settings import read_settings_file
from codingcode_jupyter.engine.skills import load_skills
from tests.engine.approval_helpers import call, context, evaluate
from tests.fakes.anthropic_server import Reply, text

DATA = Path(__file__).resolve().parents[1] / "data" / "claude"
REAL = DATA / "real"
PLUGINS = DATA / "plugins" / "marketplace" / "plugins"
PROMETHEUS = REAL / "prometheus__prometheus"
FLUENTUI = REAL / "microsoft__fluentui"
PYDANTIC = REAL / "pydantic__pydantic-ai"
SKILLS = REAL / "pyaethu-aung__skills"


def test_agents_in_subfolders_are_loaded_and_a_missing_description_is_read_from_what_the_file_has():
    catalog = load_profiles(PROMETHEUS)
    assert catalog.errors == {}
    planner = catalog.get("planner")  # .claude/agents/core/planner.md
    assert planner.description == "Strategic planning and task orchestration agent"
    assert any("'hooks' is not used" in note for note in planner.ignored)  # its pre/post scripts never run
    analyzer = catalog.get("code-analyzer")  # .claude/agents/analysis/code-review/analyze-code-quality.md
    assert analyzer.description.startswith("Advanced code quality analysis agent")
    assert any("metadata.description describes it" in note for note in analyzer.ignored)


def test_an_agent_whose_description_runs_on_over_unindented_lines_is_read_as_claude_code_reads_it():
    profile = load_profile_file(PLUGINS / "xbo-ai-flow" / "agents" / "verifier.md", "plugin")
    assert profile.description.startswith("Use this agent to run code quality checks")
    assert 'user: "Run all quality checks on the plugin"' in profile.description  # text, not a field
    assert profile.tools == ("read_file", "search_code", "search_files", "execute_command")
    assert profile.model is not None and "haiku" in profile.model
    assert any("continued on the unindented lines" in note for note in profile.ignored)


def test_allowed_tools_written_with_spaces_grant_each_tool():
    package_info = load_skills(FLUENTUI).skills["package-info"]
    assert package_info.allowed_tools == ("Bash", "Read", "Grep", "Glob")
    update = load_skills(SKILLS).skills["update-readme"]
    assert update.allowed_tools == ("Bash(git log:*)", "Bash(git diff:*)", "Bash(git status:*)", "Bash(ls:*)", "Glob",
                                    "Read", "Write", "Edit")
    rules = [parse_rule(rule, "allow") for rule in update.allowed_tools]
    assert all(rule.tools and not rule.missing for rule in rules)


def test_a_skill_is_a_slash_command_with_its_arguments_and_its_hint_as_written():
    catalog = load_commands(FLUENTUI)
    command = catalog.get("package-info")
    assert command is not None and command.kind == "skill" and command.argument_hint == "<package-name>"
    body = expand_command(command, "react-button", FLUENTUI).render([])
    assert "overview of the package **react-button**" in body and "$ARGUMENTS" not in body
    assert "grep -i \"react-button\" CODEOWNERS" in body
    journal = load_commands(PLUGINS.parent.parent, skills=False)  # control: not a project, no commands
    assert journal.commands == {}


def test_a_fenced_bang_block_runs_as_one_script_before_the_request():
    command = load_commands(SKILLS).get("update-readme")
    assert command is not None
    request = expand_command(command, "--yes", SKILLS)
    assert request.shell == ["git log --oneline -10", "git diff HEAD~1 HEAD --stat"]
    rendered = request.render(["abc123 first", " README.md | 2 +-"])
    assert "```!" not in rendered and "abc123 first" in rendered and " README.md | 2 +-" in rendered


@pytest.mark.slow
async def test_a_skills_bang_blocks_run_through_the_approval_pipeline_when_typed(fake_api, tmp_path: Path):
    from codingcode_jupyter.engine.runtime import open_session
    from codingcode_jupyter.engine.session import TurnOptions

    project = tmp_path / "proj"
    shutil.copytree(SKILLS / ".claude", project / ".claude")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    for message in ("one", "two"):
        (project / "README.md").write_text(message)
        subprocess.run(["git", "add", "README.md"], cwd=project, check=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message], cwd=project,
                       check=True)
    session = open_session(project, mode="default")
    try:
        fake_api.add(Reply([text("done")]))
        command = load_commands(project).get("update-readme")
        assert command is not None
        await session.run_turn("/update-readme", options=TurnOptions(command=expand_command(command, "", project)))
    finally:
        await session.aclose()
    sent = fake_api.requests[-1]["messages"][0]["content"]
    body = sent if isinstance(sent, str) else sent[0]["text"]
    assert " two" in body and "git log --oneline -10" not in body  # the block ran (read-only: no card)


def _decide(settings: Path, command: str, project: Path) -> str:
    from codingcode_jupyter.engine.approval.rules import judge
    from codingcode_jupyter.engine.approval.subject import build_subject
    from codingcode_jupyter.engine.tools.builtin import builtin_tools

    tool = {t.name: t for t in builtin_tools()}["execute_command"]
    permissions = read_settings_file(settings, "claude").settings.permissions
    rules = [parse_rule(rule, action) for action in ("allow", "deny", "ask") for rule in getattr(permissions, action)]
    verdict = judge(build_subject(tool, {"command": command}, project), rules)
    return verdict.action if verdict is not None else "none"


@pytest.mark.parametrize("command", ["npx ls", "uvx tree", "bunx tree", "npx --yes ls -la", "timeout 5 uvx tree",
                                     "pnpx tree src"])
def test_an_allow_rule_does_not_reach_through_a_package_runner(tmp_path: Path, command: str):
    """pydantic-ai's `Bash(ls:*)` and `Bash(tree:*)` allow ls and tree, not a registry package of that name."""
    settings = PYDANTIC / ".claude" / "settings.json"
    assert _decide(settings, command, tmp_path) == "none"
    plain = command.split(" ", 1)[1].removeprefix("--yes ") if not command.startswith("timeout") else "tree"
    assert _decide(settings, plain, tmp_path) == "allow"  # control: what the rule names


def test_deny_and_ask_rules_still_hold_through_a_package_runner(tmp_path: Path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(tree:*)"], "ask": ["Bash(ls:*)"]}}))
    assert _decide(settings, "uvx tree", tmp_path) == "deny" and _decide(settings, "npx ls", tmp_path) == "ask"


def _repository(root: Path, example: str) -> Path:
    project = root / "proj"
    (project / ".claude").mkdir(parents=True)
    shutil.copy(PYDANTIC / ".claude" / "settings.json", project / ".claude" / "settings.json")
    (project / ".env.example").write_text(example)
    (project / "app.py").write_text("print(1)\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m"], cwd=project, check=True)
    return project


async def test_git_log_is_allowed_in_a_repository_tracking_a_dotenv_template_of_placeholders(tmp_path: Path):
    project = _repository(tmp_path, (PYDANTIC / ".env.example").read_text())
    verdict = await evaluate(project, "execute_command", {"command": "git log -p"})
    assert verdict.kind == "allow", verdict.reason


async def test_a_dotenv_template_holding_a_real_looking_key_is_still_a_secret(tmp_path: Path):
    real = (PYDANTIC / ".env.example").read_text().replace("OPENAI_API_KEY=\n", "OPENAI_API_KEY=sk-proj-4f9Qz81LmXw\n")
    project = _repository(tmp_path, real)
    verdict = await evaluate(project, "execute_command", {"command": "git log -p"})
    assert verdict.kind == "ask" and ".env.example" in verdict.reason


# -- hook events and handler types -------------------------------------------------------------------------


def _hooks(project: Path, hooks: dict[str, Any]) -> None:
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


ALLOW = ('{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}')
DENY = ('{"hookSpecificOutput": {"hookEventName": "PermissionRequest", '
        '"decision": {"behavior": "deny", "message": "not on Fridays"}}}')


@pytest.mark.parametrize(("answer", "kind"), [(ALLOW, "allow"), (DENY, "deny"), ("", "ask")])
async def test_a_permission_request_hook_answers_in_the_persons_place(project: Path, answer: str, kind: str):
    log = project.parent / "told.json"
    _hooks(project, {"PermissionRequest": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"cat > {log}; printf '%s' '{answer}'"}]}]})
    asked: list[Any] = []

    async def ask(request: Any) -> str:
        asked.append(request)
        return "allow"

    pipeline_call = call("execute_command", {"command": "make deploy"})
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline

    verdict = await ApprovalPipeline(project, python_hooks=[]).decide(pipeline_call, context(project), ask)
    told = json.loads(log.read_text())
    assert told["hook_event_name"] == "PermissionRequest" and told["tool_name"] == "Bash"
    assert told["tool_input"]["command"] == "make deploy"
    if kind == "ask":
        assert len(asked) == 1 and verdict.kind == "allow" and verdict.by == "user"  # nothing said: the person
    else:
        assert asked == [] and verdict.kind == kind and verdict.by == "hook"
        assert kind == "allow" or "not on Fridays" in verdict.reason


async def test_a_permission_request_hook_cannot_allow_what_a_built_in_rule_always_asks(project: Path):
    _hooks(project, {"PermissionRequest": [{"hooks": [{"type": "command", "command": f"printf '%s' '{ALLOW}'"}]}]})
    (project / ".env").write_text("TOKEN=1\n")
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline

    verdict = await ApprovalPipeline(project, python_hooks=[]).decide(
        call("read_file", {"path": ".env"}), context(project), None)
    assert verdict.kind == "deny" and verdict.by == "nobody"  # the built-in ask stands; nobody to ask here


async def test_a_permission_request_hook_cannot_allow_what_the_managed_policy_asks_a_person(project: Path):
    import os

    _hooks(project, {"PermissionRequest": [{"hooks": [{"type": "command", "command": f"printf '%s' '{ALLOW}'"}]}]})
    managed = Path(os.environ["CODINGCODE_CLAUDE_MANAGED_DIR"]) / "managed-settings.json"
    managed.write_text(json.dumps({"permissions": {"ask": ["Bash(make:*)"]}}))
    asked: list[Any] = []

    async def ask(request: Any) -> str:
        asked.append(request)
        return "deny"

    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline

    verdict = await ApprovalPipeline(project, python_hooks=[]).decide(
        call("execute_command", {"command": "make deploy"}), context(project), ask)
    assert len(asked) == 1 and asked[0].policy and verdict.kind == "deny" and verdict.by == "user"


class _Receiver(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], dict[str, Any]]] = []
    reply = b""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append((dict(self.headers), body))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(type(self).reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver():
    _Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


async def test_an_http_hook_posts_the_event_with_only_the_variables_it_names(project: Path, receiver, monkeypatch):
    monkeypatch.setenv("HOOK_TOKEN", "tok-1")
    monkeypatch.setenv("OTHER_SECRET", "must-not-leave-7f3a9c2e41d8")
    url = f"http://127.0.0.1:{receiver.server_port}/hooks/pre-tool-use"
    _Receiver.reply = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                         "permissionDecisionReason": "blocked by the team"}}).encode()
    _hooks(project, {"PreToolUse": [{"matcher": "Bash", "hooks": [{
        "type": "http", "url": url, "allowedEnvVars": ["HOOK_TOKEN"],
        "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "${OTHER_SECRET}"}}]}]})
    verdict = await evaluate(project, "execute_command", {"command": "make KEY=must-not-leave-7f3a9c2e41d8"},
                             mode="bypass")
    assert verdict.kind == "deny" and "blocked by the team" in verdict.reason
    [(headers, body)] = _Receiver.received
    assert headers["Authorization"] == "Bearer tok-1" and headers["X-Other"] == ""
    # The event leaves the machine: a known secret in it goes as its marker, as in a tool's result.
    assert body["hook_event_name"] == "PreToolUse" and body["tool_input"]["command"].startswith("make KEY=")
    assert "must-not-leave" not in json.dumps(body) and "OTHER_SECRET" in body["tool_input"]["command"]


async def test_a_prompt_hook_asks_a_model_and_its_no_blocks(project: Path, fake_api):
    (project / ".env").write_text("DEPLOY_TOKEN=dt-5b8e1f0c9a7d3e2b\n")
    fake_api.add(Reply([text('{"ok": false, "reason": "tests are not run yet"}')]))
    _hooks(project, {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "prompt", "prompt": "Is this command safe? $ARGUMENTS"}]}]})
    verdict = await evaluate(project, "execute_command", {"command": "make T=dt-5b8e1f0c9a7d3e2b"}, mode="bypass")
    assert verdict.kind == "deny" and "tests are not run yet" in verdict.reason
    request = fake_api.requests[-1]
    asked = request["messages"][0]["content"]
    assert "Is this command safe?" in asked and '"command": "make T=' in asked and "haiku" in request["model"]
    assert "dt-5b8e1f0c9a7d3e2b" not in asked and "DEPLOY_TOKEN" in asked  # the project's .env value, as its marker


async def test_subagent_start_and_setup_hooks_run_and_their_words_reach_the_model(fake_api, tmp_path: Path):
    from tests.engine.helpers import make_deps
    from tests.engine.test_subagents import Parent, first_text, router
    from tests.fakes.anthropic_server import tool_use

    project = tmp_path
    log = project / "start.json"
    _hooks(project, {"SubagentStart": [{"matcher": "explore", "hooks": [
        {"type": "command", "command": f"cat > {log}; echo START-CONTEXT-MARKER"}]}],
        "Setup": [{"matcher": "init", "hooks": [{"type": "command", "command": "echo SETUP-MARKER"}]}]})
    setup = await make_deps(project).hooks.setup(session_id="s", trigger="init")
    assert setup.context == ["SETUP-MARKER"]
    assert (await make_deps(project).hooks.setup(session_id="s", trigger="maintenance")).ran == []  # its matcher
    fake_api.default = router({
        "PARENT": [Reply([tool_use("dispatch_agent", {"agent": "explore", "prompt": "CHILD: look"}, id="d1")]),
                   Reply([text("done")])],
        "CHILD": [Reply([text("found")])]})
    await Parent(project).run("PARENT: go")
    told = json.loads(log.read_text())
    assert told["hook_event_name"] == "SubagentStart" and told["agent_type"] == "explore"
    child = next(r for r in fake_api.requests if "CHILD" in first_text(r))
    assert "START-CONTEXT-MARKER" in first_text(child)
