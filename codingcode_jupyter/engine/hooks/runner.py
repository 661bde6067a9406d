"""Hooks from settings files: which run for an event, how one runs, what its answer means.

A hook keeps the format of the file it was written in (its ``dialect``):

* **Claude Code's** (``.claude/settings*.json``, ``~/.claude/settings.json``) run exactly as
  Claude Code runs them: told what Claude Code tells them (its tool names and argument
  shapes; :mod:`.claude.tool_input`), their answer read with Claude Code's semantics — exit
  0 (stdout may be JSON: ``hookSpecificOutput.permissionDecision``, ``decision``,
  ``updatedInput``, ``additionalContext``, ``continue``, ``systemMessage``; plain stdout is
  context for UserPromptSubmit and SessionStart), exit 2 blocks with stderr as the reason,
  any other exit or a timeout is a non-blocking error the person is told about.
  Matchers are Claude Code's: ``*`` or empty for all, names and ``|`` lists exactly, anything
  else a regular expression searched in the name (``mcp__.*``, ``Edit|Write``, ``Notebook.*``).
* **Ours** (``.codingcode/settings*.json``, ``~/.codingcode/settings.json``) keep their
  payload and their ``{decision, reason, modified_input}`` answer, may also answer in
  Claude Code's keys, and fail closed: a crash, a timeout, an exit code other than 0 and 2,
  or an answer that is not what we know is a failure the event treats strictly (a
  PreToolUse call is asked, a prompt is blocked). Matchers are ``|``-separated globs over
  the tool's names, ours and Claude Code's.

Every hook runs with ``CLAUDE_PROJECT_DIR`` and ``CODINGCODE_PROJECT_DIR`` set to the
project, the settings' ``env`` on top of the kernel's environment, in its own process group
with a timeout (:func:`~.processes.run_process`).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..processes import run_process
from .events import HookEvent, rules_of

if TYPE_CHECKING:
    from ..settings import Dialect, HooksSettings
    from .payloads import HookInput, ObservedRecord

__all__ = ["ConfiguredHook", "HookRun", "HookAnswer", "configured_hooks", "run_hook", "read_answer",
           "hook_environment", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = {"codingcode": 30.0, "claude": 60.0}
# Names only (with `|`, `,` and spaces as separators): matched exactly. Anything else is a regex.
_EXACT = re.compile(r"^[A-Za-z0-9_|, -]+$")


@dataclass(frozen=True)
class ConfiguredHook:
    """One hook command of a settings file, for one event."""

    event: HookEvent
    matcher: str
    command: str
    type: str
    timeout: float
    source: str
    path: Path
    dialect: "Dialect"
    # Variables the hook runs with besides the settings' env (a plugin's CLAUDE_PLUGIN_ROOT, ...).
    env: tuple[tuple[str, str], ...] = ()
    # An http hook's address and headers (and the variables its headers may name); a prompt hook's text and model.
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env: tuple[str, ...] = ()
    prompt: str = ""
    model: str | None = None

    @property
    def label(self) -> str:
        if self.type == "http":
            return f"an http hook ({self.url})"
        if self.type == "prompt":
            return f"a prompt hook ({' '.join(self.prompt.split())[:60]!r})"
        return f"`{self.command}`" if self.type == "command" else f"a {self.type} hook"

    @property
    def problem(self) -> str | None:
        """Why the hook can never run as written (None when it can)."""
        if self.type not in ("command", "http", "prompt"):
            return f"command, http and prompt hooks run here, not {self.type} hooks"
        if self.type == "command" and not self.command.strip():
            return "its command is empty"
        if self.type == "http" and not re.match(r"^https?://", self.url):
            return "an http hook needs a `url` starting with http:// or https://"
        if self.type == "prompt" and not self.prompt.strip():
            return "a prompt hook needs a `prompt`"
        if self.dialect == "claude" and not _EXACT.match(self.matcher or "*") and self.matcher not in ("", "*"):
            try:
                re.compile(self.matcher)
            except re.error as error:
                return f"its matcher {self.matcher!r} is not a regular expression Python reads ({error})"
        return None

    def matches(self, names: Sequence[str] | None) -> bool:
        """Whether this hook runs for an event about ``names`` (a tool's names, a trigger; None: any).

        A hook that can never run as written (:attr:`problem`) matches every call of a
        PreToolUse event, so it fails closed there.
        """
        matcher = (self.matcher or "").strip()
        if names is None or matcher in ("", "*"):
            return True
        if self.problem is not None:
            return rules_of(self.event).unrunnable_matches_all
        if self.dialect == "claude":
            if _EXACT.match(matcher):
                wanted = {part.strip() for part in re.split(r"[|,]", matcher) if part.strip()}
                return any(name in wanted for name in names)
            regex = re.compile(matcher)
            return any(regex.search(name) for name in names)
        patterns = [part.strip() for part in matcher.split("|") if part.strip()]
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)


def configured_hooks(hooks: "HooksSettings", *, source: str, path: Path, dialect: "Dialect",
                     env: Mapping[str, str] | None = None) -> list[ConfiguredHook]:
    """Every hook of one file's ``hooks``, in the order written (``env``: variables they run with)."""
    out = []
    extra = tuple(sorted((env or {}).items()))
    for event in type(hooks).model_fields:
        for group in getattr(hooks, event):
            for hook in group.hooks:
                out.append(ConfiguredHook(event=HookEvent(event), matcher=group.matcher, command=hook.command, type=hook.type,
                                          timeout=hook.timeout or DEFAULT_TIMEOUT[dialect], source=source, path=path,
                                          dialect=dialect, env=extra, url=hook.url,
                                          headers=tuple(hook.headers.items()), allowed_env=tuple(hook.allowedEnvVars),
                                          prompt=hook.prompt, model=hook.model))
    return out


@dataclass(frozen=True)
class HookRun:
    """How a hook process ended."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str | None = None  # it could not start


def hook_environment(project: Path | str, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The environment a hook runs with: the kernel's, the settings' ``env``, the project directory."""
    env = dict(os.environ)
    env.update(extra)
    env["CODINGCODE_PROJECT_DIR"] = str(project)
    env["CLAUDE_PROJECT_DIR"] = str(project)
    return env


def hook_shell() -> str:
    """The shell hook commands run with: bash, as Claude Code runs them (its `shell` field's
    default), so a hook written with bash syntax (`[[ ... =~ ... ]]`) works; sh where there is no bash."""
    return shutil.which("bash") or "/bin/sh"


async def run_hook(hook: ConfiguredHook, payload: "HookInput | ObservedRecord", project: Path | str,
                   env: Mapping[str, str] = {}) -> HookRun:
    """Run one command hook with ``payload`` as JSON on its stdin, in the project directory."""
    try:
        # In its own process group, killed as a group: a hook's grandchild holding the pipes
        # cannot stretch its timeout.
        run = await run_process([hook_shell(), "-c", hook.command], cwd=str(project),
                                env=hook_environment(project, {**env, **dict(hook.env)}),
                                timeout=hook.timeout, stdin=json.dumps(payload.wire(), default=str).encode())
    except OSError as error:
        return HookRun(None, "", "", error=str(error))
    return HookRun(run.returncode, run.stdout.render(), run.stderr.render(), timed_out=run.timed_out)


Decision = Literal["allow", "deny", "ask", "block", "continue"]


@dataclass
class HookAnswer:
    """What a hook said, whatever its format; ``failure`` says why it said nothing usable."""

    decision: Decision = "continue"
    reason: str = ""
    # The input to run instead, in the hook's own vocabulary (Claude Code's names for its hooks).
    updated_input: dict[str, Any] | None = None
    additional_context: str = ""
    # `continue: false`: stop the turn after this (with the reason shown to the person).
    stop: bool = False
    stop_reason: str = ""
    # Shown to the person.
    system_message: str = ""
    failure: str | None = None
    # Why the hook did not run at all, as configured (its event says what that means).
    not_run: str | None = None


class _PermissionDecision(BaseModel):
    """PermissionRequest's answer: allow or deny in the person's place (``interrupt`` also stops the turn)."""

    model_config = ConfigDict(extra="ignore")

    behavior: Literal["allow", "deny"]
    message: str = ""
    updatedInput: dict[str, Any] | None = None
    interrupt: bool = False


class _SpecificOutput(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    hookEventName: str | None = None
    permissionDecision: Literal["allow", "deny", "ask", "defer"] | None = None
    permissionDecisionReason: str = ""
    updatedInput: dict[str, Any] | None = None
    additionalContext: str = ""
    decision: _PermissionDecision | None = None


class _ClaudeOutput(BaseModel):
    """Claude Code's JSON answer; keys it does not document are ignored, as Claude Code does."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    continue_: bool = Field(default=True, alias="continue")
    stopReason: str = ""
    suppressOutput: bool = False
    systemMessage: str = ""
    decision: Literal["approve", "block"] | None = None
    reason: str = ""
    hookSpecificOutput: _SpecificOutput | None = None


class _OurOutput(BaseModel):
    """Our JSON answer; Claude Code's keys are understood too, anything else is junk (fail closed)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    decision: Literal["allow", "deny", "ask", "continue", "block", "approve"] = "continue"
    reason: str = ""
    modified_input: dict[str, Any] | None = Field(default=None, alias="modifiedInput")
    additional_context: str = Field(default="", alias="additionalContext")
    continue_: bool = Field(default=True, alias="continue")
    stopReason: str = ""
    suppressOutput: bool = False
    systemMessage: str = ""
    hookSpecificOutput: _SpecificOutput | None = None


def _tool_decision(event: str, value: str | None) -> Decision:
    """A decision word as the event understands it: a tool call is allowed or denied, anything else blocked."""
    if value in (None, "continue", "defer"):
        return "continue"
    if rules_of(event).decides_tool_call:
        return {"approve": "allow", "block": "deny"}.get(value, value)  # type: ignore[return-value]
    return "block" if value in ("block", "deny") else "continue"


def _specific(event: str, specific: "_SpecificOutput", answer: HookAnswer) -> None:
    """Fold an answer's ``hookSpecificOutput`` in (PreToolUse's permissionDecision, PermissionRequest's decision)."""
    if specific.permissionDecision is not None and rules_of(event).decides_tool_call:
        answer.decision = _tool_decision(event, specific.permissionDecision)
        answer.reason = specific.permissionDecisionReason or answer.reason
    if specific.decision is not None and event == HookEvent.PERMISSION_REQUEST:
        answer.decision = specific.decision.behavior
        answer.reason = specific.decision.message or answer.reason
        answer.updated_input = specific.decision.updatedInput
        answer.stop = answer.stop or specific.decision.interrupt
    if specific.updatedInput is not None:
        answer.updated_input = specific.updatedInput
    answer.additional_context = specific.additionalContext or answer.additional_context


def _from_claude_json(event: str, raw: dict[str, Any]) -> HookAnswer:
    output = _ClaudeOutput.model_validate(raw)
    answer = HookAnswer(stop=not output.continue_, stop_reason=output.stopReason, system_message=output.systemMessage,
                        decision=_tool_decision(event, output.decision), reason=output.reason)
    if output.hookSpecificOutput is not None:
        _specific(event, output.hookSpecificOutput, answer)
    return answer


def _from_our_json(event: str, raw: Any, name: str) -> HookAnswer:
    if raw is None:
        return HookAnswer()
    if not isinstance(raw, dict):
        return HookAnswer(failure=f"hook {name} answered {type(raw).__name__}, not a JSON object")
    try:
        output = _OurOutput.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(answer)"
        return HookAnswer(failure=f"hook {name} answered junk ({where}: {first['msg']})")
    answer = HookAnswer(decision=_tool_decision(event, output.decision), reason=output.reason,
                        updated_input=output.modified_input, additional_context=output.additional_context,
                        stop=not output.continue_, stop_reason=output.stopReason, system_message=output.systemMessage)
    if output.hookSpecificOutput is not None:
        _specific(event, output.hookSpecificOutput, answer)
    return answer


def read_answer(hook: ConfiguredHook, run: HookRun) -> HookAnswer:
    """What ``run`` of ``hook`` means for its event, in the hook's dialect (see the module docstring)."""
    name, event = hook.label, hook.event
    if run.error is not None:
        return HookAnswer(failure=f"hook {name} could not start: {run.error}")
    if run.timed_out:
        return HookAnswer(failure=f"hook {name} did not answer within {hook.timeout:g} s")
    err = run.stderr.strip()
    if run.exit_code == 2:  # Claude Code's convention, kept by ours: exit 2 blocks, stderr says why
        return HookAnswer(decision="deny" if rules_of(event).decides_tool_call else "block",
                          reason=err or f"hook {name} blocked it")
    if run.exit_code != 0:
        return HookAnswer(failure=f"hook {name} failed with exit code {run.exit_code}" + (f": {err[:300]}" if err else ""))
    text = run.stdout.strip()
    if hook.dialect == "claude":
        raw: Any = None
        if text.startswith("{"):
            try:
                raw = json.loads(text)
            except json.JSONDecodeError:
                raw = None
        if isinstance(raw, dict):
            try:
                return _from_claude_json(event, raw)
            except ValidationError as error:
                first = error.errors(include_url=False)[0]
                where = ".".join(str(p) for p in first["loc"])
                return HookAnswer(failure=f"hook {name} answered JSON Claude Code would not accept ({where}: {first['msg']})")
        return HookAnswer(additional_context=text if rules_of(event).stdout_is_context else "")
    if not text:
        return HookAnswer()
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        return HookAnswer(failure=f"hook {name} printed something that is not JSON: {text[:120]!r}")
    return _from_our_json(event, raw, name)


def read_python_answer(event: str, raw: Any, name: str) -> HookAnswer:
    """A kernel-registered Python hook's return value, read as one of ours."""
    return _from_our_json(event, raw, name)
