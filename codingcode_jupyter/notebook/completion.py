"""The kernel's completer offers slash commands after ``%%agent`` (``%%agent /re<Tab>``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from IPython.core.error import TryNext

__all__ = ["install_completer"]


def install_completer(ip: Any, project: Callable[[], Path]) -> None:
    """Complete ``/names`` of the slash commands of ``project()`` on a ``%%agent`` line."""

    def complete(_self: Any, event: Any) -> list[str]:
        symbol = getattr(event, "symbol", "") or ""
        if not symbol.startswith("/"):
            raise TryNext()
        from ..engine.commands import load_commands
        from ..engine.project_settings import active_plugins

        where = project()
        names = [name for name in load_commands(where, plugins=active_plugins(where)).names() if name.startswith(symbol)]
        if not names:
            raise TryNext()
        return names

    ip.set_hook("complete_command", complete, str_key="%%agent")
