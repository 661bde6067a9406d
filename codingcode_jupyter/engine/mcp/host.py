"""What a connection hands on to whoever owns it: the server's requests, its log, its changes.

:class:`ConnectionHost` is the contract between a :class:`~.client.ServerConnection` and its
owner (the manager); :class:`LoneHost` is the owner of a connection made on its own, with
nobody to ask.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from .elicitation import ElicitationRequest, ElicitationResponse
from .origin import CallOrigin
from .sampling import SamplingDeclined, SamplingRequest, SamplingResult
from .server_log import LogEntry

if TYPE_CHECKING:
    from .client import ServerConnection

__all__ = ["Change", "ConnectionHost", "LoneHost"]

Change = Literal["state", "tools", "prompts", "resources", "login"]


class ConnectionHost(Protocol):
    """What a connection hands on: the server's requests, its log, and changes of its state."""

    async def sample(self, request: SamplingRequest) -> SamplingResult: ...

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse: ...

    def roots(self, server: ServerConnection | None = None) -> list[Path]: ...

    def server_logged(self, server: ServerConnection, entry: LogEntry, origin: CallOrigin | None) -> None: ...

    def server_changed(self, server: ServerConnection, change: Change) -> None: ...

    def refusal(self, server: ServerConnection) -> str | None:
        """Why the server may not start (a project's server the person has not trusted), or None."""
        ...

    def project_env(self) -> dict[str, str]:
        """Variables the project's settings set for its servers (their own ``env`` wins)."""
        ...


class LoneHost:
    """The host of a connection made on its own (tests, scripts): nobody to ask."""

    def __init__(self, project: Path) -> None:
        self.project = project

    async def sample(self, request: SamplingRequest) -> SamplingResult:
        raise SamplingDeclined("this client has nobody to approve sampling")

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        return ElicitationResponse.decline("nobody can be asked")

    def roots(self, server: ServerConnection | None = None) -> list[Path]:
        return [self.project]

    def server_logged(self, server: ServerConnection, entry: LogEntry, origin: CallOrigin | None) -> None:
        pass

    def server_changed(self, server: ServerConnection, change: Change) -> None:
        pass

    def refusal(self, server: ServerConnection) -> str | None:
        return None

    def project_env(self) -> dict[str, str]:
        return {}
