"""What the sandbox in force is, why that one, what it confines and what it does not cover.

One typed report read by ``%agent status`` (its first line), ``%agent doctor`` (all of it) and
``codingcode sandbox check`` (text or JSON), so the three cannot say different things.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal

from .launcher import PASSED_ENV

if TYPE_CHECKING:
    from .bwrap import CommandSandbox

__all__ = ["SandboxReport", "sandbox_report"]


@dataclass
class SandboxReport:
    """The sandbox of one project as a person should know it."""

    state: Literal["on", "unavailable", "disabled"]
    backend: Literal["bwrap", "landlock"] | None
    why: str
    confines: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        head = {"on": f"{self.backend}: on — {self.why}", "unavailable": f"none: {self.why}",
                "disabled": "off: sandbox.enabled is false in the settings"}[self.state]
        out = [head]
        out += [f"confines: {line}" for line in self.confines]
        out += [f"does not cover: {line}" for line in self.limits]
        return out

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def sandbox_report(sandbox: "CommandSandbox") -> SandboxReport:
    """The report for ``sandbox`` as it is now (settings read when it was made)."""
    if not sandbox.enabled:
        return SandboxReport("disabled", None, "sandbox.enabled is false")
    if not sandbox.active:
        from ..approval.types import when_unavailable

        then = when_unavailable(sandbox.fail_if_unavailable)
        return SandboxReport("unavailable", None, f"{sandbox.unavailable_reason} — {then}")
    view = sandbox.home_view()
    writable = ", ".join(str(root) for root in sandbox.writable_roots)
    protected = len(sandbox._protected_targets())
    home = ", ".join(str(path) for path in view.visible) or "nothing"
    confines = [
        f"writes: {writable} and a private temp directory, less {protected} protected path(s) "
        "(what git runs of .git, .codingcode, .mcp.json, the host-executed table, denyWrite), kept read-only "
        "or compared after each command",
        f"reads: the system (less shadow-like files) and of the home {sandbox.home} only: {home}"
        + ("; a filtered git configuration (no credential helper, http or url section)" if view.git_config else "")
        + "; dotenv files, credential stores, denyRead and ~/.codingcode hidden",
        f"network: {sandbox.network}" + (" (through the product's allowlist proxy)" if sandbox.allowed_domains else ""),
        "no new Unix socket (a Docker, systemd or ssh-agent socket of the host stays out of reach); no setuid bit",
        "environment: only " + ", ".join([*PASSED_ENV, *sandbox.settings.env]),
    ]
    return SandboxReport("on", sandbox.backend, sandbox.backend_reason, confines, sandbox.limits())
