"""PreToolUse hooks (Python callables from the kernel, shell commands from settings) and
approval observers (every audit record, as it is written).

A hook receives ``{session_id, cwd, permission_mode, tool_name, tool_input, tool_use_id}``
and answers ``{decision: allow|deny|ask|continue, reason, modified_input}`` (or None /
empty output = continue). A hook that crashes, times out or answers junk fails closed:
the call is asked, and the reason says which hook failed and how.
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..processes import run_process
from ..settings import HookCommand, HookMatcher

__all__ = [
    "HookOutput", "HookResult", "PythonHook", "register_pre_tool_use", "unregister", "register_approval_observer",
    "pre_tool_use_hooks", "approval_observers", "run_pre_tool_use", "notify_observers",
]

log = logging.getLogger(__name__)
HookFn = Callable[[dict[str, Any]], Union[dict[str, Any], None, Awaitable[Union[dict[str, Any], None]]]]
_PYTHON_HOOK_TIMEOUT = 30.0


class HookOutput(BaseModel):
    """What a hook may answer; unknown keys are junk (a typo must not silently allow)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    decision: Literal["allow", "deny", "ask", "continue"] = "continue"
    reason: str = ""
    modified_input: dict[str, Any] | None = Field(default=None, alias="modifiedInput")


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


def _parse_output(raw: Any, name: str) -> HookOutput | str:
    """A HookOutput, or a sentence saying why the answer is junk."""
    if raw is None:
        return HookOutput()
    if not isinstance(raw, dict):
        return f"hook {name} answered {type(raw).__name__}, not a JSON object"
    try:
        return HookOutput.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(answer)"
        return f"hook {name} answered junk ({where}: {first['msg']})"


async def _run_python(hook: PythonHook, payload: dict[str, Any]) -> HookOutput | str:
    try:
        result = hook.fn(dict(payload))
        if inspect.isawaitable(result):
            result = await asyncio.wait_for(result, _PYTHON_HOOK_TIMEOUT)
    except asyncio.TimeoutError:
        return f"hook {hook.name} did not answer within {_PYTHON_HOOK_TIMEOUT:g} s"
    except asyncio.CancelledError:
        raise
    except Exception as error:  # a hook's bug must not decide silently either way
        return f"hook {hook.name} crashed: {type(error).__name__}: {error}"
    return _parse_output(result, hook.name)


def _hook_env(extra: Mapping[str, str], cwd: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env["CODINGCODE_PROJECT_DIR"] = cwd
    return env


async def _run_shell(command: HookCommand, payload: dict[str, Any], cwd: str,
                     env: Mapping[str, str] = {}) -> HookOutput | str:
    name = f"`{command.command}`"
    try:
        # In its own process group, killed as a group: a hook's grandchild holding the pipes
        # cannot stretch its timeout.
        run = await run_process(["/bin/sh", "-c", command.command], cwd=cwd, env=_hook_env(env, cwd),
                                timeout=command.timeout, stdin=json.dumps(payload, default=str).encode())
    except OSError as error:
        return f"hook {name} could not start: {error}"
    if run.timed_out:
        return f"hook {name} did not answer within {command.timeout:g} s"
    err = run.stderr.render().strip()
    if run.returncode == 2:  # Claude Code's convention: exit 2 blocks, stderr says why
        return HookOutput(decision="deny", reason=err or f"hook {name} blocked the call")
    if run.returncode != 0:
        return f"hook {name} failed with exit code {run.returncode}" + (f": {err[:300]}" if err else "")
    text = run.stdout.render().strip()
    if not text:
        return HookOutput()
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        return f"hook {name} printed something that is not JSON: {text[:120]!r}"
    return _parse_output(raw, name)


async def run_pre_tool_use(
    payload: dict[str, Any], *, tool: str, python_hooks: list[PythonHook], shell_hooks: list[HookMatcher], cwd: str,
    env: Mapping[str, str] = {},
) -> HookResult:
    """Run every matching hook in order; deny stops at once, a modified input feeds the next hook."""
    result = HookResult()
    current = dict(payload)
    severity = {"continue": 0, "allow": 1, "ask": 2, "deny": 3}
    jobs: list[tuple[str, Callable[[dict[str, Any]], Awaitable[HookOutput | str]]]] = []
    for hook in python_hooks:
        if _matches(hook.matcher, tool):
            jobs.append((hook.name, lambda p, h=hook: _run_python(h, p)))
    for matcher in shell_hooks:
        if _matches(matcher.matcher, tool):
            for command in matcher.hooks:
                jobs.append((command.command, lambda p, c=command: _run_shell(c, p, cwd, env)))
    for name, job in jobs:
        result.ran.append(name)
        output = await job(current)
        if isinstance(output, str):
            output = HookOutput(decision="ask", reason=f"{output}; asking instead (hooks fail closed)")
        if output.modified_input is not None:
            current["tool_input"] = output.modified_input
            result.modified_input = output.modified_input
        if severity[output.decision] > severity[result.decision]:
            result.decision, result.reason, result.hook = output.decision, output.reason, name
        if output.decision == "deny":
            break
    return result


def notify_observers(record: dict[str, Any], shell_hooks: list[HookMatcher], cwd: str,
                     env: Mapping[str, str] = {}) -> None:
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
                _spawn(_run_shell(command, record, cwd, env))


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
