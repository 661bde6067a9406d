"""The card's Preview for a command: offered when a throwaway run can be faithful, audited when run.

A command's card (one that does more than read) offers a preview; it is disabled, with the
reason, where the throwaway run would not show what the real one does: no sandbox runs commands
here; the judge sees the command reach the network (a preview has none) or write outside the
project (the preview holds only the project); it runs outside the project; the project is too
large to copy (:func:`~..sandbox.preview.copy_budget_problem`, only when bubblewrap cannot overlay
it). What a preview shows is without the values of known secrets, as a command's output is. Each preview run is recorded in the audit log with what it found (:class:`PreviewRecord`).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..command_preview import CommandPreview, PreviewOffer
from ..sandbox.preview import copy_budget_problem, preview_method, run_preview
from ..tools.shell import MAX_TIMEOUT_MS, ExecuteCommandArgs, command_env
from .audit import AuditLog
from .audit_records import PreviewRecord
from .readonly_commands import read_only_command
from .subject import Subject, build_subject
from .types import ApprovalRequest
from .unconfined import beyond_confinement

if TYPE_CHECKING:
    from ..tools.base import ToolCall, ToolContext

__all__ = ["offer_preview", "needs_network"]

# Subcommands that fetch or publish: the judge's downloaders (curl, wget...) are found by trait;
# these are the package managers and version control, which a preview without network would show
# failing.
_NETWORK: dict[str, frozenset[str]] = {
    "git": frozenset({"clone", "fetch", "pull", "push", "ls-remote", "submodule"}),
    "pip": frozenset({"install", "download"}),
    "pip3": frozenset({"install", "download"}),
    "uv": frozenset({"add", "sync", "lock", "pip", "tool"}),
    "npm": frozenset({"install", "i", "ci", "add", "update", "publish"}),
    "pnpm": frozenset({"install", "i", "add", "update"}),
    "yarn": frozenset({"install", "add", "upgrade"}),
    "cargo": frozenset({"install", "fetch", "update", "publish"}),
    "go": frozenset({"get", "install"}),
    "apt": frozenset({"install", "update"}),
    "apt-get": frozenset({"install", "update"}),
    "conda": frozenset({"install", "create", "update"}),
    "docker": frozenset({"pull", "push", "build"}),
}


def needs_network(subject: Subject) -> str | None:
    """Why the command would need the network (None: the judge sees no need)."""
    reached = beyond_confinement(subject, [subject.project])
    if reached is not None and "network" in reached:
        return reached
    for part in [subject, *subject.inner]:
        command = part.command
        if command is None:
            continue
        for simple in command.commands:
            name = os.path.basename(simple.argv[0]) if simple.argv else ""
            words = [word for word in simple.argv[1:] if not word.startswith("-")]
            if name in _NETWORK and words and words[0] in _NETWORK[name]:
                return f"`{name} {words[0]}` reaches the network"
    return None


async def _unfaithful(subject: Subject, workdir: Path, ctx: "ToolContext") -> str | None:
    """Why a throwaway run would not show what the real one does (None: it would)."""
    sandbox = ctx.deps.sandbox()
    if sandbox is None or not sandbox.active:
        why = sandbox.unavailable_reason if sandbox is not None else None
        return f"no sandbox runs commands here{f' ({why})' if why else ''}, and a preview runs in one"
    network = needs_network(subject)
    if network is not None:
        return f"{network}, and a preview has no network"
    outside = beyond_confinement(subject, [subject.project])
    if outside is not None:
        return f"{outside.split(', which')[0]}: a preview holds only the project"
    project = Path(os.path.realpath(ctx.project_path))
    if not (workdir == project or project in workdir.parents):
        return f"it runs outside the project ({workdir}): a preview holds only the project"
    if preview_method(sandbox) == "copy" and sandbox.backend == "landlock":
        # Landlock cannot show the copy at the project's own path: the copy is elsewhere.
        for part in [subject, *subject.inner]:
            for ref in part.paths:
                if (
                    os.path.isabs(ref.raw)
                    and ref.access in ("write", "unknown")
                    and ref.resolved is not None
                    and (ref.resolved == project or project in ref.resolved.parents)
                ):
                    return (
                        f"it writes {ref.raw} by its absolute path, and under Landlock a preview runs in a copy "
                        "of the project at another path"
                    )
    if preview_method(sandbox) == "copy":
        limits = ctx.deps.settings.current().merged.sandbox.preview
        # A walk of up to maxFiles entries: off the event loop, so the cell stays live meanwhile.
        return await asyncio.to_thread(copy_budget_problem, project, limits.maxFiles, limits.maxMB * 1024 * 1024)
    return None


def _without_secrets(result: CommandPreview, ctx: "ToolContext") -> CommandPreview:
    """The preview with every known secret's value replaced by a marker, as a command's streamed output
    is: a project file can hold a value the session knows as a secret, and the card stays in the
    notebook. Fails closed: what cannot be checked is not shown."""
    try:
        return CommandPreview.model_validate(ctx.deps.secrets.redact_value(result.model_dump())[0])
    except Exception:  # noqa: BLE001 -- fail closed: the summary stays, the contents go
        withheld = "(withheld: it could not be checked for secret values)"
        return result.model_copy(update={
            "output_tail": withheld if result.output_tail else "",
            "files": [f.model_copy(update={"diff": withheld if f.diff else ""}) for f in result.files],
        })


def _command_without_secrets(command: str, ctx: "ToolContext") -> str:
    """The command as the audit log keeps it: no known secret's value, as for every other record."""
    try:
        return ctx.deps.secrets.redact(command)
    except Exception:  # noqa: BLE001 -- fail closed
        return "(withheld: it could not be checked for secret values)"


