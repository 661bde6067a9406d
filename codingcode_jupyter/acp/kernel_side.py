"""The kernel's end of ``codingcode acp``: the comm the ACP process opens, its sessions, its turns.

Installed by the process's first cell (:data:`.wire.SETUP_CODE`), which also loads the
extension: the sessions are opened through the notebook's own session registry (the kernel
tools, the key from ``%agent login``, the notebook remembered), so an editor and a notebook on
the same kernel share its variables and its outputs. Requests arrive on the comm and run as
tasks on the kernel's loop; a turn runs as a cell (:func:`.wire.turn_code`), exactly as a
``%%agent`` cell does: the interrupt and op ``cancel`` end it as Stop does, and the comm's
messages reach it while it awaits (``async_cell.wait_answer`` pumps them on ipykernel 6).
Messages may arrive on another thread on ipykernel 7, hence ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..notebook import async_cell
from .kernel_front import RelayFront, history
from .wire import PROTOCOL, TARGET

if TYPE_CHECKING:
    from ..engine.events import TurnDone
    from ..engine.messages import ContentBlockParam
    from ..engine.session import Session, TurnOptions
    from ..notebook.magics import AgentMagics

__all__ = ["Bridge", "install", "turn"]

log = logging.getLogger(__name__)
_BRIDGE: "Bridge | None" = None


async def install(ip: Any) -> None:
    """Load the extension and listen for the ACP process's comm (once per kernel)."""
    global _BRIDGE
    ip.extension_manager.load_extension("codingcode_jupyter")
    if _BRIDGE is None or _BRIDGE.ip is not ip:
        _BRIDGE = Bridge(ip, asyncio.get_running_loop())
    _BRIDGE.register()


async def turn(token: str) -> None:
    """Run the staged turn ``token`` (the cell :func:`.wire.turn_code` writes)."""
    if _BRIDGE is None:
        raise RuntimeError("the ACP bridge is not installed in this kernel")
    await _BRIDGE.turn(token)


@dataclass
class _Staged:
    session_id: str
    prompt: "str | list[ContentBlockParam]"
    comm: Any


class _CommChannel:
    """What a turn's front sends and asks, on the comm of the process that runs the turn."""

    def __init__(self, bridge: "Bridge", comm: Any, session_id: str) -> None:
        self.bridge, self.comm, self.session_id = bridge, comm, session_id

    def send(self, data: dict[str, Any]) -> None:
        self.bridge.send(self.comm, data)

    async def ask(self, kind: str, payload: dict[str, Any]) -> str | None:
        return await self.bridge.ask(self.comm, self.session_id, kind, payload)


