"""The approval pipeline: every tool call passes six layers before it runs.

1. rules (built-in, then settings and session rules)  2. read-only whitelist
3. permission mode  4. PreToolUse hooks  5. a person  6. the audit log.

The first layer that says allow or deny decides. An ``ask`` is sticky: once a layer asks
(a built-in rule, a protected path, a command that cannot be resolved statically, an ask
rule), no later layer can turn it into allow, only a person can; later layers may still
deny. A hook's modified input replaces the arguments and layers 1-3 run again on it.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal

from pydantic import BaseModel, Field

from ..atomic import atomic_write
from ..domains import domain_allowed, url_host
from ..events import ApprovalAnswered, ApprovalRequested, AuditRecorded
from ..project_settings import EffectiveSettings, ProjectSettings, directory_root
from ..secret_files import credential_store
from ..settings import PermissionMode, SettingsError, settings_paths
from ..trust.items import TrustItem
from . import hooks as hooks_module
from .audit import AuditLog, clip_input
from .builtin_rules import BUILTIN_RULES, check_builtin
from .display import escape_unicode, escape_value, has_invisible
from .paths import protected_reason, relative_to_project
from .rules import Rule, RuleError, exact_rules, judge, parse_rule
from .readonly_commands import read_only_command
from .subject import Subject, build_subject
from .candidates import allow_candidates, deny_candidates
from .types import Answer, ApprovalRequest, Asker, Decision, Outcome, Reply, ToolCall

if TYPE_CHECKING:
    from ..sandbox import CommandSandbox
    from ..tools.base import ToolContext

__all__ = ["ApprovalPipeline", "Evaluation", "LayerVerdict", "effective_rules", "persist_rules"]

Kind = Literal["allow", "deny", "ask"]


class LayerVerdict(BaseModel):
    """What one layer said about a call."""

    layer: str
    verdict: Literal["allow", "deny", "ask", "continue", "skipped"]
    rule: str | None = None
    reason: str = ""


class Evaluation(BaseModel):
    """Layers 1-4's verdict: allow, deny, or ask a person."""

    kind: Kind
    input: dict[str, Any] = Field(default_factory=dict)
    layer: str = ""
    rule: str | None = None
    reason: str = ""
    by: str = ""
    layers: list[LayerVerdict] = Field(default_factory=list)
    # The ask comes from something no setting can outrank: "Always" allows once, persists nothing.
    forced: bool = False
    exact_rules: list[str] = Field(default_factory=list)
    # What "Always allow" / "Never allow" may save, narrowest first.
    allow_choices: list[list[str]] = Field(default_factory=list)
    deny_choices: list[list[str]] = Field(default_factory=list)


@dataclass
class _Ask:
    layer: str
    rule: str | None
    reason: str
    forced: bool


def _session_rule(rule: Any) -> Rule:
    if isinstance(rule, Rule):
        return rule
    if isinstance(rule, str):
        return parse_rule(rule, "allow", "session")
    if isinstance(rule, tuple) and len(rule) == 2:
        return parse_rule(rule[0], rule[1], "session")
    raise RuleError(f"a session rule must be a Rule, a string or (text, action), got {rule!r}")


def effective_rules(settings: EffectiveSettings, session_rules: Iterable[Any] = ()) -> list[tuple[str, str, str, int]]:
    """(rule text, action, source, priority) of every rule in force, strongest first."""
    rows: list[tuple[str, str, str, int]] = [(rule.text, rule.action, "builtin", 1000) for rule in BUILTIN_RULES]
    rules = [_session_rule(r) for r in session_rules] + list(settings.rules)
    order = {"deny": 0, "ask": 1, "allow": 2}
    for rule in sorted(rules, key=lambda r: (-r.priority, order[r.action])):
        rows.append((rule.text, rule.action, rule.source, rule.priority))
    return rows


