"""run_python's confined path: the fork runs the code (:mod:`.fork`), the kernel shows what it
displayed, binds what the call asked to keep, and puts to the person any file the host runs that
the code left (as after a command)."""

from __future__ import annotations

import base64
import binascii
import time
import types
from typing import Any

from ...engine.approval.host_files import settle_host_files
from ...engine.tools.base import ContentBlock, ToolContext, ToolResult, text_block
from ...engine.tools.images import MAX_IMAGE_BYTES, image_block, sniff_image
from .fork import ForkResult, run_in_fork
from .namespace import KernelAccess
from .run_python import RunPythonArgs

__all__ = ["run_confined"]

# Figures the model sees from one run (each is a full image block).
MAX_IMAGES = 3


async def run_confined(access: KernelAccess, args: RunPythonArgs, ctx: ToolContext) -> ToolResult:
    sandbox = ctx.deps.sandbox()
    assert sandbox is not None, "confined_plan() checked the sandbox"
    # The fork confines itself with Landlock (the top level writable): every file the host runs is compared.
    watch = sandbox.watch_host(landlock=True)
    started = time.monotonic()
    result = await run_in_fork(access.user_ns, access.shell, args.code, timeout=args.timeout, keep=list(args.keep),
                               plan=sandbox.compared_landlock_plan(watch), progress=ctx.progress,
                               extra_env=sandbox.settings.env)
    elapsed = time.monotonic() - started
    notes = await settle_host_files(watch, "run_python", ctx)
    if result.confinement_error is not None:
        return ToolResult.text(f"The code was not run: its confined copy of the kernel could not confine itself "
                               f"({result.confinement_error}).", is_error=True)
    _show(access.shell, result.displays)
    kept = _bind(access, result)
    text = _text(result, args.timeout, kept, notes, elapsed)
    images = _images(result.displays)
    failed = result.failure is not None or result.timed_out
    return ToolResult([text_block(text), *images], is_error=failed)


def _show(shell: Any, displays: list[dict[str, Any]]) -> None:
    """What the code displayed, shown in the cell as if it had run there."""
    if shell is None:
        return
    for shown in displays:
        shell.display_pub.publish(data=shown.get("data") or {}, metadata=shown.get("metadata") or {})


def _bind(access: KernelAccess, result: ForkResult) -> list[str]:
    """Bind the kept values; a name bound to a module, a function or a class stays as it is (data
    never replaces code the person's cells use). The names bound, and the refusals in ``result``."""
    namespace = access.user_ns
    bound = []
    for name, value in result.kept.items():
        current = namespace.get(name)
        if isinstance(current, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)):
            result.refused[name] = "it would replace a module, function or class of the notebook"
            continue
        namespace[name] = value
        bound.append(name)
    return bound


def _text(result: ForkResult, timeout: float, kept: list[str], notes: list[str], elapsed: float) -> str:
    sections = []
    if result.stdout:
        sections.append(f"[stdout]\n{result.stdout.rstrip()}")
    if result.stderr:
        sections.append(f"[stderr]\n{result.stderr.rstrip()}")
    if result.value_repr is not None:
        sections.append(f"[result] {result.value_repr}")
    if result.displays:
        kinds = ", ".join(sorted({kind for shown in result.displays for kind in (shown.get("data") or {})}))
        sections.append(f"[displayed] {len(result.displays)} output(s): {kinds}")
    if result.timed_out:
        sections.append(f"[error] Stopped after {timeout:g} s (timeout).")
    elif result.failure:
        sections.append("[error]\n" + result.failure.rstrip())
    if kept:
        sections.append(f"[kept] {', '.join(kept)} now in the notebook's namespace")
    for name, why in result.refused.items():
        sections.append(f"[not kept] {name}: {why}")
    sections.extend(notes)
    if not sections:
        sections.append("(ran without output)")
    sections.append(f"({elapsed:.2f} s, in a confined copy of the kernel: what it changed in the namespace stays "
                    "there unless kept)")
    return "\n".join(sections)


def _images(displays: list[dict[str, Any]]) -> list[ContentBlock]:
    blocks = []
    for shown in displays:
        encoded = (shown.get("data") or {}).get("image/png")
        if not isinstance(encoded, str):
            continue
        try:
            data = base64.b64decode(encoded, validate=False)
        except (binascii.Error, ValueError):
            continue
        if sniff_image(data[:16]) == "image/png" and len(data) <= MAX_IMAGE_BYTES:
            blocks.append(image_block(data, "image/png"))
        if len(blocks) >= MAX_IMAGES:
            break
    return blocks
