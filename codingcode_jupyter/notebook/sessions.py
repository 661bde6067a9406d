"""The kernel's agent sessions: one per project (and per profile run as the main agent).

A session continues across cells; ``--new`` starts a fresh one. The engine is imported on
the first session, not when the extension loads, and the kernel tools join the process's
tool registry then.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .config import CodingCode

if TYPE_CHECKING:
    from ..engine.runtime import SessionParts
    from ..engine.session import Session
    from ..engine.tools.base import ToolDefinition

__all__ = ["Entry", "SessionRegistry"]


@dataclass
class Entry:
    """One open session and the parts it runs with."""

    session: "Session"
    parts: "SessionParts"


@dataclass
class SessionRegistry:
    """The sessions of one IPython shell, by project (and by profile for ``--agent``)."""

    shell: Any
    config: CodingCode
    sessions: dict[Path, Entry] = field(default_factory=dict)
    # `%%agent --agent NAME` runs the profile as the main agent: its own system prompt and
    # tools, so its own conversation, continued across cells that name the same profile.
    profile_sessions: dict[tuple[Path, str], Entry] = field(default_factory=dict)
    current: Path | None = None
    kernel_tools: list["ToolDefinition"] = field(default_factory=list)

    def project(self, override: str | None = None) -> Path:
        raw = override or self.config.project or os.getcwd()
        path = Path(os.path.expanduser(raw)).resolve()
        if not path.is_dir():
            raise UsageError(f"Project directory {raw!r} does not exist")
        return path

    def _engine(self) -> Any:
        """The engine's runtime, imported on first use; the kernel tools join its registry then."""
        from . import prewarm

        # Callers wait (without blocking) first; this covers any that does not: importing
        # the engine here while the thread is halfway through it would race its imports.
        prewarm.wait()
        from ..engine import runtime

        if not self.kernel_tools:
            from .kernel import register_kernel_tools

            self.kernel_tools = register_kernel_tools(runtime.global_registry(), self.shell)
        return runtime

    def warm_up(self) -> None:
        """Load the engine and register the kernel tools now (the prewarm thread does, before any cell)."""
        self._engine()

    def open(self, project: Path, **options: Any) -> Entry:
        """A session from the engine; a broken settings, profile or session file is one clear line."""
        try:
            session, parts = self._engine().open_session(
                project,
                model=self.config.model or None,
                mode=self.config.mode or None,
                approval_timeout=self.config.approval_timeout,
                **options,
            )
        except (ValueError, FileNotFoundError) as error:
            # SettingsError, ProfileError, McpConfigError, ContextWindowError are ValueErrors whose
            # message names the file and the entry: that is all a person needs, not a traceback.
            raise UsageError(str(error)) from None
        return Entry(session, parts)

    def entry(self, project: Path, *, new: bool = False) -> Entry:
        """The project's session, opened on first use (or anew)."""
        entry = self.sessions.get(project)
        if entry is None or new:
            fresh = self.open(project)
            if entry is not None:
                self.close_later(entry)
            entry = self.sessions[project] = fresh
        self.current = project
        return entry

    def profile_entry(self, project: Path, profile: str, *, new: bool = False) -> Entry:
        """The session that runs ``profile`` as the main agent in ``project``."""
        key = (project, profile)
        entry = self.profile_sessions.get(key)
        if entry is None or new:
            fresh = self.open(project, agent_profile=profile)
            if entry is not None:
                self.close_later(entry)
            entry = self.profile_sessions[key] = fresh
        return entry

    def replace(self, project: Path, entry: Entry) -> None:
        """Make ``entry`` the project's session (a resumed one), closing the one it replaces."""
        old = self.sessions.get(project)
        if old is not None:
            self.close_later(old)
        self.sessions[project] = entry
        self.current = project

    def current_entry(self) -> Entry:
        return self.entry(self.current or self.project())

    def close_later(self, entry: Entry) -> None:
        try:
            asyncio.get_running_loop().create_task(entry.parts.aclose())
        except RuntimeError:
            asyncio.run(entry.parts.aclose())

    def close_all(self) -> None:
        for entry in [*self.sessions.values(), *self.profile_sessions.values()]:
            self.close_later(entry)
        self.sessions.clear()
        self.profile_sessions.clear()