def persist_rules(project: Path, action: Literal["allow", "deny"], rules: list[str]) -> Path:
    """Add ``rules`` to ``permissions.<action>`` of settings.local.json: deduplicated, atomic, locked."""
    path = dict(settings_paths(Path(project)))["local"]
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data: dict[str, Any] = {}
        if path.exists():
            text = path.read_text(encoding="utf-8")
            try:
                data = json.loads(text) if text.strip() else {}
            except json.JSONDecodeError as error:
                raise SettingsError(f"{path}: not valid JSON (line {error.lineno}), not overwriting it") from None
            if not isinstance(data, dict):
                raise SettingsError(f"{path}: the top level must be a JSON object, not overwriting it")
        permissions = data.setdefault("permissions", {})
        if not isinstance(permissions, dict):
            raise SettingsError(f"{path}: entry 'permissions' must be an object, not overwriting it")
        entries = permissions.setdefault(action, [])
        for rule in rules:
            if rule not in entries:
                entries.append(rule)
        atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    return path


class ApprovalPipeline:
    """Implements :class:`~.types.Approver`: decides every tool call and audits it."""

    def __init__(
        self,
        project: Path,
        *,
        settings: ProjectSettings | None = None,
        session_rules: Iterable[Any] = (),
        python_hooks: list[hooks_module.PythonHook] | None = None,
        audit: bool = True,
    ) -> None:
        self.project = Path(os.path.realpath(project))
        self.settings = settings or ProjectSettings(self.project)
        self.session_rules: list[Rule] = [_session_rule(rule) for rule in session_rules]
        self._python_hooks = python_hooks
        self.audit = AuditLog(self.project) if audit else None
        self.settings.current()  # a broken settings file is an error now, not at the first call

    def add_session_rule(self, text: str, action: Literal["allow", "deny", "ask"] = "allow") -> Rule:
        """A rule for this session only (not persisted)."""
        rule = parse_rule(text, action, "session")
        self.session_rules.append(rule)
        return rule

    # -- layers 1-3 ------------------------------------------------------------------------

    def _layers_1_3(self, subject: Subject, rules: list[Rule], mode: PermissionMode,
                    domains: tuple[str, ...] = (), sandboxed: bool = False, auto_allow: bool = False,
                    read_roots: tuple[Path, ...] = (),
                    ) -> tuple[Evaluation | None, _Ask | None, list[LayerVerdict]]:
        layers: list[LayerVerdict] = []
        sticky: _Ask | None = None
        reads_only = read_only_command(subject) if subject.command is not None else None
        read_only = subject.read_only or reads_only is not None
        # A request to a domain nobody allowed is where data would leave, and what a tool reads goes
        # to the model: neither is read-only enough to run unasked.
        egress = _unlisted_egress(subject, domains) or _credential_read(subject) or _outside_read(subject, read_roots)

        def deny(layer: str, rule: str | None, reason: str, by: str) -> Evaluation:
            return Evaluation(kind="deny", input=subject.input, layer=layer, rule=rule, reason=reason, by=by, layers=layers)

        # Layer 1: built-in rules, then what cannot be resolved, protected paths, settings rules.
        hits = check_builtin(subject) + [hit for inner in subject.inner for hit in check_builtin(inner)]
        hits.sort(key=lambda hit: hit.action != "deny")
        for hit in hits:
            layers.append(LayerVerdict(layer="rules", verdict=hit.action, rule=hit.rule, reason=hit.reason))
        if hits and hits[0].action == "deny":
            return deny("rules", hits[0].rule, f"Denied by built-in rule {hits[0].rule}: {hits[0].reason}", "rule"), None, layers
        if hits:
            sticky = _Ask("rules", hits[0].rule, f"Built-in rule {hits[0].rule}: {hits[0].reason}", True)
        problems = _unresolved(subject)
        if problems and sandboxed:
            # Inside the sandbox the built-in rules hold by construction: modes and rules apply as configured.
            layers.append(LayerVerdict(layer="rules", verdict="continue", rule="builtin:unresolved",
                                       reason="Not judged before it runs (" + "; ".join(problems) + "); the sandbox "
                                       "enforces the built-in rules"))
        elif problems:
            where = "it runs in the kernel, unsandboxed" if subject.access.code is not None else \
                "no sandbox will run it"
            reason = f"Cannot be judged before it runs and {where}: " + "; ".join(problems)
            layers.append(LayerVerdict(layer="rules", verdict="ask", rule="builtin:unresolved", reason=reason))
            sticky = sticky or _Ask("rules", "builtin:unresolved", reason, True)
        hidden = next((ref for ref in subject.paths if has_invisible(ref.raw)), None)
        if hidden is not None and subject.command is None:
            reason = f"{hidden.via} `{escape_unicode(hidden.raw)}` holds invisible Unicode characters"
            layers.append(LayerVerdict(layer="rules", verdict="ask", rule="builtin:unresolved", reason=reason))
            sticky = sticky or _Ask("rules", "builtin:unresolved", reason, True)
        for ref in subject.paths:
            if ref.access in ("write", "unknown") and ref.resolved is not None:
                what = protected_reason(subject.project, ref.resolved)
                if what:
                    reason = f"{ref.via} `{ref.raw}` may change {what} ({ref.resolved}), which is protected"
                    layers.append(LayerVerdict(layer="rules", verdict="ask", rule="builtin:protected", reason=reason))
                    sticky = sticky or _Ask("rules", "builtin:protected", reason, True)
                    break
        verdict = judge(subject, rules, trust_unresolved=sandboxed)
        if verdict is None:
            layers.append(LayerVerdict(layer="rules", verdict="continue"))
        else:
            layers.append(LayerVerdict(layer="rules", verdict=verdict.action, rule=verdict.rule.text, reason=verdict.reason))
            if verdict.action == "deny":
                return deny("rules", verdict.rule.text, f"Denied because {verdict.reason}; this will not be allowed, "
                            "so choose another approach or ask the user.", "rule"), None, layers
            if verdict.action == "ask":
                sticky = sticky or _Ask("rules", verdict.rule.text, f"Because {verdict.reason}", False)
            elif sticky is None and not (mode == "plan" and not read_only):
                return Evaluation(kind="allow", input=subject.input, layer="rules", rule=verdict.rule.text,
                                  reason=verdict.reason, by="rule", layers=layers), None, layers

        # Layer 2: read-only tools (MCP readOnlyHint is shown, never trusted).
        if read_only and egress is not None:
            layers.append(LayerVerdict(layer="readonly", verdict="continue", reason=egress))
        elif read_only:
            layers.append(LayerVerdict(layer="readonly", verdict="skipped" if sticky else "allow", reason=reads_only or ""))
            if sticky is None:
                why = f"the command {reads_only}" if reads_only else f"{subject.tool} is read-only"
                return Evaluation(kind="allow", input=subject.input, layer="readonly", reason=why,
                                  by="readonly", layers=layers), None, layers
        else:
            layers.append(LayerVerdict(layer="readonly", verdict="continue"))

        # Layer 3: the permission mode.
        if mode == "plan" and not read_only:
            layers.append(LayerVerdict(layer="mode", verdict="deny", reason="plan mode"))
            return deny("mode", None, f"Denied: the session is in plan mode, where only read-only tools run; "
                        f"describe what {subject.tool} would do instead, and the user can switch modes to let it run.",
                        "mode"), None, layers
        if mode == "bypass" and sticky is None:
            layers.append(LayerVerdict(layer="mode", verdict="allow", reason="bypass mode"))
            return Evaluation(kind="allow", input=subject.input, layer="mode", reason="bypass mode", by="mode",
                              layers=layers), None, layers
        if mode == "acceptEdits" and sticky is None and subject.access.edits:
            refs = [ref for ref in subject.paths if ref.resolved is not None]
            if refs and all(ref.resolved is not None and relative_to_project(subject.project, ref.resolved) is not None
                            for ref in refs):
                layers.append(LayerVerdict(layer="mode", verdict="allow", reason="acceptEdits: an edit inside the project"))
                return Evaluation(kind="allow", input=subject.input, layer="mode", reason="acceptEdits mode allows "
                                  "edits inside the project", by="mode", layers=layers), None, layers
        if auto_allow and sandboxed and sticky is None and mode in ("default", "acceptEdits"):
            reason = "runs in the sandbox, which holds it to the project and the allowed domains (sandbox.autoAllow)"
            layers.append(LayerVerdict(layer="sandbox", verdict="allow", reason=reason))
            return Evaluation(kind="allow", input=subject.input, layer="sandbox", reason=reason, by="sandbox",
                              layers=layers), None, layers
        layers.append(LayerVerdict(layer="mode", verdict="continue", reason=f"{mode} mode"))
        return None, sticky, layers

    # -- layers 1-4 ------------------------------------------------------------------------

    async def evaluate(self, call: ToolCall, ctx: "ToolContext") -> Evaluation:
        """Layers 1-4: allow, deny, or ask (what the front would be asked; nobody is)."""
        try:
            settings = self.settings.current()
        except SettingsError as error:
            return Evaluation(kind="deny", input=call.input, layer="settings", reason=f"Denied: the settings cannot be "
                              f"read ({error}); ask the user to fix the file.", by="settings",
                              layers=[LayerVerdict(layer="settings", verdict="deny", reason=str(error))])
        rules = self.session_rules + list(settings.rules)
        mode = ctx.mode
        subject = build_subject(call.tool, call.input, self.project)
        sandboxed = _runs_sandboxed(subject, ctx)
        auto_allow = settings.merged.sandbox.autoAllow
        read_roots = settings.read_roots(self.project)
        final, sticky, layers = self._layers_1_3(subject, rules, mode, settings.allowed_domains, sandboxed, auto_allow,
                                                 read_roots)
        if final is not None and final.kind == "deny":
            return final

        # Layer 4: PreToolUse hooks, for every call that is not already denied, in every mode: a hook's
        # deny or ask holds even over an allow rule or bypass mode.
        python_hooks = hooks_module.pre_tool_use_hooks() if self._python_hooks is None else self._python_hooks
        shell_hooks = settings.hooks_for("PreToolUse")
        if final is not None and not python_hooks and not shell_hooks:
            return self._sandbox_check(final, subject, ctx)
        payload = {"session_id": ctx.session_id, "cwd": str(self.project), "permission_mode": mode,
                   "tool_name": subject.tool, "tool_input": call.input, "tool_use_id": call.tool_use_id}
        result = await hooks_module.run_pre_tool_use(payload, tool=subject.tool, python_hooks=python_hooks,
                                                     shell_hooks=shell_hooks, cwd=str(self.project),
                                                     env=settings.merged.env, definition=call.definition, ctx=ctx)
        hook_label = f"hook:{result.hook}" if result.hook else None
        layers.append(LayerVerdict(layer="hooks", verdict=result.decision if result.ran else "skipped", rule=hook_label,
                                   reason=result.reason))
        rerun: Evaluation | None = None
        if result.modified_input is not None and result.modified_input != call.input:
            # The modified input is what will run: judge it afresh (the original no longer matters).
            subject = build_subject(call.tool, result.modified_input, self.project)
            rerun, sticky, again = self._layers_1_3(subject, rules, mode, settings.allowed_domains,
                                                    _runs_sandboxed(subject, ctx), auto_allow, read_roots)
            layers.extend(LayerVerdict(layer=f"{v.layer} (modified input)", verdict=v.verdict, rule=v.rule,
                                       reason=v.reason) for v in again)
            if rerun is not None and rerun.kind == "deny":
                rerun.layers = layers
                return rerun
            if rerun is not None and result.decision in ("continue", "allow"):
                rerun.layers = layers
                return self._sandbox_check(rerun, subject, ctx)
        exact = exact_rules(subject)
        if result.decision == "deny":
            return Evaluation(kind="deny", input=subject.input, layer="hooks", rule=hook_label,
                              reason=f"Denied by {hook_label}: {result.reason or 'no reason given'}", by="hook", layers=layers)
        if result.decision == "allow" and sticky is None:
            final = Evaluation(kind="allow", input=subject.input, layer="hooks", rule=hook_label, reason=result.reason,
                               by="hook", layers=layers)
            return self._sandbox_check(final, subject, ctx)
        if result.decision == "ask" and sticky is None:
            sticky = _Ask("hooks", hook_label, result.reason or f"{hook_label} asks", result.reason.endswith("(hooks fail closed)"))
        elif final is not None and rerun is None and result.modified_input in (None, call.input):
            final.layers = layers
            return self._sandbox_check(final, subject, ctx)  # layers 1-3 allowed it and no hook objected
        if sticky is None:
            untrusted = _untrusted_allow(subject, settings)
            if untrusted is not None:
                reason = (f"The allow rule `{untrusted.text}` in {settings.source_path(untrusted.source)} is ignored "
                          "until you trust this project (%agent trust)")
                layers.append(LayerVerdict(layer="trust", verdict="ask", rule=untrusted.text, reason=reason))
                sticky = _Ask("trust", untrusted.text, reason, False)
            elif (egress := _unlisted_egress(subject, settings.allowed_domains)) is not None:
                sticky = _Ask("egress", None, egress, False)
            elif (outside := _outside_read(subject, read_roots)) is not None:
                ignored = _untrusted_directory(subject, settings, read_roots)
                if ignored is not None:
                    reason = (f"{outside}; the project's permissions.additionalDirectories entry `{ignored.detail['value']}` "
                              f"in {ignored.path} is ignored until you trust this project (%agent trust)")
                    layers.append(LayerVerdict(layer="trust", verdict="ask", rule=None, reason=reason))
                    sticky = _Ask("trust", None, reason, False)
                else:
                    sticky = _Ask("outside", None, outside, False)
            else:
                sticky = _Ask("confirm", None, f"No rule allows {subject.tool} here", False)
        asked = Evaluation(kind="ask", input=subject.input, layer=sticky.layer, rule=sticky.rule, reason=sticky.reason,
                           by=sticky.layer, layers=layers, forced=sticky.forced, exact_rules=exact,
                           allow_choices=[] if sticky.forced else allow_candidates(subject),
                           deny_choices=deny_candidates(subject))
        return self._sandbox_check(asked, subject, ctx)

    def _sandbox_check(self, evaluation: Evaluation, subject: Subject, ctx: "ToolContext") -> Evaluation:
        """A command that would run unsandboxed although a sandbox is wanted is asked, not allowed
        (or refused outright when the settings say failIfUnavailable)."""
        if evaluation.kind == "deny" or subject.access.command is None:
            return evaluation
        sandbox = _sandbox_of(ctx)
        if sandbox is None or not sandbox.enabled or sandbox.active:
            return evaluation
        why = sandbox.unavailable_reason or "it could not start"
        if sandbox.fail_if_unavailable:
            reason = (f"Denied: the command sandbox is unavailable ({why}) and the settings say failIfUnavailable, "
                      "so no command runs; tell the user what you wanted to run.")
            evaluation.layers.append(LayerVerdict(layer="sandbox", verdict="deny", reason=reason))
            return Evaluation(kind="deny", input=evaluation.input, layer="sandbox", rule=evaluation.rule,
                              reason=reason, by="sandbox", layers=evaluation.layers)
        if evaluation.kind != "allow":
            return evaluation
        reason = f"The sandbox is enabled but unavailable ({why}), so this command would run unconfined"
        evaluation.layers.append(LayerVerdict(layer="sandbox", verdict="ask", reason=reason))
        return Evaluation(kind="ask", input=evaluation.input, layer="sandbox", rule=evaluation.rule,
                          reason=reason, by="sandbox", layers=evaluation.layers,
                          forced=True, exact_rules=exact_rules(subject), deny_choices=deny_candidates(subject))

    # -- layers 5 and 6 ------------------------------------------------------------------------

    async def decide(self, call: ToolCall, ctx: "ToolContext", ask: Asker | None) -> Decision:
        """Decide one call (asking a person if needed) and audit it before returning."""
        evaluation = await self.evaluate(call, ctx)
        if evaluation.kind == "ask":
            decision = await self._confirm(call, ctx, evaluation, ask)
        else:
            decision = Decision(kind=evaluation.kind, input=evaluation.input, layer=evaluation.layer,
                                rule=evaluation.rule, reason=evaluation.reason, by=evaluation.by)
        self._audit_decision(call, ctx, decision, evaluation)
        return decision

    async def _preview(self, call: ToolCall, ctx: "ToolContext", evaluation: Evaluation) -> str:
        tool = call.definition
        preview = tool.preview
        if preview is not None:
            try:
                return await preview(tool.validate(evaluation.input), ctx)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a broken preview must not hide the call
                note = f"(preview failed: {type(error).__name__}: {error})\n"
        else:
            note = ""
        command = tool.access.command
        if command is not None and isinstance(evaluation.input.get(command), str):
            where = evaluation.input.get(tool.access.cwd or "") or "."
            return f"{note}$ {evaluation.input[command]}\n(in {where})"
        return note + json.dumps(evaluation.input, indent=2, ensure_ascii=False, default=str)

    async def _confirm(self, call: ToolCall, ctx: "ToolContext", evaluation: Evaluation, ask: Asker | None) -> Decision:
        tool_name = call.definition.display_name or call.definition.name
        def decided(kind: Literal["allow", "deny"], by: str, reason: str) -> Decision:
            return Decision(kind=kind, layer="confirm", by=by, reason=reason, input=evaluation.input,
                            rule=evaluation.rule)

        def answered(answer: "Answer | Literal['timeout', 'interrupted']", by: str) -> ApprovalAnswered:
            return ApprovalAnswered(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                                    tool_use_id=call.tool_use_id, answer=answer, by=by)

        if ask is None:
            return decided("deny", "nobody", f"Denied: {tool_name} needs a person's approval ({evaluation.reason}) and nobody can "
                            "be asked in this session; do without it, or tell the user what to run or which allow rule "
                            "to add to .codingcode/settings.json.")
        sandbox = _sandbox_of(ctx)
        sandboxed = bool(sandbox and sandbox.active) if call.definition.access.command is not None else None
        preview = escape_unicode(await self._preview(call, ctx, evaluation))
        key = call.definition.access.key_value(evaluation.input)
        request = ApprovalRequest(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                                  tool_use_id=call.tool_use_id, tool=escape_unicode(tool_name),
                                  input=escape_value(evaluation.input), preview=preview, layer=evaluation.layer,
                                  rule=evaluation.rule, reason=escape_unicode(evaluation.reason), sandboxed=sandboxed,
                                  annotations=call.definition.annotations, key=escape_value(key),
                                  allow_choices=evaluation.allow_choices, deny_choices=evaluation.deny_choices,
                                  forced=evaluation.forced)
        ctx.emit(ApprovalRequested(**request.model_dump()))
        try:
            if ctx.approval_timeout is not None:
                reply = await asyncio.wait_for(ask(request), ctx.approval_timeout)
            else:
                reply = await ask(request)
        except asyncio.TimeoutError:
            ctx.emit(answered("timeout", "timeout"))
            # The front may time the wait itself (no frontend, no stdin), with no approval_timeout set.
            within = f" within {ctx.approval_timeout:g} s" if ctx.approval_timeout is not None else ""
            return decided("deny", "timeout", f"Denied: nobody answered{within}; do not retry it now — "
                            "continue without it or tell the user what you wanted to run.")
        except asyncio.CancelledError:
            ctx.emit(answered("interrupted", "user"))
            decision = decided("deny", "interrupted", "The turn was interrupted.")
            self._audit_decision(call, ctx, decision, evaluation)
            self.record_outcome(call, ctx, decision, "interrupted", 0.0)
            raise
        except Exception as error:  # the front failed to ask: nobody approved
            return decided("deny", "error", f"Denied: the approval prompt failed ({type(error).__name__}: {error}).")
        answer, picked = (reply.answer, reply.rules) if isinstance(reply, Reply) else (reply, None)
        if answer not in ("allow", "deny", "always", "never"):
            return decided("deny", "error", f"Denied: the approval prompt answered {answer!r}, which is not a known answer.")
        offered = evaluation.allow_choices if answer == "always" else evaluation.deny_choices
        if picked is not None and picked not in offered:
            return decided("deny", "error", f"Denied: the approval prompt picked rules {picked!r}, which were not offered.")
        to_save = picked or (offered[0] if offered else evaluation.exact_rules)
        ctx.emit(answered(answer, "user"))
        note = ""
        if answer in ("always", "never") and to_save:
            action: Literal["allow", "deny"] = "allow" if answer == "always" else "deny"
            if action == "allow" and evaluation.forced:
                note = f" (allowed once: {evaluation.rule} cannot be overridden by a saved rule)"
            else:
                try:
                    persist_rules(self.project, action, to_save)
                    if action == "allow":
                        # The person wrote these rules by clicking: they need no further trust.
                        self.settings.trust_rules("local", to_save)
                    note = f" (saved {', '.join(to_save)} to .codingcode/settings.local.json)"
                except (OSError, SettingsError) as error:
                    note = f" (could not save the rule: {error})"
        if answer in ("allow", "always"):
            return decided("allow", "user", f"The user allowed it{note}.")
        return decided("deny", "user", f"Denied: the user declined this {tool_name} call{note}; do not retry it — ask the user "
                        "what they want instead.")

    def _write(self, record: dict[str, Any], ctx: "ToolContext") -> None:
        if self.audit is not None:
            record = self.audit.append(record)
        ctx.emit(AuditRecorded(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent, record=record))
        try:
            merged = self.settings.current().merged
            observers, env = merged.hooks.ApprovalPost, merged.env
        except SettingsError:
            observers, env = [], {}
        hooks_module.notify_observers(record, observers, str(self.project), env)

    def _audit_decision(self, call: ToolCall, ctx: "ToolContext", decision: Decision, evaluation: Evaluation) -> None:
        layers = [v.model_dump() for v in evaluation.layers]
        if decision.layer == "confirm":
            layers.append({"layer": "confirm", "verdict": decision.kind, "rule": None, "reason": decision.reason,
                           "by": decision.by})
        self._write({
            "event": "decision", "session_id": ctx.session_id, "turn_id": ctx.turn_id, "tool_use_id": call.tool_use_id,
            "agent": ctx.agent,
            "tool": call.definition.display_name or call.definition.name,
            "input": clip_input(decision.input or call.input), "original_input": clip_input(call.input)
            if decision.input and decision.input != call.input else None,
            "decision": decision.kind, "layer": decision.layer, "rule": decision.rule, "reason": decision.reason,
            "by": decision.by, "mode": ctx.mode, "layers": layers,
        }, ctx)

    def record_outcome(self, call: ToolCall, ctx: "ToolContext", decision: Decision, outcome: Outcome,
                       duration_ms: float) -> None:
        """Append the outcome of a call that was decided (ok / error / denied / interrupted)."""
        self._write({
            "event": "outcome", "session_id": ctx.session_id, "turn_id": ctx.turn_id, "tool_use_id": call.tool_use_id,
            "agent": ctx.agent,
            "tool": call.definition.display_name or call.definition.name,
            "decision": decision.kind, "outcome": outcome, "duration_ms": round(float(duration_ms), 3),
        }, ctx)