class Bridge:
    """The ACP sessions of one kernel, and the comms of the processes that drive them."""

    def __init__(self, ip: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.ip = ip
        self.loop = loop
        self.sessions: dict[str, Session] = {}
        self.staged: dict[str, _Staged] = {}
        # Session id -> (its running turn, the comm it reports to); question id -> (its answer, the comm asked).
        self.running: dict[str, tuple[asyncio.Future[Any], Any]] = {}
        self.questions: dict[str, tuple[asyncio.Future[str | None], Any]] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Future[Any]] = set()
        self._registered = False

    def register(self) -> None:
        if self._registered:
            return
        kernel = async_cell.kernel_of(self.ip)
        manager = getattr(kernel, "comm_manager", None)
        if manager is None:
            import comm

            manager = comm.get_comm_manager()
        manager.register_target(TARGET, self._on_open)
        self._registered = True

    def magics(self) -> AgentMagics:
        from ..notebook.extension import loaded

        magics = loaded(self.ip)
        if magics is None:
            raise RuntimeError("the codingcode_jupyter extension was unloaded in this kernel")
        return magics

    # -- the comm ------------------------------------------------------------------------

    def _on_open(self, comm: Any, message: dict[str, Any]) -> None:
        comm.on_msg(lambda msg: self._arrived(comm, msg))
        comm.on_close(lambda msg: self.loop.call_soon_threadsafe(self._closed, comm))
        self.send(comm, {"type": "hello", "protocol": PROTOCOL})

    def _arrived(self, comm: Any, message: dict[str, Any]) -> None:
        data = (message.get("content") or {}).get("data") or {}
        self.loop.call_soon_threadsafe(self._dispatch, comm, data)

    def send(self, comm: Any, data: dict[str, Any]) -> None:
        try:
            comm.send(data)
        except Exception:  # noqa: BLE001 -- the process went away: nothing to tell it
            log.debug("the ACP comm could not send", exc_info=True)

    def _dispatch(self, comm: Any, data: dict[str, Any]) -> None:
        op = data.get("op")
        if op == "answer":
            question = self.questions.get(str(data.get("question")))
            if question is not None and not question[0].done():
                answer = data.get("answer")
                question[0].set_result(answer if isinstance(answer, str) else None)
        elif op == "cancel":
            running = self.running.get(str(data.get("session_id")))
            if running is not None:
                running[0].cancel()
        else:
            task = asyncio.ensure_future(self._request(comm, data))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _closed(self, comm: Any) -> None:
        """The process closed its comm: its questions have nobody to answer them, its turns stop."""
        for future, asked_on in list(self.questions.values()):
            if asked_on is comm and not future.done():
                future.set_result(None)
        for token, staged in list(self.staged.items()):
            if staged.comm is comm:
                del self.staged[token]
        for task, reporting_to in list(self.running.values()):
            if reporting_to is comm:
                task.cancel()

    async def _request(self, comm: Any, data: dict[str, Any]) -> None:
        handlers = {"open": self._open, "stage": self._stage, "mode": self._mode, "close": self._close,
                    "auth": self._auth}
        request_id = data.get("id")
        handler = handlers.get(str(data.get("op")))
        try:
            if handler is None:
                raise ValueError(f"unknown request {data.get('op')!r}")
            result = await handler(comm, data)
        except Exception as error:  # noqa: BLE001 -- every failure is the request's answer
            from ..notebook.failures import one_line

            self.send(comm, {"type": "reply", "id": request_id, "ok": False, "error": one_line(error)})
        else:
            self.send(comm, {"type": "reply", "id": request_id, "ok": True, "result": result})

    async def ask(self, comm: Any, session_id: str, kind: str, payload: dict[str, Any]) -> str | None:
        """Ask the editor behind ``comm``; None when it went away."""
        question_id = f"q{next(self._ids)}"
        future: asyncio.Future[str | None] = self.loop.create_future()
        self.questions[question_id] = (future, comm)
        self.send(comm, {"type": "question", "id": question_id, "session_id": session_id, "kind": kind, **payload})
        try:
            return await async_cell.wait_answer(future, self.ip)
        finally:
            self.questions.pop(question_id, None)

    # -- requests ------------------------------------------------------------------------

    async def _open(self, comm: Any, data: dict[str, Any]) -> dict[str, Any]:
        """A new session in ``cwd`` (or the saved ``session_id`` when ``resume``), the editor's MCP servers added."""
        from ..notebook import prewarm

        await prewarm.ready(show=False)
        project = Path(str(data.get("cwd") or ".")).expanduser().resolve()
        if not project.is_dir():
            raise ValueError(f"the project directory {project} does not exist")
        session_id = data.get("session_id") or None
        resume = bool(data.get("resume"))
        session = self.sessions.get(session_id) if resume and session_id else None
        if session is None:
            session = self.magics().registry.open(project, session_id=session_id, resume=resume)
            self.sessions[session.id] = session
            await session.start()
            await _add_servers(session, data.get("mcp_servers") or {})
        return {"session_id": session.id, "project": str(session.project), "mode": session.mode_choice().mode,
                "commands": _commands(session.project),
                "history": history(session.conversation.messages) if resume else []}

    async def _stage(self, comm: Any, data: dict[str, Any]) -> dict[str, Any]:
        session_id = str(data.get("session_id"))
        if session_id not in self.sessions:
            raise KeyError(f"no session {session_id} in this kernel")
        token = f"t{next(self._ids)}"
        self.staged[token] = _Staged(session_id, data.get("prompt") or "", comm)
        return {"token": token}

    async def _mode(self, comm: Any, data: dict[str, Any]) -> dict[str, Any]:
        from ..engine.settings import MODES

        session = self._session(data)
        mode = data.get("mode")
        if mode not in MODES:
            raise ValueError(f"no mode {mode!r}; the modes are {', '.join(MODES)}")
        session.mode = mode
        return {"mode": session.mode_choice().mode}

    async def _close(self, comm: Any, data: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions.pop(str(data.get("session_id")), None)
        if session is not None:
            await session.aclose()
        return {}

    async def _auth(self, comm: Any, data: dict[str, Any]) -> dict[str, Any]:
        from ..engine.models import has_api_key
        from ..notebook.login import key_from_keyring

        key_from_keyring()
        return {"has_key": has_api_key()}

    def _session(self, data: dict[str, Any]) -> Session:
        session = self.sessions.get(str(data.get("session_id")))
        if session is None:
            raise KeyError(f"no session {data.get('session_id')} in this kernel")
        return session

    # -- turns ---------------------------------------------------------------------------

    async def turn(self, token: str) -> None:
        """Run the staged turn ``token`` (the cell the ACP process executed awaits this)."""
        from ..engine.events import ErrorEvent
        from ..notebook.failures import one_line

        staged = self.staged.pop(token, None)
        if staged is None:
            raise KeyError(f"no staged turn {token} (its process went away)")
        session = self.sessions[staged.session_id]
        channel = _CommChannel(self, staged.comm, session.id)
        front = RelayFront(channel, session.id, session.project)
        task = asyncio.ensure_future(self._run_turn(session, front, staged.prompt))
        self.running[session.id] = (task, staged.comm)
        stop, error = "error", ""
        try:
            async with async_cell.cancel_on_interrupt(task):
                done: TurnDone = await async_cell.wait_answer(task, self.ip)
            stop = done.stop_reason
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
            stop = "interrupted"
        except Exception as failure:  # noqa: BLE001 -- whatever ends the turn, the editor is told
            error = one_line(failure)
            front(ErrorEvent(session_id=session.id, message=error))
        finally:
            self.running.pop(session.id, None)
            if not task.done():
                task.cancel()
        channel.send({"type": "done", "token": token, "session_id": session.id, "stop_reason": stop, "error": error})

    async def _run_turn(self, session: Session, front: RelayFront, prompt: "str | list[ContentBlockParam]") -> TurnDone:
        session.mcp.attach_front(front)  # MCP notices and requests for input go to this editor
        try:
            await self.magics().runner.review_trust(session, front)
            request, options = await _request(session, prompt)
            return await session.run_turn(request, front, options=options)
        finally:
            session.mcp.detach_front(front)


async def _add_servers(session: Session, servers: dict[str, Any]) -> None:
    """The MCP servers the editor passes: the person's own, started for this session."""
    for name, entry in servers.items():
        try:
            await session.mcp.add(str(name), entry)
        except (ValueError, OSError) as error:
            session.pending_notices.append(f"The editor's MCP server {name} could not be added: {error}")


def _commands(project: Path) -> list[dict[str, str]]:
    """Slash commands and skills, as the editor lists them (``/name``)."""
    from ..engine.commands import load_commands
    from ..engine.project_settings import active_plugins
    from ..engine.skills import load_skills

    plugins = active_plugins(project)
    out = [{"name": command.name, "hint": command.argument_hint,
            "description": ("skill: " if command.kind == "skill" else "") + (command.description or f"/{command.name}")}
           for command in load_commands(project, plugins=plugins).listed()]
    named = {entry["name"] for entry in out}
    out += [{"name": skill.name, "description": f"skill: {skill.description}", "hint": ""}
            for skill in load_skills(project, plugins=plugins).listed() if skill.name not in named]
    return out


async def _request(session: Session, prompt: "str | list[ContentBlockParam]") -> tuple[Any, TurnOptions]:
    """The turn's request and options: a slash command expanded as a cell's is, a skill named as one, an
    MCP server's prompt (``/server:prompt``) filled in; anything else as it is."""
    from ..engine.commands import expand_command, load_commands, parse_slash
    from ..engine.session import TurnOptions
    from ..engine.skills import LOAD_SKILL, load_skills

    text = prompt if isinstance(prompt, str) else next((b["text"] for b in prompt if b["type"] == "text"), "")
    head = parse_slash(text) if text.lstrip().startswith("/") else None
    if head is None:
        return prompt, TurnOptions()
    name, arguments = head
    plugins = session.settings.active_plugins()
    catalog = load_commands(session.project, plugins=plugins)
    command = catalog.get(name)
    if command is not None:
        return prompt, TurnOptions(command=expand_command(command, arguments, session.project,
                                                          session_id=session.id))
    if name in load_skills(session.project, plugins=plugins).skills:
        return (f"Use the skill {name}: call {LOAD_SKILL}({name!r}) first and follow what it says."
                + (f"\n\n{arguments}" if arguments else "")), TurnOptions()
    if ":" in name:
        content = await session.mcp.expand_prompt(text)
        return (content if content is not None else prompt), TurnOptions()
    several = catalog.ambiguous.get(name)
    if several:
        raise ValueError(f"/{name} could be any of {', '.join(f'/{n}' for n in several)}: type the one you mean.")
    known = ", ".join(catalog.names()) or "none (.claude/commands/*.md)"
    raise ValueError(f"No slash command /{name}. Commands: {known}.")
