"""The ACP agent: the editor's requests, answered by the sessions of one Jupyter kernel.

Each ``session/prompt`` is a turn the kernel runs as a cell (:mod:`.kernel_link`). What the turn
emits comes back in order on one queue per prompt and goes out as ``session/update``
notifications; each question is asked with ``session/request_permission`` in a task of its own
(so the updates keep flowing while the editor waits for the person) and its answer goes back
to the kernel, where the approval pipeline acts on it exactly as on a click. ``session/cancel``
is Stop: the kernel cancels the turn (its running command is killed as Stop kills it), and if it
has not ended after :data:`CANCEL_GRACE` seconds the kernel is interrupted as its button would.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthEnvVar,
    AuthMethodAgent,
    EnvVarAuthMethod,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionModeResponse,
    TerminalAuthMethod,
)

from .kernel_link import KernelError, KernelLink
from .updates import (
    MODES,
    answer_of,
    approval_permission,
    commands_update,
    engine_prompt,
    event_updates,
    history_updates,
    mcp_entries,
    modes_state,
    question_permission,
    stop_reason,
)
from .wire import turn_code

__all__ = ["CodingcodeAgent", "CANCEL_GRACE", "AUTH_METHODS"]

log = logging.getLogger(__name__)

# After session/cancel, how long the turn has to end before the kernel is interrupted.
CANCEL_GRACE = 5.0
# After a turn's cell finished, how long its last messages (on another channel) may lag behind.
LAST_WORDS_WAIT = 5.0

AUTH_METHODS: list[EnvVarAuthMethod | TerminalAuthMethod | AuthMethodAgent] = [
    EnvVarAuthMethod(type="env_var", id="anthropic-api-key", name="Anthropic API key",
                     description="ANTHROPIC_API_KEY in the agent's environment (or `%agent login` in its kernel)",
                     vars=[AuthEnvVar(name="ANTHROPIC_API_KEY", label="Anthropic API key")],
                     link="https://console.anthropic.com/settings/keys"),
    EnvVarAuthMethod(type="env_var", id="anthropic-gateway", name="A gateway or provider in front of the API",
                     description="ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN in the agent's environment",
                     vars=[AuthEnvVar(name="ANTHROPIC_BASE_URL", label="Base URL", secret=False),
                           AuthEnvVar(name="ANTHROPIC_AUTH_TOKEN", label="Token")]),
]


@dataclass
class _Turn:
    """One prompt under way: the kernel's messages for it, in order, and whether the editor cancelled it."""

    project: Path
    queue: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    cancelled: bool = False
    stop: str | None = None
    asking: set[asyncio.Task[None]] = field(default_factory=set)


