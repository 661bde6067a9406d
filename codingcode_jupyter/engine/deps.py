"""What a session is assembled with, in one typed object its tools and layers read.

``runtime.open_session`` builds one :class:`SessionDeps` per session; its agents' turns
(:class:`~.tools.base.AgentTurn`, which every :class:`~.tools.base.ToolContext` reads) carry it: the live settings, the
command sandbox (rebuilt when its settings change), the checkpoint store, the MCP manager,
what dispatch_agent needs, and the seams tests and embedders fill (an HTTP transport, a
web-search backend).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .project_settings import ProjectSettings

if TYPE_CHECKING:
    import httpx

    from .agents.env import DispatchEnv
    from .approval.review_state import ReviewerState
    from .approval.rule_syntax import Rule
    from .approval.unconfined_choice import UnconfinedChoice
    from .checkpoints import CheckpointStore
    from .hooks.lifecycle import LifecycleHooks
    from .mcp.manager import McpManager
    from .project_settings import EffectiveSettings
    from .sandbox import CommandSandbox
    from .secret_values import KnownSecrets
    from .settings import SandboxSettings
    from .tools.base import SearchBackend
    from .tools.registry import ToolRegistry

__all__ = ["SessionDeps", "SandboxFactory"]

log = logging.getLogger(__name__)

# Makes the sandbox for the current sandbox settings and the `.env` files a rule allows.
SandboxFactory = Callable[["SandboxSettings", list[str]], "CommandSandbox"]


@dataclass
class SessionDeps:
    """The parts of one session that tools and approval layers use (see the module docstring)."""

    project: Path
    settings: ProjectSettings
    registry: "ToolRegistry | None" = None
    mcp: "McpManager | None" = None
    checkpoints: "CheckpointStore | None" = None
    dispatch: "DispatchEnv | None" = None
    http_transport: "httpx.AsyncBaseTransport | None" = None
    web_search_backend: "SearchBackend | None" = None
    sandbox_factory: SandboxFactory | None = None
    # Auto mode's reviewer: this session's counts and whether it is paused.
    reviewer: "ReviewerState" = field(default_factory=lambda: _reviewer_state())
    # No sandbox here: the person's once-per-session choice about commands that would run unconfined.
    unconfined: "UnconfinedChoice" = field(default_factory=lambda: _unconfined_choice())
    _secrets: "KnownSecrets | None" = field(default=None, init=False, repr=False)
    _sandbox: "CommandSandbox | None" = field(default=None, init=False, repr=False)
    _hooks: "LifecycleHooks | None" = field(default=None, init=False, repr=False)
    _sandbox_key: str | None = field(default=None, init=False, repr=False)
    _closing: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        self.project = Path(self.project).resolve()

    @classmethod
    def of(cls, project: Path) -> "SessionDeps":
        """The parts of a session that has nothing but its project's settings (no sandbox, MCP,
        checkpoints or sub-agents): a tool run on its own, a session a test assembles."""
        return cls(project=Path(project), settings=ProjectSettings(Path(project)))

    @property
    def secrets(self) -> "KnownSecrets":
        """The values that never leave by value: the kernel's keys, the project's dotenv files, the token
        stores (made at first use; a test or an embedder may set its own)."""
        if self._secrets is None:
            from .secret_values import KnownSecrets

            self._secrets = KnownSecrets(self.project)
        return self._secrets

    @secrets.setter
    def secrets(self, known: "KnownSecrets") -> None:
        self._secrets = known

    @property
    def hooks(self) -> "LifecycleHooks":
        """The settings' hooks for the events outside approval (PostToolUse, Stop, SessionStart...)."""
        if self._hooks is None:
            from .hooks.lifecycle import LifecycleHooks

            self._hooks = LifecycleHooks(self.project, self.settings)
        return self._hooks

    def sandbox(self) -> "CommandSandbox | None":
        """The command sandbox for the settings as they are now; None when the session has none.

        A change of the sandbox settings (or of the `.env` files a rule allows) makes a new one;
        the old one's network proxy is closed in the background.
        """
        if self.sandbox_factory is None:
            return self._sandbox
        effective = self.settings.current()
        allowed = allowed_env_files(effective.rules)
        wanted = sandbox_settings(effective, self.project)
        key = wanted.model_dump_json() + "\0" + "\0".join(allowed)
        if self._sandbox is None or key != self._sandbox_key:
            old, self._sandbox = self._sandbox, self.sandbox_factory(wanted, allowed)
            self._sandbox_key = key
            if old is not None:
                self._close_later(old)
        return self._sandbox

    def use_sandbox_factory(self, factory: SandboxFactory) -> None:
        """Make the sandbox with ``factory`` from now on (embedders, tests); the current one is closed."""
        old, self._sandbox, self._sandbox_key = self._sandbox, None, None
        self.sandbox_factory = factory
        if old is not None:
            self._close_later(old)

    def _close_later(self, sandbox: "CommandSandbox") -> None:
        try:
            task = asyncio.get_running_loop().create_task(sandbox.aclose())
        except RuntimeError:
            return  # no loop: nothing of it is running either
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        if self._sandbox is not None:
            await self._sandbox.aclose()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


