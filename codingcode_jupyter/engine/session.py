"""A conversation that lasts across cells and kernel restarts.

Each session is a JSONL transcript under ``.codingcode/sessions/<id>.jsonl``: a header, then
every message as it is appended, every todo change and every turn's usage. Resuming replays
it. The transcript keeps everything; what is sent to the model may be shortened
(compaction) without touching it.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from pydantic import BaseModel

from . import telemetry
from .agent import AgentLoop, ContextKeeper, Conversation, ToolSource, merge_message
from .approval.types import Asker
from .events import ErrorEvent, EventSink, Notice, TextDelta, TodoUpdated, ToolCallStarted, TurnDone, Usage
from .front import Front
from .managed import apply_env
from .messages import ContentBlockParam, MessageParam, ResultPartParam, blocks, text_block, tool_result, user_blocks
from .models import make_model, resolve_model_name
from .models.clients import use_key_helper
from .modes import ModeChoice, decide_mode
from .settings import PermissionMode
from .state import SessionState
from .tools.base import Approver
from .transcript import (
    CompactionRecord,
    MessageRecord,
    OriginRecord,
    SessionHeader,
    TodoRecord,
    Transcript,
    TurnRecord,
    UsageRecord,
    sessions_dir,
)
from .turn_rules import end_turn, grant_for_turn

if TYPE_CHECKING:
    from .agents.profiles import AgentProfile
    from .approval.pipeline import ApprovalPipeline
    from .commands import CommandRequest
    from .deps import SessionDeps
    from .hooks.lifecycle import EventOutcome
    from .mcp.manager import McpManager
    from .project_settings import ProjectSettings
    from .sandbox import CommandSandbox
    from .tools.resolver import SessionToolResolver
    from .trust.items import TrustItem

log = logging.getLogger(__name__)

# The events that say the model has answered (the first of them ends the first request's wait).
_ANSWERS = (TextDelta, ToolCallStarted, TurnDone, ErrorEvent)

# The project's first snapshot starts this long after the model's first answer arrived: its
# first text is shown at once, the next update one display interval (50 ms) later, and the
# snapshot's git processes in between would hold that first text back.
AFTER_FIRST_ANSWER_S = 0.05

__all__ = ["Session", "SessionInfo", "TurnOptions", "Transcript", "list_sessions", "new_session_id"]


def new_session_id() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


class SessionInfo(BaseModel):
    id: str
    created: str
    model: str = ""
    turns: int = 0
    first_prompt: str = ""
    path: str
    # The document the session was started from, as the front named it (an "origin" record).
    notebook: str = ""


def list_sessions(project: Path) -> list[SessionInfo]:
    """Sessions saved in the project, newest first."""
    infos = []
    for path in sorted(sessions_dir(project).glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True):
        records = Transcript(path).read()
        header = next((r for r in records if isinstance(r, SessionHeader)), SessionHeader())
        origin = next((r for r in records if isinstance(r, OriginRecord)), OriginRecord())
        prompts = [content for r in records if isinstance(r, MessageRecord)
                   and r.message.get("role") == "user" and isinstance(content := r.message.get("content"), str)]
        infos.append(
            SessionInfo(
                id=path.stem,
                created=header.created,
                model=header.model,
                turns=sum(1 for r in records if isinstance(r, TurnRecord)),
                first_prompt=(prompts[0][:80] if prompts else ""),
                path=str(path),
                notebook=origin.notebook,
            )
        )
    return infos


@dataclass(frozen=True)
class TurnOptions:
    """What one ``%%agent`` cell asks of its turn; None keeps the session's own choice."""

    mode: PermissionMode | None = None
    approval_timeout: float | None = None
    model: str | None = None
    # A slash command the turn runs (its `!` lines run first, its allowed-tools hold for the turn).
    command: "CommandRequest | None" = None


