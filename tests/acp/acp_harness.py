"""A real ACP client (the ``acp`` package's client side) driving ``codingcode acp`` over stdio.

The agent is spawned as an editor spawns it, in a fresh project, with the fake Messages API
as its model; its kernel is one it starts (or ``--existing``). The client records every
``session/update`` and answers each ``session/request_permission`` as the test's ``choose``
says (by default: allow once).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from acp import spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

__all__ = ["RecordingClient", "agent_process", "texts", "updates_of"]


class RecordingClient:
    """The editor: records updates and questions, answers questions with ``choose``."""

    def __init__(self, choose: Callable[[ToolCallUpdate, list[PermissionOption]], str | None] | None = None) -> None:
        self.updates: list[Any] = []
        self.questions: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.choose = choose or (lambda call, options: _first(options, "allow_once"))
        # The agent's process, once spawned.
        self.process: Any = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.questions.append((tool_call, options))
        picked = self.choose(tool_call, options)
        if picked is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=picked))


def _first(options: list[PermissionOption], kind: str) -> str:
    return next(option.option_id for option in options if option.kind == kind)


def updates_of(client: RecordingClient, kind: str) -> list[Any]:
    return [update for update in client.updates if update.session_update == kind]


def texts(client: RecordingClient, kind: str = "agent_message_chunk") -> str:
    return "".join(update.content.text for update in updates_of(client, kind) if update.content.type == "text")


def agent_env(fake_url: str) -> dict[str, str]:
    """The environment the editor starts the agent with: the fake API, and this test's own user directories."""
    keep = {name: os.environ[name] for name in ("CODINGCODE_USER_DIR", "CLAUDE_CONFIG_DIR", "CODINGCODE_TRUST",
                                                "PATH", "HOME") if name in os.environ}
    return {**keep, "ANTHROPIC_BASE_URL": fake_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
            "CODINGCODE_PRECONNECT": "0"}


@contextlib.asynccontextmanager
async def agent_process(client: RecordingClient, project: Path, fake_url: str,
                        *args: str) -> AsyncIterator[Any]:
    """``codingcode acp`` spawned over stdio, initialized; yields the client's connection to it."""
    async with spawn_agent_process(client, sys.executable, "-m", "codingcode_jupyter", "acp", *args,
                                   env=agent_env(fake_url), cwd=str(project),
                                   transport_kwargs={"stderr": None, "shutdown_timeout": 30.0}) as (conn, process):
        client.process = process
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        yield conn