def _unconfined_choice() -> "UnconfinedChoice":
    from .approval.unconfined_choice import UnconfinedChoice

    return UnconfinedChoice()


def _reviewer_state() -> "ReviewerState":
    from .approval.review_state import ReviewerState

    return ReviewerState()


def sandbox_settings(effective: "EffectiveSettings", project: Path | None = None) -> "SandboxSettings":
    """The sandbox as the settings want it, with the one list of allowed domains (the sandbox's own
    and every ``domain:`` allow rule's), the variables the settings' ``env`` sets passed in, and
    (``project`` given) the person's deny rules for reading and editing as paths it hides and keeps
    read-only: a rule holds for what a command or the kernel's code does, seen by a judge or not."""
    sandbox = effective.merged.sandbox
    domains = list(effective.allowed_domains)
    names = [*sandbox.env, *[name for name in effective.merged.env if name not in sandbox.env]]
    from .approval.unconfined import fail_closed_by

    filesystem = sandbox.filesystem
    if project is not None:
        from .approval.rules import sandbox_globs

        real = Path(os.path.realpath(project))
        read = sandbox_globs(effective.rules, real, ("read_file",))
        write = sandbox_globs(effective.rules, real, ("edit_file", "write_file"))
        filesystem = filesystem.model_copy(update={
            "denyRead": list(dict.fromkeys([*filesystem.denyRead, *read])),
            "denyWrite": list(dict.fromkeys([*filesystem.denyWrite, *write])),
        })
    denied = [*(sandbox.network.deniedDomains or []),
              *[rule.pattern[len("domain:"):].strip() for rule in effective.rules
                if rule.action == "deny" and rule.pattern and rule.pattern.startswith("domain:")]]
    return sandbox.model_copy(update={
        "network": sandbox.network.model_copy(update={"allowedDomains": domains or None,
                                                      "deniedDomains": list(dict.fromkeys(denied)) or None}),
        "filesystem": filesystem,
        "env": names,
        # Any file saying it holds: a project's false does not undo the person's "Never on this machine".
        "failIfUnavailable": sandbox.failIfUnavailable or fail_closed_by(effective) is not None,
    })


def allowed_env_files(rules: tuple["Rule", ...]) -> list[str]:
    """The `.env` files a person allowed with a rule (``read_file(.env.example)``).

    The sandbox hides every other `.env` file of the project from commands.
    """
    from .secret_files import is_env_file

    allowed = []
    for rule in rules:
        if rule.action == "allow" and "read_file" in rule.tools and rule.match_pattern:
            pattern = rule.match_pattern.replace("\\", "").removeprefix("./")
            if is_env_file(pattern.rsplit("/", 1)[-1]):
                allowed.append(pattern)
    return allowed