@dataclass
class Session:
    """One conversation with the agent in one project, and the parts it runs with.

    The collaborators that vary — the session's parts (``deps``: its project, settings, hooks,
    sandbox, MCP servers...), the tool source, the approver, the system prompt, the context
    keeper — are passed in by whoever assembles the session (``runtime.open_session``). The
    session keeps the conversation, its transcript, its totals, the choices that last across
    turns (mode, model, timeout), what the person said about trusting the project, and closes
    its parts (:meth:`aclose`). What each agent of the session remembers between calls
    (:class:`~.state.SessionState`) stays separate: every sub-agent has its own.
    """

    deps: "SessionDeps"
    tools: ToolSource
    approver: Approver
    id: str = field(default_factory=new_session_id)
    model_name: str | None = None
    system: str | Callable[[], str] = ""
    state: SessionState = field(default_factory=SessionState)
    max_steps: int = 100
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    turns: int = 0
    conversation: Conversation = field(default_factory=Conversation)
    last_model: str | None = None
    # The session's own mode (`%agent mode NAME`, the notebook's CodingCode.mode); None: the settings'.
    mode: PermissionMode | None = None
    # A profile running as the main agent tightens every turn's mode to its own.
    profile_mode: PermissionMode | None = None
    profile_name: str | None = None
    # Whether that mode may loosen the session's (the profile is the person's own, or trusted).
    profile_mode_trusted: bool = False
    approval_timeout: float | None = None
    # One-time notices (e.g. the sandbox is unavailable) shown at the start of the next turn.
    pending_notices: list[str] = field(default_factory=list)
    # Context hooks gave outside a turn (`%agent setup`), sent with the next prompt.
    pending_context: list[str] = field(default_factory=list)
    # The settings files' warnings already shown (an invalid value left out): one edited while the
    # session is open is told at the next turn, once, not only by %agent status.
    shown_warnings: set[str] = field(default_factory=set)
    # Keeps what is sent inside the context window (context.compactor.Compactor).
    context: ContextKeeper | None = None
    # Whether the SessionStart hooks ran (at the session's first turn in this kernel).
    started_hooks: bool = False
    # Called once, when the model first answers in this session (text, a tool call, the end of
    # its response, an error): work that may wait until then (the project's first snapshot)
    # waits, so it does not compete with the first request for the interpreter.
    on_first_answer: list[Callable[[], object]] = field(default_factory=list)
    answered: bool = False
    # The profile the main agent runs under (``%%agent --agent NAME``), None for the default agent.
    profile: "AgentProfile | None" = None
    # Whether :meth:`start` asked for the MCP servers.
    started: bool = False
    # Fingerprints the person answered "Not now" to in this kernel session.
    declined: set[str] = field(default_factory=set)
    _warming: "asyncio.Future[None] | None" = field(default=None, init=False, repr=False)
    # The marketplaces whose settings say autoUpdate, fetched again once the session has started.
    plugin_update: "asyncio.Task[list[str]] | None" = field(default=None, init=False, repr=False)
    _warm_timer: "asyncio.TimerHandle | None" = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.transcript = Transcript(sessions_dir(self.project) / f"{self.id}.jsonl")
        self.conversation.on_append = lambda message: self.transcript.write(MessageRecord(message=message))
        if not self.transcript.path.exists():
            self.transcript.write(SessionHeader(id=self.id, created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                                project=str(self.project), model=self.model_name or ""))

    @property
    def project(self) -> Path:
        return self.deps.project

    # -- the parts, as open_session assembled them ------------------------------------------

    @property
    def settings(self) -> "ProjectSettings":
        return self.deps.settings

    @property
    def mcp(self) -> "McpManager":
        assert self.deps.mcp is not None, "a session opened by open_session has its MCP manager"
        return self.deps.mcp

    def sandbox(self) -> "CommandSandbox":
        sandbox = self.deps.sandbox()
        assert sandbox is not None, "a session opened by open_session has its sandbox"
        return sandbox

    @property
    def resolver(self) -> "SessionToolResolver":
        """The tools the session offers, as open_session assembled them (its ``tools``)."""
        from .tools.resolver import SessionToolResolver

        if not isinstance(self.tools, SessionToolResolver):
            raise TypeError(f"this session's tools are a {type(self.tools).__name__}, not a SessionToolResolver")
        return self.tools

    @property
    def pipeline(self) -> "ApprovalPipeline":
        """The approval pipeline, as open_session assembled it (its ``approver``)."""
        from .approval.pipeline import ApprovalPipeline

        if not isinstance(self.approver, ApprovalPipeline):
            raise TypeError(f"this session's approver is a {type(self.approver).__name__}, not an ApprovalPipeline")
        return self.approver

    # -- trust ---------------------------------------------------------------------------

    def pending_trust(self) -> "list[TrustItem]":
        """What the project's files ask for that is not trusted (so ignored), not yet declined here."""
        return [item for item in self.settings.current().ignored if item.fingerprint not in self.declined]

    def trust(self, items: "list[TrustItem] | None" = None, *, by: str = "user") -> "list[TrustItem]":
        """Trust ``items`` (default: all pending), remembered per content, and audit it."""
        from .trust.decisions import record_trust

        granted = self.settings.trust(items if items is not None else self.pending_trust())
        if granted:
            record_trust(self.project, "trust", granted, by=by, session_id=self.id)
            if any(item.kind == "plugin" for item in granted):
                self.mcp.refresh_plugins()  # the servers of the plugins just trusted join
            if any(item.kind in ("mcp", "plugin") for item in granted):
                self.mcp.start_background()  # the servers just trusted start now
        return granted

    def decline(self, *, by: str = "user") -> "list[TrustItem]":
        """"Not now": the session runs untrusted and is not asked again until ``%agent trust``."""
        from .trust.decisions import record_trust

        pending = self.pending_trust()
        self.declined.update(item.fingerprint for item in pending)
        if pending:
            record_trust(self.project, "not now", pending, by=by, session_id=self.id)
        return pending

    def revoke_trust(self, *, by: str = "user") -> None:
        """Forget every trust decision about the project (asked again at the next cell)."""
        from .trust.decisions import record_trust

        trusted = [item for item in self.settings.current().items if item not in self.settings.current().ignored]
        self.settings.revoke()
        self.declined.clear()
        record_trust(self.project, "revoke", trusted, by=by, session_id=self.id)

    # -- the parts' life -------------------------------------------------------------------

    async def start(self) -> None:
        """Ask for what needs the event loop: the plugins' git marketplaces fetched (on a worker thread,
        once: what they bring is known before the first turn), then the MCP servers, in the background
        (a turn waits for them briefly, see mcp.startup)."""
        if not self.started:
            self.started = True
            await self.fetch_plugins()
            self.mcp.start_background()
            # In the background: the session already has the copies on disk, and a fetch can take a while.
            self.plugin_update = asyncio.ensure_future(self._auto_update_plugins())

    async def _auto_update_plugins(self) -> list[str]:
        """Fetch again the git marketplaces whose ``autoUpdate`` is true, and the enabled plugins of them,
        as Claude Code does when it starts; what could not be is said with the next turn."""
        try:
            markets = [market.name for market in self.settings.current().plugins.marketplaces
                       if market.auto_update and market.source.fetched]
        except ValueError:
            return []
        problems: list[str] = []
        for name in markets:
            problems += await self.fetch_plugins(update=True, only=name)
        return problems

    async def setup(self, trigger: str = "init") -> "EventOutcome":
        """Setup hooks (``%agent setup``, Claude Code's ``--init`` / ``--maintenance``); their context goes
        with the next prompt."""
        outcome = await self.deps.hooks.setup(session_id=self.id, trigger=trigger)
        self.pending_context.extend(outcome.context)
        return outcome

    async def fetch_plugins(self, *, update: bool = False, only: str | None = None) -> list[str]:
        """Clone what the enabled plugins need that is not here yet (``update``: again); what could not be
        is said with the next turn and returned."""
        from .plugins.catalog import fetch_plugins

        try:
            effective = self.settings.current()
        except ValueError:
            return []
        if not update and not any("not fetched yet" in (plugin.problem or "") for plugin in effective.plugins.plugins):
            return []
        problems = await asyncio.to_thread(fetch_plugins, self.project, effective.layers, update=update, only=only)
        self.pending_notices.extend(f"Plugins: {problem}" for problem in problems)
        self.mcp.refresh_plugins()
        return problems

    def snapshot_soon(self) -> None:
        """The model answered for the first time: the project's first snapshot, which waited so as
        not to compete with its first request, starts (see :data:`AFTER_FIRST_ANSWER_S`)."""
        if self.deps.checkpoints is not None and self._warm_timer is None:
            # The first snapshot of a project takes seconds when it is big (git processes, a worker
            # thread): taken now, the turn's own snapshot before its first edit is quick.
            self._warm_timer = asyncio.get_running_loop().call_later(AFTER_FIRST_ANSWER_S, self._warm)

    def _warm(self) -> None:
        if self.deps.checkpoints is not None:
            self._warming = asyncio.ensure_future(asyncio.to_thread(self.deps.checkpoints.warm))

    async def aclose(self, reason: str = "other") -> None:
        """Close the session: its SessionEnd hooks (``reason``: "clear" for a new session, else "other"), its parts."""
        try:
            await self.deps.hooks.session_end(session_id=self.id, reason=reason)
        finally:
            if self._warm_timer is not None:
                self._warm_timer.cancel()
            if self._warming is not None:
                await asyncio.gather(self._warming, return_exceptions=True)
            if self.plugin_update is not None and not self.plugin_update.done():
                # A clone under way finishes in its thread; its result is no longer wanted.
                self.plugin_update.cancel()
                await asyncio.gather(self.plugin_update, return_exceptions=True)
            if self.deps.mcp is not None:
                await self.deps.mcp.aclose()
            await self.deps.aclose()

    # -- resume ---------------------------------------------------------------------------

    def load(self) -> None:
        """Replay the transcript on disk into this session (messages, todo, totals)."""
        self.conversation.messages.clear()
        for record in self.transcript.read():
            if isinstance(record, MessageRecord):
                merge_message(self.conversation.messages, record.message)
            elif isinstance(record, TodoRecord):
                self.state.todo = list(record.items)
            elif isinstance(record, TurnRecord):
                self.turns = max(self.turns, record.turn_id or 0)
                self.usage = self.usage + record.usage
                self.cost += record.cost_usd or 0.0
            elif isinstance(record, SessionHeader) and not self.model_name:
                self.model_name = record.model or None
            elif isinstance(record, CompactionRecord):
                from .context.transforms import apply_compaction, key_of_tools

                self.conversation.messages[:] = apply_compaction(
                    self.conversation.messages, record, key_of_tools(self.tools))
            elif isinstance(record, UsageRecord):
                self.usage = self.usage + record.usage
                self.cost += record.cost_usd or 0.0
        _drop_unanswered_tool_use(self.conversation.messages)

    # -- one turn -------------------------------------------------------------------------

    def mode_choice(self, cell: PermissionMode | None = None) -> ModeChoice:
        """The permission mode a turn runs in, and what decided it."""
        return decide_mode(cell=cell, session=self.mode, settings=self.deps.settings.current(), profile=self.profile_mode,
                           profile_name=self.profile_name, profile_trusted=self.profile_mode_trusted)

    def default_model(self) -> str | None:
        """The model asked for: the session's, else the project settings' ``model``."""
        return self.model_name or self.deps.settings.current().merged.model

    def _settings_warnings(self) -> None:
        """Queue the settings files' warnings not shown yet (the files are read afresh each turn)."""
        for warning in self.settings.current().warnings:
            if warning not in self.shown_warnings:
                self.shown_warnings.add(warning)
                self.pending_notices.append(warning)

    def _turn_start(self, options: TurnOptions) -> tuple[PermissionMode, str, str | None, str | None]:
        """The turn's mode, its model, a notice about the model, and why the policy refuses that model."""
        effective = self.settings.current()
        # The organisation's env first: it may choose the provider, the key helper's environment, telemetry.
        apply_env(effective.policy)
        # The key helper of the person's or the organisation's settings (a project's is never read).
        use_key_helper(effective.merged.apiKeyHelper, self.project)
        choice = self.mode_choice(options.mode)
        if options.mode is not None and choice.mode != options.mode:
            self.pending_notices.append(f"--mode {options.mode} does not apply: {choice.source}; "
                                        f"this turn is in {choice.mode} mode.")
        # Resolved every turn: setting a key after a demo turn switches to Claude.
        command_model = options.command.command.model if options.command is not None else None
        name, notice = resolve_model_name(options.model or command_model or self.default_model())
        return choice.mode, name, notice, effective.model_refusal(name)

    def _ended(self, sink: EventSink, turn_id: int, why: Literal["error", "hook"]) -> TurnDone:
        """A turn that ends before anything is sent (a hook stopped it, the policy refuses its model)."""
        done = TurnDone(session_id=self.id, turn_id=turn_id, stop_reason=why, usage=Usage())
        sink(done)
        return done

    def _refuse(self, sink: EventSink, turn_id: int, refused: str) -> TurnDone:
        # Nothing is sent: the policy names the models that may be used.
        sink(ErrorEvent(session_id=self.id, turn_id=turn_id, message=f"Not sent: {refused}. Choose another "
                        "model with --model or %config CodingCode.model."))
        return self._ended(sink, turn_id, "error")

    def _report_prompt(self, prompt: str | list[ContentBlockParam]) -> None:
        """The prompt to telemetry (its length; its text only where the environment says), this session's."""
        telemetry.current_session.set(self.id)  # the model's requests of this turn are this session's
        telemetry.user_prompt(self.id, prompt if isinstance(prompt, str) else
                              " ".join(str(block.get("text", "")) for block in prompt if block.get("type") == "text"))

    async def run_turn(
        self,
        prompt: str | list[ContentBlockParam],
        front: "Front | EventSink | None" = None,
        *,
        options: TurnOptions = TurnOptions(),
    ) -> TurnDone:
        """Run one turn, shown to ``front`` and asking it about tool calls. A bare event sink
        (something that only watches: a log, a test's recorder) is shown the turn and nobody is
        asked, as with no front at all."""
        emit: EventSink = front if front is not None else _unwatched
        ask: Asker | None = front.ask if isinstance(front, Front) else None
        mode, name, notice, refused = self._turn_start(options)
        timeout = options.approval_timeout if options.approval_timeout is not None else self.approval_timeout
        self.last_model = name
        self.turns += 1
        turn_id = self.turns

        recorded = False

        def sink(event: Any) -> None:
            nonlocal recorded
            if isinstance(event, TodoUpdated) and event.agent == "main":
                self.transcript.write(TodoRecord(items=list(event.items)))
            if isinstance(event, TurnDone) and event.agent == "main" and not recorded:
                # Counted before the front sees the event, so the totals it shows include this turn
                # (an interrupted turn's tokens too).
                recorded = True
                self._record_turn(turn_id, name, event)
            emit(event)
            if not self.answered and event.agent == "main" and isinstance(event, _ANSWERS):
                self._first_answer()

        self._settings_warnings()
        for text in ([notice] if notice else []) + self.pending_notices:
            sink(Notice(session_id=self.id, turn_id=turn_id, text=text))
        self.pending_notices.clear()
        if refused is not None:
            return self._refuse(sink, turn_id, refused)
        self._report_prompt(prompt)
        context = await self._prompt_hooks(prompt, mode, lambda text: sink(Notice(session_id=self.id, turn_id=turn_id,
                                                                                   text=text)))
        if context is None:
            return self._ended(sink, turn_id, "hook")
        # A slash command's text replaces the request: the hooks' context and the servers' notes go with it,
        # once it is made.
        if options.command is None:
            prompt = await self._with_mcp_servers(_with_context(prompt, context), sink, turn_id)
        loop = AgentLoop(
            model=make_model(name),
            tools=self.tools,
            approver=self.approver,
            deps=self.deps,
            session_id=self.id,
            state=self.state,
            system=self.system() if callable(self.system) else self.system,
            emit=sink,
            ask=ask,
            mode=mode,
            approval_timeout=timeout,
            max_steps=self.max_steps,
            context=self.context,
        )
        if isinstance(front, Front):
            # No sandbox here: the session's one question about unconfined commands goes to this front.
            self.deps.unconfined.attach(front)
        try:
            if options.command is not None:
                prompt = await self._command_prompt(options.command, prompt, loop, turn_id, sink)
                prompt = await self._with_mcp_servers(_with_context(prompt, context), sink, turn_id)
            return await loop.run(self.conversation, prompt, turn_id)
        finally:
            if isinstance(front, Front):
                self.deps.unconfined.detach(front)
            end_turn(self.approver)
            if not recorded:
                self._record_turn(turn_id, name, TurnDone(stop_reason="interrupted", usage=Usage()))
            store = self.deps.checkpoints
            if store is not None:
                # What the turn left, so that undo can tell a later edit by someone else from the turn's own.
                await asyncio.shield(asyncio.to_thread(store.after_turn, self.id, turn_id))

    async def _with_mcp_servers(self, prompt: str | list[ContentBlockParam], sink: EventSink,
                                turn_id: int) -> str | list[ContentBlockParam]:
        """Wait (briefly, shown in the cell) for MCP servers still starting, so their tools are in this
        request; the prompt with what the model should know about the servers (started, late, failed)."""
        mcp = self.deps.mcp
        if mcp is None:
            return prompt

        def show(event: Notice) -> None:
            event.session_id, event.turn_id = self.id, turn_id
            sink(event)

        await mcp.wait_for_starting(show)
        notes = mcp.take_model_notes()
        if not notes:
            return prompt
        note = "\n".join(notes) + "\n\n"
        return note + prompt if isinstance(prompt, str) else [text_block(note), *prompt]

    async def _command_prompt(self, request: "CommandRequest", prompt: str | list[ContentBlockParam], loop: AgentLoop,
                              turn_id: int, sink: EventSink) -> str | list[ContentBlockParam]:
        """The slash command's request: its allowed-tools granted for the turn, its `!` lines run as
        execute_command calls through the approval pipeline (the person may be asked), their output inlined."""
        def tell(text: str) -> None:
            sink(Notice(session_id=self.id, turn_id=turn_id, text=text))

        from .commands import shell_output

        command = request.command
        grant_for_turn(self.approver, command.allowed_tools, f"/{command.name}", command.path,
                       project_file=command.from_project, notify=tell)
        outputs = []
        for line in request.shell:
            result = await loop.call_tool("execute_command", {"command": line, "description": f"/{command.name}: {line}"[:200]},
                                          turn_id)
            outputs.append(shell_output(result.text_content))
        text = request.render(outputs)
        for note in request.notes:
            tell(f"/{command.name}: {note}")
        if isinstance(prompt, list):  # pictures of the cell attach after the command's text
            return [text_block(text), *[block for block in prompt if block["type"] != "text"]]
        return text

    def _first_answer(self) -> None:
        self.answered = True
        for callback in self.on_first_answer:
            try:
                callback()
            except Exception:  # noqa: BLE001 -- what waited for the answer must not break the turn
                log.exception("a first-answer callback failed")

    async def _prompt_hooks(self, prompt: str | list[ContentBlockParam], mode: PermissionMode,
                            tell: Callable[[str], None]) -> list[str] | None:
        """SessionStart (once) and UserPromptSubmit hooks: their context for the prompt, or None when blocked."""
        hooks = self.deps.hooks
        context: list[str] = list(self.pending_context)
        self.pending_context.clear()
        if not self.started_hooks:
            self.started_hooks = True
            started = await hooks.session_start(session_id=self.id, source="resume" if self.turns > 1 else "startup")
            for text in started.notices + ([started.reason] if started.blocked and started.reason else []):
                tell(text)
            context.extend(started.context)
        text = prompt if isinstance(prompt, str) else "\n".join(b["text"] for b in prompt if b["type"] == "text")
        checked = await hooks.prompt(session_id=self.id, prompt=text, mode=mode)
        for note in checked.notices:
            tell(note)
        if checked.blocked or checked.stop is not None:
            tell(f"The prompt was blocked by a UserPromptSubmit hook: {checked.reason or checked.stop or 'no reason given'}"
                 " (nothing was sent to the model)")
            return None
        context.extend(checked.context)
        return context


    def _record_turn(self, turn_id: int, model: str, done: TurnDone) -> None:
        self.usage = self.usage + done.usage
        self.cost += done.cost_usd or 0.0
        self.transcript.write(TurnRecord(turn_id=turn_id, model=model, stop_reason=done.stop_reason, usage=done.usage,
                                         cost_usd=done.cost_usd or 0.0))

    def add_usage(self, usage: Usage, cost: float | None = None, reason: str = "") -> None:
        """Count tokens spent outside any turn (a forced compaction's summary) into the session totals."""
        self.usage = self.usage + usage
        self.cost += cost or 0.0
        self.transcript.write(UsageRecord(reason=reason, usage=usage, cost_usd=cost or 0.0))


def _unwatched(event: BaseModel) -> None:
    """Where a turn's events go when nobody watches it."""


def _drop_unanswered_tool_use(messages: list[MessageParam]) -> None:
    """A transcript cut by a crash may end on tool_use blocks nobody answered; answer them."""
    if messages and messages[-1]["role"] == "assistant":
        uses = [b for b in blocks(messages[-1]) if b["type"] == "tool_use"]
        if uses:
            unanswered: list[ResultPartParam] = [text_block("The session ended before this tool call finished.")]
            messages.append(user_blocks([tool_result(b["id"], unanswered, is_error=True) for b in uses]))


def _with_context(prompt: str | list[ContentBlockParam], context: list[str]) -> str | list[ContentBlockParam]:
    """The prompt with what hooks said for it (nothing: the prompt as it is)."""
    if not context:
        return prompt
    block = "\n\n".join(context)
    if isinstance(prompt, str):
        return f"{prompt}\n\n<hook-context>\n{block}\n</hook-context>"
    return [*prompt, text_block(f"<hook-context>\n{block}\n</hook-context>")]
