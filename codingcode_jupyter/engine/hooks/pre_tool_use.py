"""PreToolUse hooks (Python callables from the kernel, shell commands from settings files) and
approval observers (every audit record, as it is written).

A Python hook and a hook of our settings files receive ``{session_id, transcript_path, cwd,
hook_event_name, permission_mode, tool_name, tool_input, tool_use_id}`` in our names and
answer ``{decision: allow|deny|ask|continue, reason, modified_input}`` (or None / empty
output = continue; Claude Code's answer keys are understood too). A hook of a Claude Code
file is told Claude Code's names and shapes and answered in Claude Code's semantics
(:mod:`.runner`). A hook of ours that crashes, times out or answers junk fails
closed: the call is asked, and the reason says which hook failed and how. A Claude Code
hook's failure is a non-blocking error, as there: the person is told, the call goes on.
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import logging
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, Mapping, Union

from ..claude.tool_input import from_claude_input
from ..deadline import within
from ..settings import HookMatcher
from .events import HookEvent
from .fire import HookJob, fire
from .handlers import execute_hook
from .payloads import ObservedRecord, ToolView, common_fields, hook_input, tool_fields
from .runner import ConfiguredHook, HookAnswer, read_python_answer, run_hook

if TYPE_CHECKING:
    from ..tools.base import ToolContext, ToolDefinition

__all__ = [
    "HookResult", "PythonHook", "register_pre_tool_use", "unregister", "register_approval_observer",
    "pre_tool_use_hooks", "approval_observers", "run_pre_tool_use", "notify_observers",
]

log = logging.getLogger(__name__)
HookFn = Callable[[dict[str, Any]], Union[dict[str, Any], None, Awaitable[Union[dict[str, Any], None]]]]
_PYTHON_HOOK_TIMEOUT = 30.0


@dataclass
class PythonHook:
    """A kernel-registered PreToolUse callable and the tool glob it applies to."""

    fn: HookFn
    matcher: str = "*"
    name: str = ""


@dataclass
class HookResult:
    """The combined answer of every hook that ran: strictest decision, last modified input."""

    decision: Literal["allow", "deny", "ask", "continue"] = "continue"
    reason: str = ""
    hook: str | None = None
    modified_input: dict[str, Any] | None = None
    ran: list[str] = field(default_factory=list)
    # A hook said `continue: false`: the turn stops after this call (the reason is shown).
    stop: str | None = None


_PRE_TOOL_USE: list[PythonHook] = []
_OBSERVERS: list[Callable[[dict[str, Any]], Any]] = []


def register_pre_tool_use(fn: HookFn, matcher: str = "*") -> HookFn:
    """Run ``fn`` before every tool whose display name matches ``matcher``; returns ``fn``."""
    unregister(fn)
    _PRE_TOOL_USE.append(PythonHook(fn, matcher or "*", getattr(fn, "__qualname__", repr(fn))))
    return fn


def register_approval_observer(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """Call ``fn`` with every audit record (decisions and outcomes); returns ``fn``."""
    if fn not in _OBSERVERS:
        _OBSERVERS.append(fn)
    return fn


def unregister(fn: Callable[..., Any]) -> bool:
    """Remove ``fn`` from both registries; True if it was registered."""
    before = len(_PRE_TOOL_USE) + len(_OBSERVERS)
    _PRE_TOOL_USE[:] = [hook for hook in _PRE_TOOL_USE if hook.fn is not fn]
    _OBSERVERS[:] = [obs for obs in _OBSERVERS if obs is not fn]
    return before != len(_PRE_TOOL_USE) + len(_OBSERVERS)


def pre_tool_use_hooks() -> list[PythonHook]:
    """The registered Python PreToolUse hooks, in registration order."""
    return list(_PRE_TOOL_USE)


def approval_observers() -> list[Callable[[dict[str, Any]], Any]]:
    """The registered approval observers."""
    return list(_OBSERVERS)


def _matches(matcher: str, tool: str) -> bool:
    return matcher in ("", "*") or fnmatch.fnmatchcase(tool, matcher)


async def _run_python(hook: PythonHook, told: Callable[[], dict[str, Any]]) -> HookAnswer:
    try:
        result = hook.fn(told())
        if inspect.isawaitable(result):
            result = await within(result, _PYTHON_HOOK_TIMEOUT)
    except asyncio.TimeoutError:
        return HookAnswer(failure=f"hook {hook.name} did not answer within {_PYTHON_HOOK_TIMEOUT:g} s")
    except asyncio.CancelledError:
        raise
    except Exception as error:  # a hook's bug must not decide silently either way
        return HookAnswer(failure=f"hook {hook.name} crashed: {type(error).__name__}: {error}")
    return read_python_answer(HookEvent.PRE_TOOL_USE, result, hook.name)


def _command_cwd(view: ToolView, definition: "ToolDefinition | None", tool_input: dict[str, Any],
                 project: str) -> str | None:
    """The directory a command runs in, which is the `cwd` a Claude Code hook is told for it."""
    access = definition.access if definition is not None else None
    if access is None or access.command is None or not access.cwd:
        return None
    value = tool_input.get(access.cwd)
    return os.path.normpath(os.path.join(project, os.path.expanduser(value))) if isinstance(value, str) and value else None


class _ToolDecision:
    """PreToolUse's combiner: the strictest decision wins (continue < allow < ask < deny), a deny
    ends the round at once, a modified input is what the next hook is told and what will run."""

    _SEVERITY = {"continue": 0, "allow": 1, "ask": 2, "deny": 3}

    def __init__(self, payload: dict[str, Any], view: ToolView, ctx: "ToolContext | None") -> None:
        self.result = HookResult()
        self.payload = dict(payload)
        self.view = view
        self.ctx = ctx

    def add(self, job: HookJob, answer: HookAnswer) -> bool:
        result, ctx = self.result, self.ctx
        result.ran.append(job.name)
        if answer.failure is not None and job.dialect == "claude":
            _tell(ctx, f"PreToolUse hook: {answer.failure} (a non-blocking error, as in Claude Code)")
            return True
        if answer.failure is not None:
            # Said in the turn's record too: the card that carries the reason is gone once answered.
            _tell(ctx, f"PreToolUse hook: {answer.failure}; asking instead (hooks fail closed)")
            answer = HookAnswer(decision="ask", reason=f"{answer.failure}; asking instead (hooks fail closed)")
        if answer.system_message:
            _tell(ctx, answer.system_message)
        if answer.additional_context and ctx is not None:
            ctx.hook_context.append(answer.additional_context)
        if answer.updated_input is not None:
            view = self.view
            ours = from_claude_input(view.display, answer.updated_input, self.payload["tool_input"]) \
                if job.dialect == "claude" and not view.mcp else answer.updated_input
            self.payload["tool_input"] = ours
            result.modified_input = ours
        decision = answer.decision if answer.decision in self._SEVERITY else "continue"
        if answer.stop:
            result.stop = answer.stop_reason or f"hook {job.name} stopped the turn"
            decision = "deny"
            answer.reason = answer.reason or result.stop
        if self._SEVERITY[decision] > self._SEVERITY[result.decision]:
            result.decision, result.reason, result.hook = decision, answer.reason, job.name  # type: ignore[assignment]
        return decision != "deny"


async def run_pre_tool_use(
    payload: dict[str, Any], *, tool: str, python_hooks: list[PythonHook], shell_hooks: list[ConfiguredHook],
    cwd: str, env: Mapping[str, str] = {}, definition: "ToolDefinition | None" = None,
    ctx: "ToolContext | None" = None,
) -> HookResult:
    """Run every matching hook in order (:func:`~.fire.fire`); deny stops at once, a modified input
    feeds the next hook.

    ``payload`` is the call in our names (Python hooks and ours get it as is); a Claude Code
    hook is told the same call in Claude Code's names. ``ctx``, when given, receives what the
    hooks say for the person (``systemMessage``, non-blocking errors) and for the model
    (``additionalContext``), and is asked to stop the turn on ``continue: false``.
    """
    view = ToolView.of(definition) if definition is not None else ToolView(tool, tool)
    combined = _ToolDecision(payload, view, ctx)

    def told() -> dict[str, Any]:
        return dict(combined.payload)

    jobs: list[HookJob] = []
    for hook in python_hooks:
        if hook.matcher in ("", "*") or any(fnmatch.fnmatchcase(name, hook.matcher) for name in view.names("codingcode")):
            jobs.append(HookJob(hook.name, "codingcode", partial(_run_python, hook, told)))
    for configured in shell_hooks:
        if configured.matches(view.names(configured.dialect)):
            jobs.append(HookJob(configured.label.strip("`"), configured.dialect,
                                partial(_run_configured, configured, told, view=view, definition=definition,
                                        project=cwd, env=env)))
    result = (await fire(jobs, combined)).result
    if result.stop is not None and ctx is not None and ctx.run is not None:
        stop = getattr(ctx.run, "request_stop", None)
        if stop is not None:
            stop(result.stop)
    return result


def _tell(ctx: "ToolContext | None", text: str) -> None:
    if ctx is not None and ctx.run is not None:
        ctx.run.notify(text)


async def _run_configured(hook: ConfiguredHook, told: Callable[[], dict[str, Any]], view: ToolView,
                          definition: "ToolDefinition | None", project: str, env: Mapping[str, str]) -> HookAnswer:
    payload = told()
    if hook.problem is not None:
        # A check the person configured that cannot run here fails closed, whichever file it is in.
        return HookAnswer(decision="ask", reason=f"the PreToolUse {hook.label} from {hook.path} cannot run here "
                                                 f"({hook.problem}); asking instead")
    tool_input = payload.get("tool_input") or {}
    cwd = _command_cwd(view, definition, tool_input, project) if hook.dialect == "claude" else None
    fields = common_fields(hook.dialect, HookEvent.PRE_TOOL_USE, session_id=str(payload.get("session_id", "")),
                           project=project, mode=payload.get("permission_mode"), cwd=cwd)
    if hook.dialect == "claude":
        sent = {**fields, **tool_fields("claude", view, tool_input, Path(project),
                                        tool_use_id=str(payload.get("tool_use_id", "")))}
    else:
        sent = {**fields, **payload}
    return await execute_hook(hook, hook_input(HookEvent.PRE_TOOL_USE, sent), project, env)


def notify_observers(record: dict[str, Any], shell_hooks: list[HookMatcher], cwd: str,
                     env: Mapping[str, str] = {}) -> None:
    from .runner import DEFAULT_TIMEOUT
    """Hand an audit record to every observer; fire and forget, never raises."""
    for observer in list(_OBSERVERS):
        try:
            result = observer(dict(record))
            if inspect.isawaitable(result):
                _spawn(result)
        except Exception:  # an observer's bug must not break approvals
            log.exception("approval observer %r failed", observer)
    for matcher in shell_hooks:
        if _matches(matcher.matcher, str(record.get("tool", ""))):
            for command in matcher.hooks:
                hook = ConfiguredHook(HookEvent.APPROVAL_POST, matcher.matcher, command.command, command.type,
                                      command.timeout or DEFAULT_TIMEOUT["codingcode"], "settings", Path(cwd),
                                      "codingcode")
                _spawn(run_hook(hook, ObservedRecord(dict(record)), cwd, env))


_BACKGROUND: set[asyncio.Task[Any]] = set()


def _spawn(awaitable: Awaitable[Any]) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        return

    async def guarded() -> None:
        try:
            await awaitable
        except Exception:
            log.exception("approval observer failed")

    task = loop.create_task(guarded())
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
