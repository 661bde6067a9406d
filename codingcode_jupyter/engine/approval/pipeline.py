"""The approval pipeline: every tool call passes the layers of :mod:`.layers` before it runs.

The layers are objects in a list, evaluated in one loop: each says what it says about the call
(a :class:`~.types.Verdict`), and the call's verdict is the strictest (deny > forced ask > ask >
allow), the earlier layer's between equal ones; a deny ends the loop. An ask is then answered by
the answering layers in order (a reviewer may; the person on the card does), and every decision
is written to the audit log before the tool runs. A hook's modified input is judged afresh by
the layers before the hooks.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal

from .. import budget as budget_module, telemetry
from ..budget import Budget, OverBudget
from ..events import AuditRecorded
from ..hooks import pre_tool_use as hooks_module
from ..project_settings import EffectiveSettings, ProjectSettings
from ..settings import SettingsError
from ..tools.base import ToolCall
from .amend import persist_rules
from .audit import AuditLog, clip_input
from .audit_records import DecisionRecord, OutcomeRecord
from .builtin_rules import BUILTIN_RULES
from .candidates import allow_candidates, deny_candidates
from .confirm import Confirm
from .judging import Judging
from .layers import POLICY_RULES_ONLY, Egress, Hooks, Layer, Mode, Outside, ReadOnly, Rules, SandboxGuard, Trust
from .outbound import Secrets
from .reviewer import Reviewer
from .rule_syntax import Rule, RuleError, parse_rule
from .rules import exact_rules
from .subject import Subject, build_subject
from .types import Asker, Decision, Outcome, Verdict, strictest

if TYPE_CHECKING:
    from ..tools.base import ToolContext

__all__ = ["ApprovalPipeline", "default_layers", "effective_rules", "persist_rules"]


def default_layers(project: Path, settings: ProjectSettings) -> list[Layer]:
    """The layers in order, fresh objects (a pipeline may insert its own, e.g. a reviewer before ``confirm``)."""
    return [Secrets(), Rules(), ReadOnly(), Mode(), Hooks(), Trust(), Egress(), Outside(), Reviewer(), Confirm(project, settings),
            SandboxGuard()]


def _without_secrets(ctx: "ToolContext", values: list[Any]) -> list[Any]:
    """``values`` with every known secret's value replaced by a marker: the audit log keeps none (a
    check that fails keeps them all back)."""
    try:
        kept: list[Any] = ctx.deps.secrets.redact_value(values)[0]
    except Exception:  # noqa: BLE001 -- fail closed
        return [{}, {}, "(withheld: it could not be checked for secret values)", []]
    return kept


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
        layers: list[Layer] | None = None,
        judge_seconds: float | None = None,
    ) -> None:
        self.project = Path(os.path.realpath(project))
        self.settings = settings or ProjectSettings(self.project)
        self.session_rules: list[Rule] = [_session_rule(rule) for rule in session_rules]
        self._python_hooks = python_hooks
        self.audit = AuditLog(self.project) if audit else None
        # The layers in order; a new decision source is one more object here (see :mod:`.layers`).
        self.layers: list[Layer] = layers if layers is not None else default_layers(self.project, self.settings)
        # The time judging one call may take (:mod:`.budget`); past it the call is asked.
        # None: the budget's default as it is when the pipeline is made.
        self.judge_seconds = budget_module.DEFAULT_SECONDS if judge_seconds is None else judge_seconds
        self.settings.current()  # a broken settings file is an error now, not at the first call

    def add_session_rule(self, text: str, action: Literal["allow", "deny", "ask"] = "allow") -> Rule:
        """A rule for this session only (not persisted)."""
        rule = parse_rule(text, action, "session")
        self.session_rules.append(rule)
        return rule

    # -- judging ---------------------------------------------------------------------------------

    async def evaluate(self, call: ToolCall, ctx: "ToolContext") -> Verdict:
        """What the layers say: allow, deny, or ask (what a person would be asked; nobody is).

        Total: whatever the input, a verdict comes back. A layer that fails, or judging that passes
        its time budget (:mod:`.budget`), becomes a forced ask naming why, never an exception."""
        try:
            settings = self.settings.current()
        except SettingsError as error:
            return Verdict(kind=Decision.DENY, input=call.input, layer="settings", by="settings",
                           reason=f"Denied: the settings cannot be read ({error}); ask the user to fix the file.",
                           layers=[Verdict(kind=Decision.DENY, layer="settings", reason=str(error))])
        budget = Budget(self.judge_seconds)
        try:
            with budget.running():
                subject = build_subject(call.tool, call.input, self.project)
                sandboxed = _runs_sandboxed(call, subject, ctx)
        except Exception as error:  # noqa: BLE001 -- any failure to judge is a question, never a dead turn
            failed = _unjudged("subject", error)
            failed.layer = "rules"
            return failed.model_copy(update={"input": call.input, "layers": [failed], "by": failed.by})
        # Under allowManagedPermissionRulesOnly the session's and a turn's rules do not apply either.
        session_rules = [] if settings.policy.rules_only else self.session_rules
        judging = Judging(call=call, ctx=ctx, subject=subject, settings=settings, mode=ctx.mode,
                          rules=session_rules + list(settings.rules), sandboxed=sandboxed,
                          python_hooks=hooks_module.pre_tool_use_hooks() if self._python_hooks is None
                          else self._python_hooks,
                          read_roots=settings.read_roots(self.project), rejudge=_no_rejudge)
        hooks_at = next((i for i, layer in enumerate(self.layers) if layer.name == "hooks"), 0)

        async def rejudge(new_input: dict[str, Any]) -> None:
            with budget.running():
                fresh = build_subject(call.tool, new_input, self.project)
                judging.reset(fresh, _runs_sandboxed(call, fresh, ctx, new_input))
            await self._run(judging, self.layers[:hooks_at], budget, " (modified input)")

        judging.rejudge = rejudge
        await self._run(judging, self.layers, budget)
        verdict = judging.verdict
        if verdict is None:  # the confirm layer asks what nothing else decided; a list without it must not allow
            verdict = _unjudged("confirm", RuntimeError("no layer decided"))
        final = verdict.model_copy(update={"input": judging.subject.input, "layers": judging.trail,
                                           "by": verdict.by or verdict.layer})
        if final.kind is Decision.ASK:
            try:
                with budget.running():
                    final.exact_rules = exact_rules(judging.subject)
                    # A rule saved from the card would not apply where the policy admits only its own.
                    saves = not settings.policy.rules_only
                    final.allow_choices = allow_candidates(judging.subject) if saves and not final.forced else []
                    final.deny_choices = deny_candidates(judging.subject) if saves else []
                    if not saves:
                        final.exact_rules, final.policy = [], final.policy or POLICY_RULES_ONLY
            except Exception:  # noqa: BLE001 -- the card then offers no rule to save, only Allow and Deny
                final.exact_rules, final.allow_choices, final.deny_choices = [], [], []
        return final

    @staticmethod
    async def _run(judging: Judging, layers: list[Layer], budget: Budget, suffix: str = "") -> None:
        """The one loop: every layer in order, the strictest verdict kept; a deny ends it. A layer
        that fails says a forced ask naming the failure, and the others still judge (one may deny)."""
        over = False
        for layer in layers:
            if over and not layer.waits:
                continue  # past the budget only the layers that wait on others (hooks, which may deny) still run
            try:
                if layer.waits:
                    said = await layer.judge(judging)  # its own waits (hooks) are not the judge's time
                else:
                    with budget.running():
                        said = await layer.judge(judging)
                    budget.check()  # a stretch with no check inside still counts
            except Exception as error:  # noqa: BLE001 -- see evaluate
                said = [_unjudged(layer.name, error)]
                over = isinstance(error, OverBudget)
            for verdict in said:
                verdict.layer = layer.name + suffix
                judging.trail.append(verdict)
                judging.verdict = strictest(judging.verdict, verdict)
                if judging.verdict is not None and judging.verdict.kind is Decision.DENY:
                    return
            if judging.verdict is not None and judging.verdict.kind is Decision.DENY:
                return

    # -- answering -------------------------------------------------------------------------------

    async def decide(self, call: ToolCall, ctx: "ToolContext", ask: Asker | None) -> Verdict:
        """Decide one call (asking a person if needed) and audit it before returning."""
        verdict = await self.evaluate(call, ctx)
        decision = verdict
        if verdict.kind is Decision.ASK:
            try:
                decision = await self._answer(call, ctx, verdict, ask)
            except asyncio.CancelledError:
                interrupted = Verdict(kind=Decision.DENY, layer="confirm", by="interrupted", rule=verdict.rule,
                                      reason="The turn was interrupted.", input=verdict.input)
                self._audit_decision(call, ctx, interrupted, verdict)
                self.record_outcome(call, ctx, interrupted, "interrupted", 0.0)
                raise
        self._audit_decision(call, ctx, decision, verdict)
        return decision

    async def _answer(self, call: ToolCall, ctx: "ToolContext", asked: Verdict, ask: Asker | None) -> Verdict:
        """The answering layers in order, first the layer that asked if it answers its own asks first (the
        sandbox's once-per-session card);
        a forced ask goes only to those that may answer it (the person)."""
        own = [layer for layer in self.layers if layer.name == asked.layer and layer.answers_own_first]
        for layer in own + [layer for layer in self.layers if layer not in own]:
            if not layer.answers or (asked.forced and not layer.answers_forced):
                continue
            answer = await layer.answer(call, ctx, asked, ask)
            if answer is not None:
                return answer
        raise RuntimeError("no layer answered the ask (the confirm layer must be in the list)")

    # -- the audit log ---------------------------------------------------------------------------

    def _write(self, typed: DecisionRecord | OutcomeRecord, ctx: "ToolContext") -> None:
        # Where auditing is off (permissions check) the front and the observers get the record all the same.
        record = self.audit.append(typed) if self.audit is not None else typed.written(None)
        ctx.emit(AuditRecorded(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent, record=record))
        try:
            merged = self.settings.current().merged
            observers, env = merged.hooks.ApprovalPost, merged.env
        except SettingsError:
            observers, env = [], {}
        hooks_module.notify_observers(record, observers, str(self.project), env)

    def _audit_decision(self, call: ToolCall, ctx: "ToolContext", decision: Verdict, evaluation: Verdict) -> None:
        layers = [verdict.trail_entry() for verdict in evaluation.layers]
        if decision is not evaluation:  # answered: who answered, and what
            layers.append({**decision.trail_entry(), "rule": None, "by": decision.by})
        kept = _without_secrets(ctx, [decision.input or call.input, call.input, decision.reason, layers])
        record = DecisionRecord(
            session_id=ctx.session_id, turn_id=ctx.turn_id, tool_use_id=call.tool_use_id, agent=ctx.agent,
            tool=call.definition.display_name or call.definition.name,
            input=clip_input(kept[0]), original_input=clip_input(kept[1])
            if decision.input and decision.input != call.input else None,
            decision=str(decision.kind), layer=decision.layer, rule=decision.rule, reason=kept[2],
            by=decision.by, mode=ctx.mode, layers=kept[3],
        )
        if decision.detail:
            record.reviewer = decision.detail  # written only when the reviewer spoke
        self._write(record, ctx)
        # The path an edit names, for the edit metric's language (nothing of it leaves without OTEL_LOG_TOOL_DETAILS).
        path = (decision.input or call.input).get("path") if call.definition.access.edits else None
        telemetry.tool_decision(ctx.session_id, record.tool, record.decision, record.layer or "", record.by or "",
                                record.reason or "", path if isinstance(path, str) else None)

    def record_outcome(self, call: ToolCall, ctx: "ToolContext", decision: Verdict, outcome: Outcome,
                       duration_ms: float) -> None:
        """Append the outcome of a call that was decided (ok / error / denied / interrupted)."""
        self._write(OutcomeRecord(
            session_id=ctx.session_id, turn_id=ctx.turn_id, tool_use_id=call.tool_use_id, agent=ctx.agent,
            tool=call.definition.display_name or call.definition.name,
            decision=str(decision.kind), outcome=outcome, duration_ms=round(float(duration_ms), 3),
        ), ctx)
        telemetry.tool_result(ctx.session_id, call.definition.display_name or call.definition.name, outcome,
                              str(decision.kind), float(duration_ms), decision.input or call.input)



_UNJUDGED = "builtin:unjudged"


def _unjudged(where: str, error: Exception) -> Verdict:
    """The question a failure to judge becomes: forced (no mode, rule or reviewer answers it), naming why."""
    if isinstance(error, OverBudget):
        why = f"it could not be judged ({error})"
    else:
        why = f"judging it failed in the {where} step ({type(error).__name__}: {str(error)[:200]})"
    return Verdict(kind=Decision.ASK, forced=True, rule=_UNJUDGED, by="rules",
                   reason=f"Asked because {why}; nothing about it is proven.")


async def _no_rejudge(new_input: dict[str, Any]) -> None:
    raise RuntimeError("rejudge is set by the pipeline")


def _runs_sandboxed(call: ToolCall, subject: Subject, ctx: "ToolContext", tool_input: dict[str, Any] | None = None) -> bool:
    """The call will run inside an active sandbox: a command the sandbox runs, or code its tool
    runs confined (the kernel's run_python in a confined fork)."""
    if subject.access.command is None:
        confined = call.definition.runs_confined
        return bool(confined is not None and confined(call.input if tool_input is None else tool_input, ctx))
    sandbox = ctx.deps.sandbox()
    return bool(sandbox is not None and sandbox.enabled and sandbox.active)
