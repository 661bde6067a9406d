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
    from ..engine.session import Session
    from ..engine.tools.base import ToolDefinition

__all__ = ["SessionRegistry"]


@dataclass
class SessionRegistry:
    """The sessions of one IPython shell, by project (and by profile for ``--agent``)."""

    shell: Any
    config: CodingCode
    sessions: dict[Path, "Session"] = field(default_factory=dict)
    # `%%agent --agent NAME` runs the profile as the main agent: its own system prompt and
    # tools, so its own conversation, continued across cells that name the same profile.
    profile_sessions: dict[tuple[Path, str], "Session"] = field(default_factory=dict)
    current: Path | None = None
    kernel_tools: list["ToolDefinition"] = field(default_factory=list)

    def project(self, override: str | None = None) -> Path:
        """The project a cell or subcommand acts on: its own ``--project``, else the notebook's
        current one (the last ``--project`` or ``%agent project``), else the configured one,
        else the kernel's working directory."""
        if not override and self.current is not None:
            return self.current
        raw = override or self.config.project or os.getcwd()
        path = Path(os.path.expanduser(raw)).resolve()
        if not path.is_dir():
            raise UsageError(f"Project directory {raw!r} does not exist")
        return path

    def known_projects(self) -> list[Path]:
        """Projects with saved sessions: the ones this kernel used, the working directory, and
        directories up to two levels below it that hold ``.codingcode/sessions``."""
        found: list[Path] = []

        def add(path: Path) -> None:
            path = path.resolve()
            if path not in found and (path / ".codingcode" / "sessions").is_dir():
                found.append(path)

        for path in [*(p for p in [self.current] if p), *self.sessions, *(p for p, _ in self.profile_sessions)]:
            add(path)
        root = Path(self.config.project or os.getcwd())
        add(root)
        for child in sorted(_subdirectories(root, depth=2)):
            add(child)
        return found

    def _engine(self) -> Any:
        """The engine's runtime, imported on first use; the kernel tools join its registry then."""
        from . import prewarm

        # Callers wait (without blocking) first; this covers any that does not: importing
        # the engine here while the thread is halfway through it would race its imports.
        prewarm.wait()
        from ..engine import runtime
        from ..engine.tools.builtin import global_registry

        if not self.kernel_tools:
            from .kernel.names import declare_kernel_tools
            from .kernel.tools import register_kernel_tools

            declare_kernel_tools()  # before any session reads settings (when the prewarm did not run)
            self.kernel_tools = register_kernel_tools(global_registry(), self.shell)
        return runtime

    def warm_up(self) -> None:
        """Load the engine and register the kernel tools now (the prewarm thread does, before any cell)."""
        self._engine()

    def open(self, project: Path, **options: Any) -> "Session":
        """A session from the engine; a broken settings, profile or session file is one clear line."""
        from .login import key_from_keyring

        key_from_keyring()  # a key saved by `%agent login --keyring` in an earlier kernel
        try:
            session: Session = self._engine().open_session(
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
        notebook = self.notebook()
        if notebook and not options.get("resume"):
            # The session remembers its notebook: after a restart, undo acts on this notebook's sessions only.
            from ..engine.transcript import OriginRecord

            session.transcript.write(OriginRecord(notebook=notebook))
        return session

    def notebook(self) -> str:
        """The notebook file this kernel serves, "" when none is known (a terminal, a console)."""
        from .kernel.notebook_file import find_notebook

        try:
            path = find_notebook(getattr(self.shell, "user_ns", {})).path
        except Exception:  # noqa: BLE001 -- no frontend said which file: nothing to remember
            return ""
        return str(path) if path is not None else ""

    def session(self, project: Path, *, new: bool = False) -> "Session":
        """The project's session, opened on first use (or anew)."""
        session = self.sessions.get(project)
        if session is None or new:
            fresh = self.open(project)
            if session is not None:
                self.close_later(session, reason="clear")
            session = self.sessions[project] = fresh
        self.current = project
        return session

    def profile_session(self, project: Path, profile: str, *, new: bool = False) -> "Session":
        """The session that runs ``profile`` as the main agent in ``project``."""
        key = (project, profile)
        session = self.profile_sessions.get(key)
        if session is None or new:
            fresh = self.open(project, agent_profile=profile)
            if session is not None:
                self.close_later(session, reason="clear")
            session = self.profile_sessions[key] = fresh
        self.current = project
        return session

    def replace(self, project: Path, session: "Session") -> None:
        """Make ``session`` the project's session (a resumed one), closing the one it replaces."""
        old = self.sessions.get(project)
        if old is not None:
            self.close_later(old)
        self.sessions[project] = session
        self.current = project

    def current_session(self) -> "Session":
        return self.session(self.current or self.project())

    def close_later(self, session: "Session", reason: str = "other") -> None:
        """Close ``session`` (its SessionEnd hooks are told ``reason``: "clear" when a new session replaces it)."""
        try:
            asyncio.get_running_loop().create_task(session.aclose(reason))
        except RuntimeError:
            asyncio.run(session.aclose(reason))

    def close_all(self) -> None:
        for session in [*self.sessions.values(), *self.profile_sessions.values()]:
            self.close_later(session)
        self.sessions.clear()
        self.profile_sessions.clear()


_SKIPPED = {".git", ".venv", "venv", "node_modules", "__pycache__", ".ipynb_checkpoints", ".mypy_cache", ".tox"}


def _subdirectories(root: Path, depth: int) -> list[Path]:
    """Directories under ``root``, at most ``depth`` levels down, skipping hidden and tool directories."""
    out: list[Path] = []
    try:
        children = [c for c in root.iterdir() if c.is_dir() and c.name not in _SKIPPED and not c.name.startswith(".")]
    except OSError:
        return out
    for child in children:
        out.append(child)
        if depth > 1:
            out.extend(_subdirectories(child, depth - 1))
    return out
