"""The pipeline end to end: asking a person, always/never persisted, timeouts, interrupts,
hooks (Python and shell), the sandbox seam, and the audit log."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.audit import AuditLog
from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline, effective_rules
from codingcode_jupyter.engine.approval.types import ApprovalRequest
from codingcode_jupyter.engine.events import ApprovalAnswered, ApprovalRequested, AuditRecorded
from codingcode_jupyter.engine.hooks import pre_tool_use as hooks
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.settings import SettingsError

from .approval_helpers import call, context, make_project


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path)


def asker(answer, seen=None):
    async def ask(request: ApprovalRequest):
        if seen is not None:
            seen.append(request)
        return answer

    return ask


async def test_ask_really_asks_and_allows(project):
    events, seen = [], []
    pipeline = ApprovalPipeline(project, python_hooks=[])
    decision = await pipeline.decide(call("execute_command", {"command": "curl x"}), context(project, events),
                                     asker("allow", seen))
    assert decision.kind == "allow" and decision.by == "user"
    assert seen and seen[0].tool == "execute_command" and "curl x" in seen[0].preview
    kinds = [type(e) for e in events]
    assert kinds.index(ApprovalRequested) < kinds.index(ApprovalAnswered) < kinds.index(AuditRecorded)


async def test_ask_rule_asks_even_with_allow_rule(project):
    pipeline = ApprovalPipeline(project, python_hooks=[], session_rules=[("execute_command(pytest *)", "ask")])
    seen = []
    decision = await pipeline.decide(call("execute_command", {"command": "pytest -q"}), context(project), asker("deny", seen))
    assert seen, "an ask rule must reach the person"
    assert decision.kind == "deny" and decision.reason.startswith("Denied")


async def test_nobody_to_ask_denies_with_actionable_message(project):
    pipeline = ApprovalPipeline(project, python_hooks=[])
    decision = await pipeline.decide(call("execute_command", {"command": "curl x"}), context(project), None)
    assert decision.kind == "deny" and "nobody can be asked" in decision.reason


async def test_timeout_denies(project):
    async def slow(request):
        await asyncio.sleep(5)
        return "allow"

    pipeline = ApprovalPipeline(project, python_hooks=[])
    decision = await pipeline.decide(call("execute_command", {"command": "curl x"}), context(project, approval_timeout=0.05), slow)
    assert decision.kind == "deny" and "within 0.05 s" in decision.reason


async def test_always_persists_exact_rule_and_later_sessions_honour_it(project):
    pipeline = ApprovalPipeline(project, python_hooks=[])
    decision = await pipeline.decide(call("execute_command", {"command": "make test && ls *.py"}), context(project),
                                     asker("always"))
    assert decision.kind == "allow"
    local = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert local["permissions"]["allow"] == ["execute_command(make test)", "execute_command(ls \\*.py)"]
    assert all(rule.count("*") == rule.count("\\*") for rule in local["permissions"]["allow"])
    # Takes effect at once, and in a new session; only the exact command.
    seen = []
    assert (await pipeline.decide(call("execute_command", {"command": "make test"}), context(project), asker("deny", seen))).kind == "allow"
    fresh = ApprovalPipeline(project, python_hooks=[])
    assert (await fresh.evaluate(call("execute_command", {"command": "make test"}), context(project))).kind == "allow"
    assert (await fresh.evaluate(call("execute_command", {"command": "make check"}), context(project))).kind == "ask"
    assert (await fresh.evaluate(call("execute_command", {"command": "make install"}), context(project))).kind == "ask"
    # Deduplicated.
    await pipeline.decide(call("execute_command", {"command": "make test"}), context(project), asker("always"))
    local = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert local["permissions"]["allow"].count("execute_command(make test)") == 1


async def test_never_persists_a_deny_for_the_exact_path(project):
    pipeline = ApprovalPipeline(project, python_hooks=[])
    target = {"path": "src/x.py", "content": "x"}
    decision = await pipeline.decide(call("write_file", target), context(project), asker("never"))
    assert decision.kind == "deny"
    fresh = ApprovalPipeline(project, python_hooks=[])
    bypass = context(project, mode="bypass")
    assert (await fresh.evaluate(call("write_file", target), bypass)).kind == "deny"
    assert (await fresh.evaluate(call("write_file", {"path": "src/y.py", "content": "x"}), bypass)).kind == "allow"


async def test_always_on_builtin_ask_allows_once_without_persisting(project):
    pipeline = ApprovalPipeline(project, python_hooks=[])
    decision = await pipeline.decide(call("read_file", {"path": ".env"}), context(project), asker("always"))
    assert decision.kind == "allow" and "cannot be overridden" in decision.reason
    assert not (project / ".codingcode" / "settings.local.json").exists()


async def test_cancel_during_ask_writes_audit_then_propagates(project):
    started = asyncio.Event()

    async def forever(request):
        started.set()
        await asyncio.sleep(60)

    pipeline = ApprovalPipeline(project, python_hooks=[])
    task = asyncio.create_task(pipeline.decide(call("execute_command", {"command": "curl x"}), context(project), forever))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    records = AuditLog(project).read()
    assert records[-2]["event"] == "decision" and records[-2]["by"] == "interrupted"
    assert records[-1]["event"] == "outcome" and records[-1]["outcome"] == "interrupted"


async def test_audit_record_written_before_return_with_every_layer(project):
    events = []
    pipeline = ApprovalPipeline(project, python_hooks=[])
    c = call("execute_command", {"command": "sudo id"})
    decision = await pipeline.decide(c, context(project, events), None)
    record = AuditLog(project).read(1)[0]
    for key in ("ts", "session_id", "turn_id", "tool_use_id", "agent", "tool", "input", "decision", "layer", "rule",
                "reason", "by", "layers"):
        assert key in record
    assert record["decision"] == "deny" and record["rule"] == "builtin:privilege"
    assert record["layers"][0]["layer"] == "rules"
    pipeline.record_outcome(c, context(project), decision, "denied", 0.0)
    pipeline.record_outcome(c, context(project), decision, "ok", 12.5)
    last = AuditLog(project).read(1)[0]
    assert last == {**last, "event": "outcome", "tool_use_id": "t1", "outcome": "ok", "duration_ms": 12.5}
    assert any(isinstance(e, AuditRecorded) for e in events)


async def test_unicode_lookalikes_escaped_in_request(project):
    seen = []
    pipeline = ApprovalPipeline(project, python_hooks=[])
    await pipeline.decide(call("execute_command", {"command": "\u0455udo id; ls\u202e"}), context(project), asker("deny", seen))
    request = seen[0]
    assert "\\u{0455}udo" in request.preview and "\\u{202E}" in request.preview
    assert "\u0455" not in json.dumps(request.input, ensure_ascii=False)


async def test_python_hook_modified_input_replaces_args_and_rules_rerun(project):
    def rewrite(payload):
        assert payload["tool_name"] == "execute_command" and payload["permission_mode"] == "default"
        return {"decision": "continue", "modified_input": {"command": "pytest -q"}}

    pipeline = ApprovalPipeline(project, python_hooks=[hooks.PythonHook(rewrite, "execute_command", "rewrite")])
    decision = await pipeline.decide(call("execute_command", {"command": "make"}), context(project), None)
    assert decision.kind == "allow" and decision.input == {"command": "pytest -q"}

    def smuggle(payload):
        return {"decision": "allow", "modified_input": {"command": "sudo id"}}

    pipeline = ApprovalPipeline(project, python_hooks=[hooks.PythonHook(smuggle, "*", "smuggle")])
    decision = await pipeline.decide(call("execute_command", {"command": "make"}), context(project), None)
    assert decision.kind == "deny" and decision.rule == "builtin:privilege"


@pytest.mark.parametrize("behaviour", ["crash", "junk", "typo", "slow"])
async def test_failing_python_hook_fails_closed(project, behaviour, monkeypatch):
    monkeypatch.setattr(hooks, "_PYTHON_HOOK_TIMEOUT", 0.05)

    async def hook(payload):
        if behaviour == "crash":
            raise RuntimeError("boom")
        if behaviour == "junk":
            return "yes please"
        if behaviour == "typo":
            return {"decison": "allow"}
        await asyncio.sleep(5)

    pipeline = ApprovalPipeline(project, python_hooks=[hooks.PythonHook(hook, "*", "h")])
    result = await pipeline.evaluate(call("execute_command", {"command": "make"}), context(project))
    assert result.kind == "ask" and "fail closed" in result.reason


async def test_hook_deny_wins_and_registry_functions(project):
    def veto(payload):
        return {"decision": "deny", "reason": "no make on Fridays"}

    hooks.register_pre_tool_use(veto, matcher="execute_*")
    try:
        pipeline = ApprovalPipeline(project)
        decision = await pipeline.decide(call("execute_command", {"command": "make"}), context(project), asker("allow"))
        assert decision.kind == "deny" and "no make on Fridays" in decision.reason
    finally:
        assert hooks.unregister(veto)
    assert (await ApprovalPipeline(project).evaluate(call("execute_command", {"command": "make"}), context(project))).kind == "ask"


def _shell_hook_settings(project: Path, script: str, timeout: float = 5) -> None:
    (project / "hook.py").write_text(script)
    settings = json.loads((project / ".codingcode" / "settings.json").read_text())
    settings["hooks"] = {"PreToolUse": [{"matcher": "execute_command", "hooks": [
        {"type": "command", "command": f"{sys.executable} hook.py", "timeout": timeout}]}]}
    (project / ".codingcode" / "settings.json").write_text(json.dumps(settings))


async def test_shell_hook_gets_json_and_can_modify_input(project):
    _shell_hook_settings(project, (
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "assert data['tool_input'] == {'command': 'make'} and data['tool_use_id'] == 't1'\n"
        "print(json.dumps({'decision': 'allow', 'reason': 'ok', 'modified_input': {'command': 'make -n'}}))\n"
    ))
    decision = await ApprovalPipeline(project).decide(call("execute_command", {"command": "make"}), context(project), None)
    assert decision.kind == "allow" and decision.input == {"command": "make -n"} and decision.layer == "hooks"


@pytest.mark.parametrize("script", ["print('not json')", "import sys; sys.exit(3)"])
async def test_shell_hook_failure_fails_closed(project, script):
    _shell_hook_settings(project, script)
    result = await ApprovalPipeline(project).evaluate(call("execute_command", {"command": "make"}), context(project))
    assert result.kind == "ask" and "hook" in result.reason


async def test_a_hook_past_its_timeout_is_killed_with_its_children(project):
    """`sleep 5; ...` leaves sh waiting on a grandchild that holds the pipes; the group is killed."""
    settings = json.loads((project / ".codingcode" / "settings.json").read_text())
    settings["hooks"] = {"PreToolUse": [{"matcher": "execute_command", "hooks": [
        {"type": "command", "command": "sleep 5; echo '{\"decision\": \"allow\"}'", "timeout": 0.3}]}]}
    (project / ".codingcode" / "settings.json").write_text(json.dumps(settings))
    started = time.monotonic()
    result = await ApprovalPipeline(project).evaluate(call("execute_command", {"command": "make"}), context(project))
    elapsed = time.monotonic() - started
    # Fails closed as a hook failure does: asked, saying which hook and why.
    assert result.kind == "ask" and "did not answer within 0.3 s" in result.reason
    assert elapsed < 1.0, f"the 0.3 s hook timeout took {elapsed:.2f} s"


async def test_settings_env_reaches_hooks_and_commands(project):
    settings = json.loads((project / ".codingcode" / "settings.json").read_text())
    settings["env"] = {"PROJECT_FLAVOUR": "tangy"}
    settings["hooks"] = {"PreToolUse": [{"matcher": "execute_command", "hooks": [
        {"type": "command", "command": "test \"$PROJECT_FLAVOUR\" = tangy || exit 2"}]}]}
    (project / ".codingcode" / "settings.json").write_text(json.dumps(settings))
    result = await ApprovalPipeline(project).evaluate(call("execute_command", {"command": "pytest -q"}), context(project))
    assert result.kind == "allow", result.reason  # the hook saw the variable (exit 2 would deny)
    from codingcode_jupyter.engine.tools.shell import execute_command_tool

    ran = await execute_command_tool().run({"command": "echo flavour=$PROJECT_FLAVOUR"}, context(project))
    assert "flavour=tangy" in ran.text_content


class Sandbox:
    def __init__(self, enabled, active, fail_if_unavailable=False):
        self.enabled, self.active, self.fail_if_unavailable = enabled, active, fail_if_unavailable
        self.unavailable_reason = None if active else "bubblewrap not found"
        self.writable_roots: list = []  # where a command may write besides the temp directory (none here)

    async def aclose(self):
        pass


async def test_sandbox_unavailable_turns_allow_into_ask(project):
    pipeline = ApprovalPipeline(project, python_hooks=[])
    c = call("execute_command", {"command": "pytest -q"})
    assert (await pipeline.evaluate(c, context(project, sandbox=Sandbox(True, True)))).kind == "allow"
    result = await pipeline.evaluate(c, context(project, sandbox=Sandbox(True, False)))
    assert result.kind == "ask" and "sandbox" in result.reason
    seen = []
    await pipeline.decide(call("execute_command", {"command": "make"}), context(project, sandbox=Sandbox(True, True)),
                          asker("deny", seen))
    assert seen[0].sandboxed is True
    deny = await pipeline.evaluate(call("execute_command", {"command": "sudo id"}),
                                   context(project, sandbox=Sandbox(True, False)))
    assert deny.kind == "deny"


async def test_sandbox_unavailable_with_fail_if_unavailable_refuses_every_command(project):
    pipeline = ApprovalPipeline(project, python_hooks=[])
    strict = Sandbox(True, False, fail_if_unavailable=True)
    for command in ("pytest -q", "make"):  # one an allow rule covers, one that would be asked
        result = await pipeline.evaluate(call("execute_command", {"command": command}), context(project, sandbox=strict))
        assert result.kind == "deny" and "failIfUnavailable" in result.reason and "bubblewrap not found" in result.reason
    # other tools are not the sandbox's business
    read = await pipeline.evaluate(call("read_file", {"path": "README.md"}), context(project, sandbox=strict))
    assert read.kind == "allow"


async def test_each_call_is_judged_in_its_contexts_mode(project):
    pipeline = ApprovalPipeline(project, python_hooks=[])
    c = call("write_file", {"path": "src/a.py", "content": "x"})
    assert (await pipeline.evaluate(c, context(project))).kind == "ask"
    assert (await pipeline.evaluate(c, context(project, mode="acceptEdits"))).kind == "allow"
    result = await pipeline.evaluate(c, context(project, mode="plan"))
    assert result.kind == "deny" and "plan mode" in result.reason


async def test_broken_settings_is_a_clear_error(project):
    path = project / ".codingcode" / "settings.json"
    # An unreadable rule is left out loudly; the file's other deny rules still hold.
    path.write_text(json.dumps({"permissions": {"deny": ["read_file", "execute_command(rm *"]}}))
    effective = ApprovalPipeline(project).settings.current()
    assert [rule.text for rule in effective.rules] == ["read_file"]
    assert any("settings.json" in w and "permissions.deny.1" in w for w in effective.warnings)
    path.write_text("{")
    with pytest.raises(SettingsError, match="settings.json"):
        ApprovalPipeline(project)


async def test_settings_broken_after_start_denies_every_call(project):
    pipeline = ApprovalPipeline(project, python_hooks=[])
    (project / ".codingcode" / "settings.json").write_text("{oops")
    result = await pipeline.evaluate(call("read_file", {"path": "docs/a.md"}), context(project))
    assert result.kind == "deny" and "settings.json" in result.reason


async def test_approval_observers_get_every_record(project):
    got = []
    hooks.register_approval_observer(got.append)
    try:
        await ApprovalPipeline(project).decide(call("read_file", {"path": "docs/a.md"}), context(project), None)
    finally:
        hooks.unregister(got.append)
    assert got and got[0]["tool"] == "read_file" and got[0]["decision"] == "allow"


def test_effective_rules_lists_builtins_first(project):
    rows = effective_rules(ProjectSettings(project).current(), ["execute_command(make)"])
    assert rows[0][2] == "builtin" and len([r for r in rows if r[2] == "builtin"]) == 12
    assert ("execute_command(make)", "allow", "session", 100) in rows
    assert ("read_file(docs/**)", "allow", "project", 100) in rows


async def test_hooks_run_for_allowed_calls_and_their_deny_holds_in_bypass(project):
    seen = []

    def veto_make(payload):
        seen.append(payload["tool_name"])
        if "make" in payload["tool_input"].get("command", ""):
            return {"decision": "deny", "reason": "no make here"}
        return None

    pipeline = ApprovalPipeline(project, python_hooks=[hooks.PythonHook(veto_make, "*", "veto")])
    # Allowed by a rule, by the read-only layer, and by bypass mode: the hook runs for each and its deny holds.
    assert (await pipeline.evaluate(call("execute_command", {"command": "pytest -q"}), context(project))).kind == "allow"
    assert (await pipeline.evaluate(call("read_file", {"path": "docs/a.md"}), context(project))).kind == "allow"
    denied = await pipeline.evaluate(call("execute_command", {"command": "make"}), context(project, mode="bypass"))
    assert denied.kind == "deny" and "no make here" in denied.reason
    assert seen == ["execute_command", "read_file", "execute_command"]
