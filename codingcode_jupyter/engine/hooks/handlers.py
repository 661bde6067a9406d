"""Running one configured hook, whatever its type: a command, an HTTP endpoint, or a prompt to a model.

Claude Code has five handler types; three run here:

* ``command`` — a shell command told the event as JSON on its stdin (:func:`~.runner.run_hook`).
* ``http`` — the event POSTed as JSON to ``url`` with ``headers``, where ``$VAR`` / ``${VAR}`` take
  the kernel's value only for a variable ``allowedEnvVars`` names (any other is empty, so a
  shared file cannot send a secret it does not name). A 2xx answer's body is read as a command's
  stdout; any other status, a connection that fails or a timeout is a failure (a non-blocking
  error for a Claude Code hook, as there).
* ``prompt`` — a model (``model``, else Claude Code's small fast one, Haiku) is asked ``prompt``
  with the event's JSON in place of ``$ARGUMENTS`` (appended when it has none) and answers
  ``{"ok": true}`` or ``{"ok": false, "reason": "..."}``: not ok blocks the event (a tool call is
  denied, a prompt blocked, a Stop makes the agent go on with the reason).

``agent`` and ``mcp_tool`` hooks do not run (:attr:`~.runner.ConfiguredHook.problem`).

What an ``http`` or ``prompt`` hook sends leaves the machine, so the event goes with every known
secret replaced by its marker (:mod:`..secret_values`), as a tool's result does before the model
sees it; only a header's ``allowedEnvVars`` carry a value the person chose to send.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..deadline import within
from .events import rules_of
from .runner import ConfiguredHook, HookAnswer, HookRun, read_answer, run_hook

if TYPE_CHECKING:
    from .payloads import HookInput

__all__ = ["execute_hook", "PROMPT_HOOK_MODEL"]

# Claude Code asks prompt hooks of its small fast model unless the hook names one.
PROMPT_HOOK_MODEL = "haiku"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_PROMPT_SYSTEM = ("You check one event of a coding agent for the person who configured you. Answer with a JSON "
                  'object only: {"ok": true} when the condition you are given holds, or {"ok": false, "reason": '
                  '"why, in one sentence"} when it does not.')


async def execute_hook(hook: ConfiguredHook, payload: "HookInput", project: Path | str,
                       env: Mapping[str, str] = {}) -> HookAnswer:
    """Run ``hook`` (of any type that runs here) with ``payload`` and read its answer in its dialect."""
    if hook.type == "http":
        return read_answer(hook, await _post(hook, _leaving(payload, project, env), env))
    if hook.type == "prompt":
        return await _ask_model(hook, _leaving(payload, project, env))
    return read_answer(hook, await run_hook(hook, payload, project, env))


def _leaving(payload: "HookInput", project: Path | str, env: Mapping[str, str]) -> str:
    """The event as JSON, redacted of the secrets known in ``project`` and the hook's environment."""
    import os

    from ..secret_values import KnownSecrets

    redacted, _found = KnownSecrets(Path(project), environ={**os.environ, **env}).redact_value(payload.wire())
    return json.dumps(redacted, default=str)


def _header(value: str, allowed: tuple[str, ...], environ: Mapping[str, str]) -> str:
    return _VAR.sub(lambda m: environ.get(m.group(1) or m.group(2), "") if (m.group(1) or m.group(2)) in allowed
                    else "", value)


async def _post(hook: ConfiguredHook, event: str, env: Mapping[str, str]) -> HookRun:
    """POST the event; a 2xx body is the hook's stdout (exit 0), anything else a failure."""
    import os

    import httpx

    environ = {**os.environ, **env}
    headers = {name: _header(value, hook.allowed_env, environ) for name, value in hook.headers}
    headers.setdefault("Content-Type", "application/json")
    try:
        async with httpx.AsyncClient(timeout=hook.timeout, follow_redirects=False) as client:
            response = await client.post(hook.url, content=event, headers=headers)
    except httpx.TimeoutException:
        return HookRun(None, "", "", timed_out=True)
    except httpx.HTTPError as error:
        return HookRun(None, "", "", error=f"{type(error).__name__}: {error}")
    if not 200 <= response.status_code < 300:
        return HookRun(1, "", f"{hook.url} answered HTTP {response.status_code}")
    return HookRun(0, response.text, "")


def _verdict(text: str) -> dict[str, Any] | None:
    """The JSON object a model answered (the first ``{...}`` of its text)."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        value = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


async def _ask_model(hook: ConfiguredHook, event: str) -> HookAnswer:
    from ..models.aliases import resolve_alias
    from ..models.clients import has_api_key, shared_client

    if not has_api_key():
        return HookAnswer(failure=f"{hook.label} needs a model, and no ANTHROPIC_API_KEY is set")
    text = hook.prompt.replace("$ARGUMENTS", event) if "$ARGUMENTS" in hook.prompt else f"{hook.prompt}\n\n{event}"
    try:
        message = await within(shared_client().messages.create(
            model=resolve_alias(hook.model or PROMPT_HOOK_MODEL) or hook.model or PROMPT_HOOK_MODEL, max_tokens=512,
            system=_PROMPT_SYSTEM, messages=[{"role": "user", "content": text}]), hook.timeout)
    except asyncio.TimeoutError:
        return HookAnswer(failure=f"{hook.label} did not answer within {hook.timeout:g} s")
    except asyncio.CancelledError:
        raise
    except Exception as error:  # noqa: BLE001 -- the model's failure is the hook's, said as such
        return HookAnswer(failure=f"{hook.label} could not ask the model: {type(error).__name__}: {str(error)[:200]}")
    answered = "".join(getattr(block, "text", "") for block in getattr(message, "content", []) or [])
    verdict = _verdict(answered)
    if verdict is None or not isinstance(verdict.get("ok"), bool):
        return HookAnswer(failure=f"{hook.label} answered something that is not {{\"ok\": true|false}}: "
                                  f"{answered[:120]!r}")
    if verdict["ok"]:
        return HookAnswer()
    reason = str(verdict.get("reason") or f"{hook.label} said no")
    return HookAnswer(decision="deny" if rules_of(hook.event).decides_tool_call else "block", reason=reason)
