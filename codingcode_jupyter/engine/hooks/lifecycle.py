"""Hooks of the events outside approval: after a tool, a prompt, the end of a turn, a session.

PreToolUse runs in the approval pipeline's ``hooks`` layer (:mod:`.pre_tool_use`); the others run here,
called where the event happens:

* ``PostToolUse`` / ``PostToolUseFailure`` — after a tool ran (the loop; the hook sees
  ``tool_response``). A block, its reason or ``additionalContext`` reaches the model with the
  result; ``continue: false`` ends the turn after this step.
* ``UserPromptSubmit`` — before a prompt is sent (the session). A block keeps the prompt from
  the model and tells the person why; ``additionalContext`` (or a Claude Code hook's plain
  stdout) goes with the prompt.
* ``Stop`` / ``SubagentStop`` — when an agent is about to end its turn (the loop). A block
  sends its reason to the agent, which goes on (``stop_hook_active`` tells the hook so).
* ``SessionStart`` (``startup`` / ``resume``, at a session's first turn; its context goes with
  that prompt), ``SessionEnd`` (when the session closes), ``PreCompact`` (``manual`` /
  ``auto``), ``Notification`` (an approval card waits for the person).
* ``PermissionRequest`` — a card is about to ask the person (the ``confirm`` layer): a hook's
  allow or deny answers in their place (a deny wins; nothing said, the person is asked).
* ``SubagentStart`` — dispatch_agent starts a sub-agent (matched on its profile's name); the
  hooks' ``additionalContext`` goes with its task.
* ``Setup`` — ``%agent setup [init|maintenance]``; the hooks' context goes with the next prompt.

Each hook is told what its file's product tells it (:mod:`.payloads`) and read in its
file's semantics (:mod:`.runner`): a Claude Code hook's failure is a notice; one of
ours fails closed where the event can (a prompt is blocked, the model is told a check failed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

from .events import HookEvent, rules_of
from .fire import HookJob, fire
from .handlers import execute_hook
from .payloads import ToolView, common_fields, hook_input, tool_fields
from .runner import ConfiguredHook, HookAnswer

if TYPE_CHECKING:
    from ..project_settings import ProjectSettings
    from ..settings import Dialect
    from ..tools.base import ToolDefinition

__all__ = ["EventOutcome", "LifecycleHooks"]

Match = Union[Sequence[str], Callable[["Dialect"], Sequence[str]], None]
Fields = Callable[["Dialect"], dict[str, Any]]


@dataclass
class EventOutcome:
    """What the hooks of one event said, together: the combiner of every event but PreToolUse
    (read by the event's rules, :data:`~.events.EVENT_RULES`)."""

    event: HookEvent = HookEvent.NOTIFICATION
    blocked: bool = False
    # Why it is blocked (each blocking hook's reason).
    reasons: list[str] = field(default_factory=list)
    # For the model: additionalContext, plain stdout of context events.
    context: list[str] = field(default_factory=list)
    # For the person: systemMessage, failures, what a hook printed to stderr when blocking an
    # event that cannot be blocked.
    notices: list[str] = field(default_factory=list)
    # A hook said `continue: false`: stop, with this reason for the person.
    stop: str | None = None
    ran: list[str] = field(default_factory=list)
    # PermissionRequest: a hook allowed the call in the person's place (a deny of another hook wins),
    # with the input it should run with (in the hook's vocabulary, and that hook's dialect).
    allowed: bool = False
    updated_input: dict[str, Any] | None = None
    updated_by: "Dialect | None" = None

    @property
    def reason(self) -> str:
        return "\n".join(r for r in self.reasons if r)

    def add(self, job: HookJob, answer: HookAnswer) -> bool:
        """Fold one hook's answer in; every hook of the event runs (nothing ends the round)."""
        event, rules = self.event, rules_of(self.event)
        if answer.not_run is not None:
            self.notices.append(f"{event} hook {answer.not_run}")
            return True
        if answer.failure is not None:
            if job.dialect == "codingcode" and rules.fails_closed:
                self.blocked = True
                self.reasons.append(f"{answer.failure}; blocking instead (hooks fail closed)")
            elif job.dialect == "codingcode" and rules.failure_to_model:
                self.context.append(f"(A {event} check could not run: {answer.failure}.)")
                self.notices.append(f"{event} hook: {answer.failure}")
            else:
                self.notices.append(f"{event} hook: {answer.failure}")
            return True
        if answer.system_message:
            self.notices.append(answer.system_message)
        if answer.additional_context:
            self.context.append(answer.additional_context)
        if answer.decision in ("block", "deny"):
            self.blocked = True
            self.reasons.append(answer.reason)
        elif answer.decision == "allow" and rules.decides_tool_call:
            self.allowed = True
            self.reasons.append(answer.reason)
            if answer.updated_input is not None:
                self.updated_input, self.updated_by = answer.updated_input, job.dialect
        if answer.stop:
            self.stop = answer.stop_reason or f"{event} hook {job.name} stopped the turn"
        return True


class LifecycleHooks:
    """The hooks of one project's settings for the events above (read live, as the files are now)."""

    def __init__(self, project: Path, settings: "ProjectSettings") -> None:
        self.project = Path(project)
        self.settings = settings

    def configured(self, event: str) -> list[ConfiguredHook]:
        try:
            return self.settings.current().hooks_for(event)
        except ValueError:
            return []  # a broken settings file is reported where it is read; no hook runs from it

    def _env(self) -> Mapping[str, str]:
        try:
            return self.settings.current().merged.env
        except ValueError:
            return {}

    async def run(self, event: HookEvent, *, session_id: str, fields: Fields | None = None, match: Match = None,
                  mode: str | None = None, cwd: str | None = None) -> EventOutcome:
        """Run every hook of ``event`` whose matcher takes ``match`` (None: all), in order."""
        outcome = EventOutcome(event)
        hooks = self.configured(event)
        if not hooks:
            return outcome
        env = self._env()
        jobs = []
        for hook in hooks:
            names = match(hook.dialect) if callable(match) else match
            if not hook.matches(names):
                continue
            outcome.ran.append(hook.command)
            jobs.append(HookJob(hook.label, hook.dialect, partial(self._run_one, hook, session_id=session_id,
                                                                   fields=fields, mode=mode, cwd=cwd, env=env)))
        return await fire(jobs, outcome)

    async def _run_one(self, hook: ConfiguredHook, *, session_id: str, fields: Fields | None, mode: str | None,
                       cwd: str | None, env: Mapping[str, str]) -> HookAnswer:
        if hook.problem is not None:
            return HookAnswer(not_run=f"{hook.label} from {hook.path} does not run here: {hook.problem}")
        payload = hook_input(hook.event, {**common_fields(hook.dialect, hook.event, session_id=session_id,
                                                          project=self.project, mode=mode, cwd=cwd),
                                          **(fields(hook.dialect) if fields is not None else {})})
        return await execute_hook(hook, payload, self.project, env)

    # -- the events --------------------------------------------------------------------------

    async def after_tool(self, *, session_id: str, definition: "ToolDefinition", tool_input: dict[str, Any],
                         text: str, is_error: bool, tool_use_id: str, mode: str) -> EventOutcome:
        view = ToolView.of(definition)
        event = HookEvent.POST_TOOL_USE_FAILURE if is_error else HookEvent.POST_TOOL_USE

        def fields(dialect: "Dialect") -> dict[str, Any]:
            out = tool_fields(dialect, view, tool_input, self.project, tool_use_id=tool_use_id, result=(text, is_error))
            if is_error:
                out["error"] = text
            return out

        return await self.run(event, session_id=session_id, fields=fields, match=view.names, mode=mode)

    async def prompt(self, *, session_id: str, prompt: str, mode: str) -> EventOutcome:
        return await self.run(HookEvent.USER_PROMPT_SUBMIT, session_id=session_id, fields=lambda d: {"prompt": prompt}, mode=mode)

    async def stop(self, *, session_id: str, agent: str, active: bool, mode: str) -> EventOutcome:
        event = HookEvent.STOP if agent == "main" else HookEvent.SUBAGENT_STOP

        def fields(dialect: "Dialect") -> dict[str, Any]:
            out: dict[str, Any] = {"stop_hook_active": active}
            if event == HookEvent.SUBAGENT_STOP:
                out["agent_id"] = agent
                out["agent_type"] = agent.rsplit("/", 1)[-1].split("#", 1)[0]
            return out

        return await self.run(event, session_id=session_id, fields=fields, mode=mode)

    async def session_start(self, *, session_id: str, source: str) -> EventOutcome:
        return await self.run(HookEvent.SESSION_START, session_id=session_id, fields=lambda d: {"source": source},
                              match=[source])

    async def session_end(self, *, session_id: str, reason: str) -> EventOutcome:
        return await self.run(HookEvent.SESSION_END, session_id=session_id, fields=lambda d: {"reason": reason}, match=[reason])

    async def pre_compact(self, *, session_id: str, trigger: str, instructions: str = "") -> EventOutcome:
        return await self.run(HookEvent.PRE_COMPACT, session_id=session_id,
                              fields=lambda d: {"trigger": trigger, "custom_instructions": instructions}, match=[trigger])

    async def notification(self, *, session_id: str, message: str, kind: str = "permission_prompt") -> EventOutcome:
        return await self.run(HookEvent.NOTIFICATION, session_id=session_id,
                              fields=lambda d: {"message": message, "notification_type": kind}, match=[kind])

    async def permission_request(self, *, session_id: str, definition: "ToolDefinition", tool_input: dict[str, Any],
                                 tool_use_id: str, mode: str) -> EventOutcome:
        """A card is about to ask about this call: hooks may allow or deny it in the person's place."""
        view = ToolView.of(definition)

        def fields(dialect: "Dialect") -> dict[str, Any]:
            return {**tool_fields(dialect, view, tool_input, self.project, tool_use_id=tool_use_id),
                    "permission_suggestions": []}

        return await self.run(HookEvent.PERMISSION_REQUEST, session_id=session_id, fields=fields, match=view.names,
                              mode=mode)

    async def subagent_start(self, *, session_id: str, agent_id: str, agent_type: str, mode: str) -> EventOutcome:
        """A sub-agent starts: what the hooks say for it (additionalContext) goes with its task."""
        return await self.run(HookEvent.SUBAGENT_START, session_id=session_id, match=[agent_type], mode=mode,
                              fields=lambda d: {"agent_id": agent_id, "agent_type": agent_type})

    async def setup(self, *, session_id: str, trigger: str) -> EventOutcome:
        """``%agent setup`` (Claude Code's ``--init`` / ``--maintenance``): ``trigger`` is init or maintenance."""
        return await self.run(HookEvent.SETUP, session_id=session_id, fields=lambda d: {"trigger": trigger},
                              match=[trigger])
