"""The approval layers: named objects, each judging a call into a :class:`~.types.Verdict`.

The pipeline (:mod:`.pipeline`) runs its layers (:func:`~.pipeline.default_layers`) in this order, in one loop: each layer
returns what it says (nothing, a note, or verdicts), and the call's verdict is the strictest
of them all (deny > forced ask > ask > allow); between equally strict verdicts the earlier
layer's stands, so the order below is also the tier table. A deny ends the loop. An
``answers`` layer may then answer an ask instead of a person (a reviewer) or by asking one
(``confirm``); a forced ask only ever reaches the person. A layer with ``answers_own_first``
answers its own asks before the others (the sandbox's once-per-session card, which may leave the
call to ``confirm``).

| tier | layer | can say | what |
| ---- | ----- | ------- | ---- |
| 1 | secrets | deny | a call that sends its input off the machine carrying a known secret's value, in any form (:mod:`.outbound`) |
| 2 | rules | deny, forced ask, ask, allow | built-in rules (no setting outranks them), what cannot be judged before it runs, protected paths, then the session's and the settings' rules by their priority |
| 3 | readonly | allow | read-only tools and commands, when they send nothing out |
| 4 | mode | deny, allow | the permission mode's rules (:mod:`.mode_rules`) |
| 5 | hooks | deny, ask, allow | PreToolUse hooks; a modified input is judged afresh by tiers 1-4 |
| 6 | trust | ask | (only when nothing decided) an allow rule or directory of the project's, ignored until trusted, would allow it |
| 7 | egress | ask | (only when nothing decided) a request to a domain nobody allowed |
| 8 | outside | ask | (only when nothing decided) a read outside the project and the added directories |
| 9 | reviewer | answers | auto mode: a model answers the asks of confirm, egress and outside (:mod:`.reviewer`) |
| 10 | confirm | ask; answers | (only when nothing decided) no rule allows it; a person answers every ask left |
| 11 | sandbox | deny, forced ask; answers its own | an allowed command would run unconfined because the sandbox is unavailable (read-only commands never); the session's one card answers it first (:mod:`.unconfined`) |

A new decision source is one more layer object in this list: a reviewer that answers what
would otherwise be a card goes before ``confirm`` with ``answers = True``; it is never given a
deny or a forced ask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from ..hooks import pre_tool_use as hooks_module
from ..managed_paths import MANAGED_SOURCES
from ..settings import SettingsError
from ..tools.base import ToolCall
from .builtin_rules import check_builtin
from .display import escape_unicode, has_invisible
from .judging import (
    Judging,
    _allowed_outright,
    outside_read,
    unlisted_egress,
    unresolved,
    untrusted_allow,
    untrusted_directory,
)
from .mode_rules import mode_verdict_row
from .paths import protected_reason
from .rules import judge
from .types import Asker, Decision, Verdict
from .unconfined import beyond_confinement, fail_closed_by, save_never

if TYPE_CHECKING:
    from ..tools.base import ToolContext

__all__ = ["Layer", "layer_names", "Rules", "ReadOnly", "Mode", "Hooks", "Trust",
           "Egress", "Outside", "SandboxGuard"]

ALLOW, ASK, DENY = Decision.ALLOW, Decision.ASK, Decision.DENY
POLICY_ASKS = "Your organisation's managed settings ask about this call every time: it can be allowed once, never always."
POLICY_RULES_ONLY = ("Your organisation's managed settings apply only their own rules: an answer here is for this "
                     "call only, no rule is saved.")


def note(reason: str = "", rule: str | None = None) -> Verdict:
    """A layer looked and decided nothing (kept in the trail for the audit log)."""
    return Verdict(kind=None, reason=reason, rule=rule)


class Layer:
    """One layer: its name (as the audit log and the docs say it) and its judgement."""

    name: ClassVar[str]
    # One line for the docs' list of layers.
    summary: ClassVar[str]
    # It may answer an ask (``answer``): a reviewer, or the person behind ``confirm``.
    answers: ClassVar[bool] = False
    # It may answer a forced ask too (only the person).
    answers_forced: ClassVar[bool] = False
    # It answers its own asks before the answering layers in order (the sandbox's once-per-session card).
    answers_own_first: ClassVar[bool] = False
    # Its judgement waits on something outside the judge (a hook's program): that time is not
    # counted against the call's judging budget (:mod:`.budget`).
    waits: ClassVar[bool] = False

    async def judge(self, j: Judging) -> list[Verdict]:
        raise NotImplementedError

    async def answer(self, call: ToolCall, ctx: "ToolContext", asked: Verdict, ask: Asker | None) -> Verdict | None:
        """Answer ``asked`` (allow or deny), or None to leave it to the next answering layer."""
        return None


class WhenUndecided(Layer):
    """A layer that speaks only when nothing decided yet, and then only to ask: trust, egress,
    outside and confirm. ``question`` says why it asks, or None when it has nothing to ask."""

    async def judge(self, j: Judging) -> list[Verdict]:
        if not j.undecided:
            return []
        asked = self.question(j)
        return [asked] if asked is not None else []

    def question(self, j: Judging) -> Verdict | None:
        raise NotImplementedError


class Rules(Layer):
    name = "rules"
    summary = ("built-in rules first (no setting outranks them, bypass mode included), what cannot be judged "
               "before it runs, protected paths; then the session's and the settings' rules by priority")

    async def judge(self, j: Judging) -> list[Verdict]:
        subject = j.subject
        said: list[Verdict] = []
        hits = check_builtin(subject) + [hit for inner in subject.inner for hit in check_builtin(inner)]
        hits.sort(key=lambda hit: hit.action != "deny")
        for hit in hits:
            if hit.action == "deny" and subject.access.proposes:
                # Proposed code runs only when the person runs it: they decide, on a card.
                said.append(Verdict(kind=ASK, rule=hit.rule, forced=True, by="rules",
                                    reason=f"The proposed code would be denied by built-in rule {hit.rule}: "
                                           f"{hit.reason}"))
                continue
            if hit.action == "deny":
                return said + [Verdict(kind=DENY, rule=hit.rule, by="rule",
                                       reason=f"Denied by built-in rule {hit.rule}: {hit.reason}")]
            said.append(Verdict(kind=ASK, rule=hit.rule, forced=True, by="rules",
                                reason=f"Built-in rule {hit.rule}: {hit.reason}"))
        problems = unresolved(subject)
        outright = _allowed_outright(j.rules, subject) if problems and subject.access.code is not None else None
        if problems and j.sandboxed:
            # Inside the sandbox the built-in rules hold by construction: modes and rules apply as configured.
            said.append(note("Not judged before it runs (" + "; ".join(problems) + "); the sandbox enforces the "
                             "built-in rules", rule="builtin:unresolved"))
        elif outright is not None:
            # The person's own settings allow the tool outright: they chose to run what it cannot prove.
            said.append(note("Not judged before it runs (" + "; ".join(problems) + "); allowed outright by the "
                             f"person's rule `{outright.text}`", rule="builtin:unresolved"))
        elif problems:
            where = "it runs in the kernel, unsandboxed" if subject.access.code is not None else "no sandbox will run it"
            said.append(Verdict(kind=ASK, rule="builtin:unresolved", forced=True, by="rules",
                                reason=f"Cannot be judged before it runs and {where}: " + "; ".join(problems)))
        hidden = next((ref for ref in subject.paths if has_invisible(ref.raw)), None)
        if hidden is not None and subject.command is None:
            said.append(Verdict(kind=ASK, rule="builtin:unresolved", forced=True, by="rules",
                                reason=f"{hidden.via} `{escape_unicode(hidden.raw)}` holds invisible Unicode characters"))
        for ref in subject.paths:
            if ref.access in ("write", "unknown") and ref.resolved is not None:
                what = protected_reason(subject.project, ref.resolved)
                if what:
                    said.append(Verdict(kind=ASK, rule="builtin:protected", forced=True, by="rules",
                                        reason=f"{ref.via} `{ref.raw}` may change {what} ({ref.resolved}), "
                                               "which is protected"))
                    break
        verdict = judge(subject, j.rules, trust_unresolved=j.sandboxed)
        if verdict is None:
            said.append(note())
        elif verdict.action == "deny":
            said.append(Verdict(kind=DENY, rule=verdict.rule.text, by="rule",
                                reason=f"Denied because {verdict.reason}; this will not be allowed, so choose "
                                       "another approach or ask the user."))
        elif verdict.action == "ask":
            # The organisation's ask is the person's to answer, once: no reviewer, no mode, no saved rule.
            managed = verdict.rule.source in MANAGED_SOURCES
            said.append(Verdict(kind=ASK, rule=verdict.rule.text, by="rules", forced=managed,
                                reason=f"Because {verdict.reason}",
                                policy=POLICY_ASKS if managed else ""))
        else:
            said.append(Verdict(kind=ALLOW, rule=verdict.rule.text, by="rule", reason=verdict.reason))
        return said


class ReadOnly(Layer):
    name = "readonly"
    summary = ("read-only tools and commands run unasked, unless what they read or send leaves the machine "
               "(an unlisted domain, a credential store, a read outside the project); MCP's readOnlyHint is "
               "shown, never trusted")

    async def judge(self, j: Judging) -> list[Verdict]:
        facts = j.facts
        if not facts.read_only:
            return [note()]
        if facts.egress is not None:
            return [note(facts.egress)]
        why = f"the command {facts.reads_only}" if facts.reads_only else f"{j.subject.tool} is read-only"
        return [Verdict(kind=ALLOW, reason=why, by="readonly")]


class Mode(Layer):
    name = "mode"
    summary = "the permission mode, as rules (plan denies what is not read-only; bypass, acceptEdits allow)"

    async def judge(self, j: Judging) -> list[Verdict]:
        row = mode_verdict_row(j)
        if row is None:
            return [note(f"{j.mode} mode")]
        return [Verdict(kind=row.decision, reason=row.reason(j), by=row.by, rule=None)]


class Hooks(Layer):
    name = "hooks"
    waits = True
    summary = ("PreToolUse hooks, for every call not already denied, in every mode (a hook's deny or ask "
               "holds over an allow rule and bypass); a modified input is judged afresh by the layers above")

    async def judge(self, j: Judging) -> list[Verdict]:
        python_hooks = j.python_hooks
        shell_hooks = j.settings.hooks_for("PreToolUse")
        if not python_hooks and not shell_hooks:
            return []
        call, ctx = j.call, j.ctx
        project = str(j.subject.project)
        payload = {"session_id": ctx.session_id, "cwd": project, "permission_mode": j.mode,
                   "tool_name": j.subject.tool, "tool_input": call.input, "tool_use_id": call.tool_use_id}
        result = await hooks_module.run_pre_tool_use(payload, tool=j.subject.tool, python_hooks=python_hooks,
                                                     shell_hooks=shell_hooks, cwd=project, env=j.settings.merged.env,
                                                     definition=call.definition, ctx=ctx)
        label = f"hook:{result.hook}" if result.hook else None
        if result.modified_input is not None and result.modified_input != call.input:
            # The modified input is what will run: judge it afresh (the original no longer matters).
            await j.rejudge(result.modified_input)
        if not result.ran:
            return [note("skipped")]
        if result.decision == "deny":
            return [Verdict(kind=DENY, rule=label, by="hook",
                            reason=f"Denied by {label}: {result.reason or 'no reason given'}")]
        if result.decision == "allow":
            return [Verdict(kind=ALLOW, rule=label, by="hook", reason=result.reason)]
        if result.decision == "ask":
            return [Verdict(kind=ASK, rule=label, by="hooks", reason=result.reason or f"{label} asks",
                            forced=result.reason.endswith("(hooks fail closed)"))]
        return [note(result.reason, rule=label)]


class Trust(WhenUndecided):
    name = "trust"
    summary = ("when nothing decided: an allow rule or an additionalDirectories entry of the project's, ignored "
               "until the project is trusted, would have allowed it")

    def question(self, j: Judging) -> Verdict | None:
        subject, settings = j.subject, j.settings
        untrusted = untrusted_allow(subject, settings)
        if untrusted is not None:
            return Verdict(kind=ASK, rule=untrusted.text, by="trust",
                           reason=f"The allow rule `{untrusted.text}` in {settings.source_path(untrusted.source)} "
                                  "is ignored until you trust this project (%agent trust)")
        if unlisted_egress(subject, settings.allowed_domains) is not None:
            return None  # the egress layer says why
        outside = outside_read(subject, j.read_roots)
        ignored = untrusted_directory(subject, settings, j.read_roots) if outside is not None else None
        if outside is not None and ignored is not None:
            return Verdict(kind=ASK, by="trust",
                           reason=f"{outside}; the project's permissions.additionalDirectories entry "
                                  f"`{ignored.detail['value']}` in {ignored.path} is ignored until you trust "
                                  "this project (%agent trust)")
        return None


class Egress(WhenUndecided):
    name = "egress"
    summary = "when nothing decided: a request to a domain nobody allowed (what the URL carries leaves the machine)"

    def question(self, j: Judging) -> Verdict | None:
        egress = unlisted_egress(j.subject, j.settings.allowed_domains)
        return Verdict(kind=ASK, by="egress", reason=egress) if egress is not None else None


class Outside(WhenUndecided):
    name = "outside"
    summary = ("when nothing decided: a read outside the project and the added directories (what is read goes to "
               "the model)")

    def question(self, j: Judging) -> Verdict | None:
        outside = outside_read(j.subject, j.read_roots)
        return Verdict(kind=ASK, by="outside", reason=outside) if outside is not None else None


class SandboxGuard(Layer):
    name = "sandbox"
    summary = ("a command that would run unsandboxed although a sandbox is wanted is asked (forced), or denied "
               "when the settings say failIfUnavailable; a read-only command never is. It answers its own ask "
               "first: the session's one question (ask for each, ordinary commands unconfined for the session, never on "
               "this machine)")
    answers = True
    answers_forced = True
    answers_own_first = True

    async def judge(self, j: Judging) -> list[Verdict]:
        verdict = j.verdict
        if verdict is None or verdict.kind is DENY or j.subject.access.command is None:
            return []
        sandbox = j.ctx.deps.sandbox()
        if sandbox is None or not sandbox.enabled or sandbox.active:
            return []
        if j.facts.read_only and j.facts.egress is None:
            # A command the read-only table proves only reads (ls, git status) needs no confinement
            # to be harmless: a missing sandbox is never a reason to ask about it, in any mode.
            return []
        why = sandbox.unavailable_reason or "it could not start"
        choice = j.ctx.deps.unconfined
        fail_file = fail_closed_by(j.settings)
        if sandbox.fail_if_unavailable or fail_file is not None or choice.answer == "never":
            said = (f"the settings say failIfUnavailable ({fail_file})" if fail_file
                    else "the settings say failIfUnavailable" if sandbox.fail_if_unavailable
                    else "the user chose never to run commands unconfined on this machine")
            choice.tell(j.ctx, why, f"{said[0].upper()}{said[1:]}, so commands that would run unconfined are denied; "
                        "read-only commands run.")
            return [Verdict(kind=DENY, rule=verdict.rule, by="sandbox",
                            reason=f"Denied: the command sandbox is unavailable ({why}) and {said}, so no command runs "
                                   "unconfined; tell the user what you wanted to run.")]
        if verdict.kind is not ALLOW:
            return []  # asked anyway: the card says it runs unsandboxed
        beyond = beyond_confinement(j.subject, sandbox.writable_roots)
        if choice.answer == "session" and beyond is None:
            return [note(f"Runs unconfined: the sandbox is unavailable ({why}) and the user chose to run ordinary "
                         "commands unconfined for this session", rule="sandbox:session")]
        if beyond is not None:
            # Not an ordinary command: the card for the session does not cover it.
            return [Verdict(kind=ASK, rule="sandbox:beyond", by="sandbox", forced=True,
                            reason=f"The sandbox is enabled but unavailable ({why}), so this command would run "
                                   f"unconfined, and {beyond}")]
        return [Verdict(kind=ASK, rule=verdict.rule, by="sandbox", forced=True,
                        reason=f"The sandbox is enabled but unavailable ({why}), so this command would run unconfined")]

    async def answer(self, call: ToolCall, ctx: "ToolContext", asked: Verdict, ask: Asker | None) -> Verdict | None:
        """Its own ask, the first time in a session: the one card; "ask for each" leaves it to the person's card."""
        choice, sandbox = ctx.deps.unconfined, ctx.deps.sandbox()
        if asked.layer != self.name or sandbox is None or choice.answer == "ask_each":
            return None
        beyond = asked.rule == "sandbox:beyond"  # asked whatever the session's answer: the card comes first
        why = sandbox.unavailable_reason or "it could not start"
        command = call.definition.access.command
        source = asked.input.get(command) if command is not None else None
        answer = await choice.decide(ctx, escape_unicode(source if isinstance(source, str) else ""), why)

        def decided(kind: Decision, by: str, reason: str) -> Verdict:
            return Verdict(kind=kind, layer=self.name, by=by, reason=reason, input=asked.input, rule=asked.rule)

        if answer == "session" and not beyond:
            return decided(ALLOW, "user", f"Runs unconfined: the sandbox is unavailable ({why}) and the user chose to "
                           "run ordinary commands unconfined for this session.")
        if answer == "never":
            try:
                saved = f"saved sandbox.failIfUnavailable: true to {save_never()}"
            except (OSError, SettingsError) as error:
                saved = f"for this session only: could not save it ({error})"
            return decided(DENY, "user", f"Denied: the command sandbox is unavailable ({why}) and the user chose never "
                           f"to run commands unconfined on this machine ({saved}); tell the user what you wanted to "
                           "run.")
        return None


def layer_names(layers: list[Layer]) -> list[str]:
    """The layers' names in order, as the docs list them."""
    return [layer.name for layer in layers]