async def offer_preview(request: ApprovalRequest, call: "ToolCall", ctx: "ToolContext", raw_input: dict[str, object]) -> None:
    """Attach the Preview offer to a command's card (a no-op for any other call, or one that only reads)."""
    tool = call.definition
    if tool.name != "execute_command":
        return
    try:
        args = ExecuteCommandArgs.model_validate(raw_input)
    except ValueError:
        return
    subject = build_subject(tool, dict(raw_input), ctx.project_path)
    if read_only_command(subject, confined=True) is not None:
        return
    try:
        workdir = Path(os.path.realpath(ctx.resolve(args.cwd) if args.cwd else ctx.resolve(".")))
    except (ValueError, OSError):
        return  # the call itself will fail on its directory; nothing to preview
    try:
        problem = await _unfaithful(subject, workdir, ctx)
    except Exception as error:  # noqa: BLE001 -- a broken check must not hide the card: no preview, said why
        problem = f"the preview could not be prepared ({type(error).__name__}: {error})"
    if problem is not None:
        request.with_preview(PreviewOffer(available=False, reason=problem), None)
        return

    async def run() -> CommandPreview:
        sandbox = ctx.deps.sandbox()
        assert sandbox is not None
        env = command_env(ctx.deps.settings.current().merged.env)
        timeout = min(args.timeout_ms, MAX_TIMEOUT_MS) / 1000
        result = _without_secrets(await run_preview(sandbox, args.command, workdir, env=env, timeout=timeout), ctx)
        AuditLog(ctx.project_path).append(
            PreviewRecord(
                session_id=ctx.session_id,
                turn_id=ctx.turn_id,
                agent=ctx.agent,
                tool_use_id=call.tool_use_id,
                tool=tool.display_name or tool.name,
                command=_command_without_secrets(args.command, ctx),
                method=result.method,
                exit_code=result.exit_code,
                timed_out=result.timed_out,
                error=result.error,
                files=[{"path": f.path, "change": f.change} for f in result.files],
                more_files=result.more_files,
                seconds=result.seconds,
            )
        )
        return result

    sandbox = ctx.deps.sandbox()
    how = (
        "in a throwaway overlay of the project"
        if sandbox is not None and preview_method(sandbox) == "overlay"
        else "in a throwaway copy of the project"
    )
    request.with_preview(
        PreviewOffer(available=True, reason=f"runs the command {how}, sandboxed, without network"), run
    )