class CodingcodeAgent:
    """ACP's Agent side (the ``acp`` package calls these methods by name)."""

    def __init__(self, *, existing: str | None = None, kernel_name: str | None = None) -> None:
        self.link = KernelLink(self._from_kernel, existing=existing, kernel_name=kernel_name)
        self.conn: Any = None
        self.projects: dict[str, Path] = {}
        self.turns: dict[str, _Turn] = {}
        self._background: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- set-up ---------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        from importlib.metadata import PackageNotFoundError, version

        try:
            ours = version("codingcode-jupyter")
        except PackageNotFoundError:
            ours = "0"
        # Edits and commands run in the kernel, judged, sandboxed and undoable there: the editor's fs and
        # terminal are not used (docs/acp.md says why).
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities())),
            auth_methods=AUTH_METHODS,
            agent_info=Implementation(name="codingcode", title="codingcode-jupyter", version=ours),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """There is nothing to log in to here: the key is the environment's (or the kernel's, after
        ``%agent login``). Says whether one is there."""
        if os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            return AuthenticateResponse()
        if self.link.started:
            try:
                if (await self.link.request("auth")).get("has_key"):
                    return AuthenticateResponse()
            except KernelError:
                pass
        raise RequestError.auth_required({"details": "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN with "
                                                     "ANTHROPIC_BASE_URL) in the agent's environment"})

    # -- sessions -------------------------------------------------------------------------

    async def _open(self, cwd: str, mcp_servers: Any, **fields: Any) -> dict[str, Any]:
        project = Path(cwd).expanduser()
        if not project.is_dir():
            raise RequestError.invalid_params({"cwd": f"{cwd} is not a directory"})
        try:
            await self.link.ensure(project)
            result: dict[str, Any] = await self.link.request("open", cwd=str(project),
                                                             mcp_servers=mcp_entries(mcp_servers), **fields)
        except KernelError as error:
            raise RequestError.internal_error({"details": str(error)}) from None
        self.projects[result["session_id"]] = Path(result["project"])
        return result

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        result = await self._open(cwd, mcp_servers)
        self._later(self._commands(result["session_id"], result["commands"]))
        return NewSessionResponse(session_id=result["session_id"], modes=modes_state(result["mode"]))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kwargs: Any) -> LoadSessionResponse:
        from ..engine.transcript import sessions_dir

        if not (sessions_dir(Path(cwd).expanduser()) / f"{session_id}.jsonl").is_file():
            raise RequestError.resource_not_found(session_id)
        result = await self._open(cwd, mcp_servers, session_id=session_id, resume=True)
        # The conversation so far is replayed before the answer, as the protocol asks.
        for update in history_updates(result["history"], self.projects[session_id]):
            await self.conn.session_update(session_id=session_id, update=update)
        self._later(self._commands(session_id, result["commands"]))
        return LoadSessionResponse(modes=modes_state(result["mode"]))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        from ..engine.session import list_sessions

        project = Path(cwd or os.getcwd()).expanduser().resolve()
        return ListSessionsResponse(sessions=[
            SessionInfo(session_id=info.id, cwd=str(project), title=info.first_prompt or None,
                        updated_at=info.created or None)
            for info in list_sessions(project)])

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        if mode_id not in MODES:
            raise RequestError.invalid_params({"modeId": f"no mode {mode_id!r}; the modes are {', '.join(MODES)}"})
        try:
            await self.link.request("mode", session_id=session_id, mode=mode_id)
        except KernelError as error:
            raise RequestError.invalid_params({"details": str(error)}) from None
        return SetSessionModeResponse()

    async def _commands(self, session_id: str, commands: list[dict[str, str]]) -> None:
        await self.conn.session_update(session_id=session_id, update=commands_update(commands))

    def _later(self, work: Any) -> None:
        """Run ``work`` after the answer now being given (a notification about a session the editor
        learns of from that answer)."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- turns ----------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        project = self.projects.get(session_id)
        if project is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id} (session/new or session/load first)"})
        if session_id in self.turns:
            raise RequestError.invalid_request({"details": "a prompt of this session is still running"})
        turn = self.turns[session_id] = _Turn(project)
        try:
            staged = await self.link.request("stage", session_id=session_id, prompt=engine_prompt(prompt))
            cell = asyncio.ensure_future(self.link.execute(turn_code(staged["token"])))
            cell.add_done_callback(lambda done: turn.queue.put_nowait({"type": "executed"}))
            await self._relay(session_id, turn, cell)
        except KernelError as error:
            raise RequestError.internal_error({"details": str(error)}) from None
        finally:
            del self.turns[session_id]
            for task in turn.asking:
                task.cancel()
        return PromptResponse(stop_reason=stop_reason(turn.stop or "end_turn", turn.cancelled))  # type: ignore[arg-type]

    async def _relay(self, session_id: str, turn: _Turn, cell: asyncio.Future[dict[str, Any]]) -> None:
        """The kernel's messages for the turn, passed on until it says it is done."""
        while True:
            if cell.done() and turn.queue.empty():
                # The cell ended; its last messages come on another channel and may lag a moment.
                try:
                    from ..engine.deadline import within

                    message = await within(turn.queue.get(), LAST_WORDS_WAIT)
                except asyncio.TimeoutError:
                    self._cell_ended(cell)
                    return
            else:
                message = await turn.queue.get()
            kind = message.get("type")
            if kind == "event":
                for update in event_updates(message["event"], message.get("extra"), turn.project):
                    await self.conn.session_update(session_id=session_id, update=update)
            elif kind == "question":
                task = asyncio.ensure_future(self._ask(session_id, message))
                turn.asking.add(task)
                task.add_done_callback(turn.asking.discard)
            elif kind == "done":
                turn.stop = str(message.get("stop_reason") or "end_turn")
                return
            elif kind == "dead":
                raise KernelError(str(message.get("why") or "the kernel is gone"))

    @staticmethod
    def _cell_ended(cell: asyncio.Future[dict[str, Any]]) -> None:
        """The turn's cell ended without saying how the turn did: its error, if it failed."""
        reply = cell.result()
        if reply.get("status") != "ok":
            raise KernelError(f"the turn failed in the kernel: {reply.get('ename')}: {reply.get('evalue')}")

    async def _ask(self, session_id: str, message: dict[str, Any]) -> None:
        """Ask the editor; the answer goes back to the kernel (None, nobody answered, if it failed or cancelled)."""
        answer: str | None = None
        try:
            if message.get("kind") == "approval":
                call, options = approval_permission(message)
                response = await self.conn.request_permission(session_id=session_id, tool_call=call, options=options)
                answer = answer_of(response.outcome, options)
            else:
                start, options = question_permission(message)
                await self.conn.session_update(session_id=session_id, update=start)
                response = await self.conn.request_permission(
                    session_id=session_id, tool_call=_as_update(start), options=options)
                answer = answer_of(response.outcome, options)
                from acp import update_tool_call

                await self.conn.session_update(session_id=session_id, update=update_tool_call(
                    start.tool_call_id, status="completed" if answer else "failed"))
        except Exception:  # noqa: BLE001 -- the editor failed to ask: nobody answered
            log.exception("the editor could not be asked")
        finally:
            self.link.notify("answer", question=message.get("id"), answer=answer)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        turn = self.turns.get(session_id)
        if turn is None:
            return
        turn.cancelled = True
        self.link.notify("cancel", session_id=session_id)
        self._later(self._interrupt_if_stuck(session_id, turn))

    async def _interrupt_if_stuck(self, session_id: str, turn: _Turn) -> None:
        await asyncio.sleep(CANCEL_GRACE)
        if self.turns.get(session_id) is turn:
            log.warning("the turn did not end %s s after cancel: interrupting the kernel", CANCEL_GRACE)
            await self.link.interrupt()

    def _from_kernel(self, message: dict[str, Any]) -> None:
        """A message of the kernel's, to the prompt it belongs to (a dead kernel ends them all)."""
        if message.get("type") == "dead":
            for running in self.turns.values():
                running.queue.put_nowait(message)
            return
        turn = self.turns.get(str(message.get("session_id")))
        if turn is not None:
            turn.queue.put_nowait(message)
        elif message.get("type") == "question":
            # Nobody waits for this session's turn any more: the question has nobody to answer it.
            self.link.notify("answer", question=message.get("id"), answer=None)

    async def close(self) -> None:
        """The editor went away: the sessions are closed in the kernel, a kernel started here is shut down."""
        for session_id in list(self.projects) if self.link.started else []:
            try:
                from ..engine.deadline import within

                await within(self.link.request("close", session_id=session_id), 10)
            except (KernelError, asyncio.TimeoutError):
                pass
        await self.link.close()


def _as_update(start: Any) -> Any:
    from acp.schema import ToolCallUpdate

    return ToolCallUpdate(tool_call_id=start.tool_call_id, title=start.title, kind=start.kind, status=start.status,
                          content=start.content)