def _sandbox_of(ctx: "ToolContext") -> "CommandSandbox | None":
    return ctx.deps.sandbox() if ctx.deps is not None else None


def _untrusted_allow(subject: Subject, settings: EffectiveSettings) -> Rule | None:
    """An allow rule of the project's that would allow this call but is ignored until trusted."""
    ignored = []
    for item in settings.ignored:
        if item.kind == "allow":
            try:
                ignored.append(parse_rule(item.detail["rule"], "allow", item.source))
            except RuleError:
                continue
    verdict = judge(subject, ignored) if ignored else None
    return verdict.rule if verdict is not None and verdict.action == "allow" else None


def _unlisted_egress(subject: Subject, domains: tuple[str, ...]) -> str | None:
    """Why a call that sends a request is asked: its host is not on the allowed domains (None: it is)."""
    if subject.access.url is None:
        return None
    host = url_host(subject.main or "")
    if host is not None and domain_allowed(host, domains):
        return None
    return (f"{subject.tool} would send a request to {host or 'an unknown host'}, which is not an allowed domain "
            "(what the URL carries leaves the machine)")


def _credential_read(subject: Subject) -> str | None:
    """Why a read is asked: it reaches a credential store of the home (what it reads goes to the model)."""
    for ref in subject.paths:
        store = credential_store(ref.resolved) if ref.resolved is not None else None
        if store is not None:
            return (f"{ref.via} `{ref.raw}` reads {store}, a credential store, which the sandbox hides from commands; "
                    "what is read is sent to the model")
    return None


