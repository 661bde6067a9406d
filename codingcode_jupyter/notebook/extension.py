"""``%load_ext codingcode_jupyter``: the magics, the config class, and the two input transformers.

The cell transformer (:mod:`.async_cell`) rewrites a ``%%agent`` cell into an awaited
call; the line transformer here does the same for a line that is exactly ``%agent ...``.
Loading stays cheap: the engine and the SDK are imported after this returns, by a
background thread (:mod:`.prewarm`) that gives way to the person's cells; the first
``%%agent`` cell waits only for what it has not finished.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from . import async_cell, prewarm
from .config import CodingCode
from .magics import AgentMagics

__all__ = ["load", "unload", "loaded", "LINE_FUNCTION"]

LINE_FUNCTION = "__codingcode_agent_line__"
_STATE_KEY = "_codingcode_magics"


def _line_transformer(lines: list[str]) -> list[str]:
    """Rewrite a line that is exactly ``%agent ...`` into an awaited call."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines  # a cell magic's body is its own language, not Python with magics
    out = []
    for text in lines:
        stripped = text.rstrip("\r\n")
        if (stripped == "%agent" or stripped.startswith("%agent ")) and not stripped.rstrip().endswith("?"):
            out.append(f"await {LINE_FUNCTION}({stripped[len('%agent'):].strip()!r})\n")
        else:
            out.append(text)
    return out


def load(ip: Any) -> None:
    """Register the magics, the transformers and the config class on ``ip``."""
    if getattr(ip, _STATE_KEY, None) is not None:
        return
    config = CodingCode(parent=ip)
    ip.configurables.append(config)
    magics = AgentMagics(ip, config)
    ip.register_magics(magics)
    async_cell.install_transformer(ip, magics.run_cell)
    ip.input_transformers_cleanup.append(_line_transformer)
    ip.user_ns[LINE_FUNCTION] = magics.run_line
    ip.user_ns_hidden[LINE_FUNCTION] = magics.run_line
    # Errors and outputs are recorded from now on (for the kernel tools and %agent fix); the
    # kernel tools themselves are registered with the first session.
    from .kernel.outputs import install_recorders

    install_recorders(ip)
    from .env_secret import install_env_guard

    install_env_guard(ip)
    from .completion import install_completer

    install_completer(ip, lambda: magics.registry.project(None))
    setattr(ip, _STATE_KEY, magics)
    prewarm.start(ip, project=os.path.expanduser(config.project or os.getcwd()), session_warm_up=magics.registry.warm_up)


def loaded(ip: Any) -> AgentMagics | None:
    """The magics :func:`load` registered on ``ip`` (their sessions, their runner), None before it ran:
    a front in the same kernel (the ACP bridge) opens its sessions through them."""
    magics: AgentMagics | None = getattr(ip, _STATE_KEY, None)
    return magics


def _close_early_servers() -> None:
    """The MCP servers the loading started for a session that never opened."""
    if "codingcode_jupyter.engine.runtime" not in sys.modules:
        return
    from ..engine.runtime import close_early_servers

    try:
        asyncio.get_running_loop().create_task(close_early_servers())
    except RuntimeError:
        pass  # no loop runs: none started (they start on the kernel's loop)


def unload(ip: Any) -> None:
    """Remove what :func:`load` added (sessions are closed)."""
    magics: AgentMagics | None = getattr(ip, _STATE_KEY, None)
    if magics is None:
        return
    async_cell.uninstall_transformer(ip)
    prewarm.stop_pausing(ip)
    prewarm.wait()  # its last steps may still be registering the kernel tools removed below
    while _line_transformer in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.remove(_line_transformer)
    ip.user_ns.pop(LINE_FUNCTION, None)
    ip.user_ns_hidden.pop(LINE_FUNCTION, None)
    magics.registry.close_all()
    _close_early_servers()
    ip.magics_manager.magics["cell"].pop("agent", None)
    ip.magics_manager.magics["line"].pop("agent", None)
    if magics.settings in ip.configurables:
        ip.configurables.remove(magics.settings)
    if magics.registry.kernel_tools:
        from ..engine.tools.builtin import global_registry

        for tool in magics.registry.kernel_tools:
            global_registry().remove(tool.name)
    setattr(ip, _STATE_KEY, None)