def _outside_read(subject: Subject, roots: tuple[Path, ...]) -> str | None:
    """Why a read-only tool's read is asked: it reaches outside the project and every directory
    the person added (``additionalDirectories``), and what it reads is sent to the model.

    Commands are left to the read-only command table, which already requires their paths inside.
    """
    if subject.command is not None:
        return None
    for ref in subject.paths:
        path = ref.resolved
        if path is None or relative_to_project(subject.project, path) is not None:
            continue
        if any(path.is_relative_to(root) for root in roots):
            continue
        return (f"{ref.via} `{ref.raw}` reads outside the project ({path}); what is read is sent to the model "
                "(permissions.additionalDirectories lists directories read without asking)")
    return None


def _untrusted_directory(subject: Subject, settings: EffectiveSettings, roots: tuple[Path, ...]) -> TrustItem | None:
    """The project's ``additionalDirectories`` entry, ignored until trusted, that would let this read run unasked."""
    for item in settings.ignored:
        if item.kind != "directory":
            continue
        if _outside_read(subject, (*roots, directory_root(item.detail["value"], subject.project))) is None:
            return item
    return None


def _unresolved(subject: Subject) -> list[str]:
    """What about the call cannot be known before it runs: run-time values, arbitrary code, hidden characters."""
    problems: list[str] = []
    for command in [subject.command, *(inner.command for inner in subject.inner)]:
        if command is not None:
            problems.extend(command.unresolved)
            if has_invisible(command.source):
                problems.append("the command holds invisible Unicode characters")
    if subject.code is not None:
        problems.extend(subject.code.unresolved)
    return list(dict.fromkeys(problems))


def _runs_sandboxed(subject: Subject, ctx: "ToolContext") -> bool:
    """The call is a command that will run inside an active sandbox (code tools never do)."""
    if subject.access.command is None:
        return False
    sandbox = _sandbox_of(ctx)
    return bool(sandbox is not None and sandbox.enabled and sandbox.active)
