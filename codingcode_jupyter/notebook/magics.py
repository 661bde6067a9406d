"""``%%agent`` and ``%agent``: parse the line, call the engine, display the result.

``%%agent`` cells are run as awaited code (see :mod:`.async_cell`) so approval clicks reach
the kernel while the agent works. A lone ``%agent ...`` line is awaited the same way, so
subcommands that talk to MCP servers can finish before the cell does. One session per
project lives in the kernel and continues across cells; ``--new`` starts a fresh one.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import Pretty
from traitlets import Float, Unicode, validate
from traitlets.config import Configurable

from . import async_cell

__all__ = ["CodingCode", "AgentMagics", "AgentInterrupted", "load", "unload", "LINE_FUNCTION"]

LINE_FUNCTION = "__codingcode_agent_line__"
MODES = ("default", "acceptEdits", "plan", "bypass")


class CodingCode(Configurable):
    """Settings of the notebook front (``%config CodingCode.model = "..."`` or ipython_config.py)."""

    model = Unicode("", help="Model for new turns ('' = CODINGCODE_MODEL, Claude if a key is set, else the demo).").tag(config=True)
    mode = Unicode("", help="Permission mode of new sessions: default, acceptEdits, plan or bypass ('' = settings.json).").tag(config=True)
    approval_timeout = Float(
        None, allow_none=True,
        help="Seconds to wait for an approval before denying it (None: as long as a frontend can answer).",
    ).tag(config=True)
    project = Unicode("", help="Project directory ('' = the kernel's working directory).").tag(config=True)
    max_updates_per_second = Float(20.0, help="At most this many display updates a second for streamed text.").tag(config=True)
    frontend_wait = Float(3.0, help="Seconds to wait for a widget view to render before asking on stdin instead.").tag(config=True)
    headless_timeout = Float(
        10.0, help="With no widget frontend and no stdin (nbconvert, papermill): deny an approval after this many seconds.",
    ).tag(config=True)

    @validate("mode")
    def _valid_mode(self, proposal: Any) -> str:
        if proposal["value"] not in ("", *MODES):
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        return proposal["value"]


class AgentInterrupted(Exception):
    """The interrupt button stopped a turn; shown as one line, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return ["Interrupted."]


@dataclass
class _Entry:
    session: Any
    parts: Any


def _mode_arg(value: str) -> str:
    if value not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)}, not {value!r}")
    return value


@magics_class
class AgentMagics(Magics):
    """The ``agent`` magics; one instance per shell."""

    def __init__(self, shell: Any, config: CodingCode) -> None:
        super().__init__(shell)
        self.settings = config
        self.sessions: dict[Path, _Entry] = {}
        self.current: Path | None = None
        # `%%agent --agent NAME` runs the profile as the main agent: its own system prompt and
        # tools, so its own conversation, continued across cells that name the same profile.
        self.profile_sessions: dict[tuple[Path, str], _Entry] = {}
        # Session id -> what `%agent undo` reverted, told to the model with its next prompt.
        self.undo_notes: dict[str, list[str]] = {}
        self._kernel_tools: list[Any] = []

    # -- sessions -------------------------------------------------------------------------

    def project(self, override: str | None = None) -> Path:
        raw = override or self.settings.project or os.getcwd()
        path = Path(os.path.expanduser(raw)).resolve()
        if not path.is_dir():
            raise UsageError(f"Project directory {raw!r} does not exist")
        return path

    def _engine(self) -> Any:
        """The engine's runtime, imported on first use; the kernel tools join its registry then."""
        from ..engine import runtime

        if not self._kernel_tools:
            from .kernel_tools import register_kernel_tools

            self._kernel_tools = register_kernel_tools(runtime.global_registry(), self.shell)
        return runtime

    def open(self, project: Path, **options: Any) -> tuple[Any, Any]:
        """A session from the engine; a broken settings, profile or session file is one clear line."""
        try:
            return self._engine().open_session(
                project,
                model=self.settings.model or None,
                mode=self.settings.mode or None,
                approval_timeout=self.settings.approval_timeout,
                **options,
            )
        except (ValueError, FileNotFoundError) as error:
            # SettingsError, ProfileError, McpConfigError, ContextWindowError are ValueErrors whose
            # message names the file and the entry: that is all a person needs, not a traceback.
            raise UsageError(str(error)) from None

    def entry(self, project: Path, *, new: bool = False) -> _Entry:
        """The project's session, opened on first use (or anew)."""
        entry = self.sessions.get(project)
        if entry is None or new:
            session, parts = self.open(project)
            if entry is not None:
                self._close_later(entry)
            entry = self.sessions[project] = _Entry(session, parts)
        self.current = project
        return entry

    def profile_entry(self, project: Path, profile: str, *, new: bool = False) -> _Entry:
        """The session that runs ``profile`` as the main agent in ``project``."""
        key = (project, profile)
        entry = self.profile_sessions.get(key)
        if entry is None or new:
            session, parts = self.open(project, agent_profile=profile)
            if entry is not None:
                self._close_later(entry)
            entry = self.profile_sessions[key] = _Entry(session, parts)
        return entry

    def _close_later(self, entry: _Entry) -> None:
        try:
            asyncio.get_running_loop().create_task(entry.parts.aclose())
        except RuntimeError:
            asyncio.run(entry.parts.aclose())

    def _current(self) -> _Entry:
        return self.entry(self.current or self.project())

    # -- %%agent ---------------------------------------------------------------------------

    @magic_arguments()
    @argument("--mode", type=_mode_arg, help="Permission mode for this cell: default, acceptEdits, plan, bypass.")
    @argument("--model", help="Model for this cell (e.g. claude-sonnet-4-5, or demo).")
    @argument("--agent", dest="profile", metavar="PROFILE", help="Agent profile to run as.")
    @argument("--new", action="store_true", help="Start a new session instead of continuing this project's.")
    @argument("--approval-timeout", type=float, metavar="SECONDS", help="Deny approvals not answered within SECONDS.")
    @argument("--project", metavar="DIR", help="Project directory (default: the kernel's working directory).")
    @argument("request", nargs="*", help="An MCP prompt as the request: /server:prompt arg=value ...")
    @cell_magic("agent")
    def agent_cell(self, line: str, cell: str) -> Any:
        """Ask the coding agent; the cell body is the request.

        The model's text streams into the cell; each tool call that needs approval shows a
        card with Allow / Deny / Always allow / Never allow. The interrupt button stops it.
        """
        if not cell.strip():
            raise UsageError(_NO_REQUEST)
        coro = self.run_cell(line, cell)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        coro.close()
        raise UsageError(
            "%%agent must run as its own cell (it is rewritten into an awaited call); "
            "it cannot be called through run_cell_magic while an event loop is running."
        )

    async def run_cell(self, line: str, body: str, *, expand: bool = True) -> None:
        """The body of a ``%%agent`` cell (the transformer awaits this).

        ``{name}`` in the body becomes a description of that live variable (``{{`` escapes).
        """
        from .references import expand_references

        args = parse_argstring(self.agent_cell, line)
        prompt = "\n".join(part for part in (shlex.join(args.request), body.strip()) if part)
        if not prompt:
            raise UsageError(_NO_REQUEST)
        expanded = expand_references(prompt, shell=self.shell) if expand else None
        if expanded is not None:
            prompt = expanded.text
        if args.approval_timeout is not None and args.approval_timeout <= 0:
            raise UsageError("--approval-timeout must be a positive number of seconds")
        project = self.project(args.project)
        if args.profile:
            entry = self.profile_entry(project, args.profile, new=args.new)
        else:
            entry = self.entry(project, new=args.new)
        session, parts = entry.session, entry.parts
        await parts.start()
        request = await self._mcp_request(parts.mcp, prompt)
        notes = self.undo_notes.pop(session.id, []) + parts.mcp.take_model_notes()
        if notes:
            note = "\n".join(notes) + "\n\n"
            request = note + request if isinstance(request, str) else [{"type": "text", "text": note}, *request]
        pipeline = parts.pipeline
        saved = {"mode": pipeline.mode, "approval_timeout": getattr(pipeline, "approval_timeout", None)}
        if args.mode:
            pipeline.mode = args.mode
        timeout = args.approval_timeout if args.approval_timeout is not None else self.settings.approval_timeout
        if args.approval_timeout is not None and hasattr(pipeline, "approval_timeout"):
            pipeline.approval_timeout = args.approval_timeout
        view = self._view(session, timeout)
        view.display()
        parts.mcp.attach_front(view)  # MCP notices and requests for input go to this cell
        if expanded is not None and expanded.unresolved:
            names = ", ".join("{" + name + "}" for name in expanded.unresolved)
            view(_notice(session, f"Not expanded (no such variable): {names}; write {{{{ and }}}} for literal braces."))
        turn = asyncio.ensure_future(session.run_turn(request, emit=view, ask=view.ask, model=args.model or None))
        interrupted = False
        try:
            async with async_cell.cancel_on_interrupt(turn):
                await turn
        except asyncio.CancelledError:
            if not turn.cancelled():
                raise  # the cell itself was cancelled from outside: let it go on up
            interrupted = True
        finally:
            if not turn.done():
                turn.cancel()
            pipeline.mode = saved["mode"]
            if hasattr(pipeline, "approval_timeout"):
                pipeline.approval_timeout = saved["approval_timeout"]
            parts.mcp.detach_front(view)
            view.finish(interrupted=interrupted)
        if interrupted:
            raise AgentInterrupted()

    async def _mcp_request(self, mcp: Any, prompt: str) -> str | list[dict[str, Any]]:
        """The request, with a leading ``/server:prompt arg=value`` replaced by that MCP prompt's content."""
        from ..engine.mcp.prompts import PromptError

        try:
            content = await mcp.expand_prompt(prompt)
        except PromptError as error:
            raise UsageError(str(error)) from None
        return prompt if content is None else content

    def _view(self, session: Any, approval_timeout: float | None) -> Any:
        from .view import TextView, TurnView

        if async_cell.kernel_of(self.shell) is None:
            return TextView(session=session)
        return TurnView(
            ip=self.shell,
            session=session,
            max_rate=self.settings.max_updates_per_second,
            frontend_wait=self.settings.frontend_wait,
            headless_timeout=self.settings.headless_timeout,
            approval_timeout=approval_timeout,
            todo=list(getattr(session.state, "todo", []) or []),
        )

    # -- %agent ----------------------------------------------------------------------------

    @line_magic("agent")
    def agent_line(self, line: str) -> Any:
        """Inspect and steer the agent.

        %agent status            session, model, mode, tokens, cost, sandbox
        %agent mode NAME         default | acceptEdits | plan | bypass
        %agent reset             start a new session
        %agent sessions          saved sessions of this project
        %agent resume ID         continue a saved session
        %agent rules             effective approval rules and where each comes from
        %agent audit [N]         the last N audit records (default 20)
        %agent tools             the tools the agent sees
        %agent mcp               MCP servers; also: mcp add NAME JSON, mcp remove NAME,
                                 mcp restart NAME, mcp tools NAME, mcp log NAME [N], mcp login NAME [ADDRESS]
        %agent fix [NOTE]        ask the agent to fix the last failing cell
        %agent compact           summarise older turns now to free context
        %agent undo [--dry-run] [--force] [--outside]
                                 show the diff of, then restore, the last turn's file changes
        """
        coro = self.run_line(line)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        words = _split(line)
        if words[:1] == ["mcp"] and words[1:2] in (["add"], ["remove"], ["restart"], ["login"]):
            coro.close()
            raise UsageError(f"Put `%agent mcp {words[1]} ...` on a line of its own (it must be awaited).")
        # Every other subcommand completes without awaiting anything.
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value
        coro.close()
        raise UsageError(f"`%agent {line.strip()}` must be on a line of its own.")

    async def run_line(self, line: str) -> Any:
        """Run one ``%agent`` subcommand."""
        words = _split(line)
        if not words:
            return Pretty(self.agent_line.__doc__ or "")
        command, rest = words[0], words[1:]
        handler = getattr(self, f"_cmd_{command}", None)
        if handler is None:
            raise UsageError(f"Unknown subcommand {command!r}. Try: {', '.join(_COMMANDS)}")
        result = handler(rest)
        if asyncio.iscoroutine(result):
            result = await result
        return Pretty(result) if isinstance(result, str) else result

    def _cmd_status(self, rest: list[str]) -> str:
        from ..engine.context import context_status
        from ..engine.models import resolve_model_name
        from ..engine.prompts import loaded_instructions

        entry = self._current()
        session, parts = entry.session, entry.parts
        model = session.last_model or resolve_model_name(self.settings.model or session.model_name)[0]
        usage = session.usage
        lines = [
            f"session   {session.id}  ({session.turns} turns)",
            f"project   {session.project}",
            f"model     {model}",
            f"mode      {parts.pipeline.mode}",
            f"tokens    {usage.total_input:,} in (cache read {usage.cache_read_input_tokens:,}) / {usage.output_tokens:,} out",
            f"cost      ${session.cost:.4f}",
            f"sandbox   {parts.sandbox.describe()}",
            f"{context_status(session).describe()}",
            "instructions " + (", ".join(f.describe() for f in loaded_instructions(session.project)) or "none (AGENTS.md, CLAUDE.md)"),
        ]
        servers = parts.mcp.status()
        if servers:
            lines.append("mcp       " + ", ".join(f"{s.name} ({s.state})" for s in servers))
        return "\n".join(lines)

    async def _cmd_compact(self, rest: list[str]) -> str:
        """Shorten what is sent to the model now (the transcript on disk keeps everything)."""
        from ..engine.context import compact

        entry = self._current()
        report = await compact(entry.session, force=True)
        return report.describe()

    def _cmd_mode(self, rest: list[str]) -> str:
        if len(rest) != 1:
            return f"mode is {self._current().parts.pipeline.mode}; change it with %agent mode {'|'.join(MODES)}"
        self._current().parts.pipeline.mode = _mode_arg(rest[0])
        return f"mode set to {rest[0]}"

    def _cmd_reset(self, rest: list[str]) -> str:
        entry = self.entry(self.current or self.project(), new=True)
        return f"new session {entry.session.id}"

    def _cmd_sessions(self, rest: list[str]) -> str:
        from ..engine.session import list_sessions

        project = self.current or self.project()
        infos = list_sessions(project)
        if not infos:
            return f"no saved sessions in {project}"
        current = self.sessions.get(project)
        rows = []
        for info in infos:
            mark = "*" if current is not None and current.session.id == info.id else " "
            rows.append(f"{mark} {info.id}  {info.created[:19]:19}  {info.turns:>3} turns  {info.model:20}  {info.first_prompt[:50]}")
        return "\n".join(rows)

    def _cmd_resume(self, rest: list[str]) -> str:
        if len(rest) != 1:
            raise UsageError("usage: %agent resume ID   (see %agent sessions)")
        project = self.current or self.project()
        session, parts = self.open(project, session_id=rest[0], resume=True)
        old = self.sessions.get(project)
        if old is not None:
            self._close_later(old)
        self.sessions[project] = _Entry(session, parts)
        self.current = project
        return f"resumed {session.id}: {session.turns} turns, {len(session.conversation.messages)} messages"

    def _cmd_rules(self, rest: list[str]) -> str:
        from ..engine.approval.pipeline import effective_rules
        from ..engine.settings import SettingsError

        entry = self._current()
        try:
            rows = effective_rules(entry.session.project, entry.parts.pipeline.session_rules)
        except SettingsError as error:
            raise UsageError(str(error)) from None
        lines = [f"{'action':6}  {'source':8}  {'priority':>8}  rule"]
        lines += [f"{action:6}  {source:8}  {priority:>8}  {text}" for text, action, source, priority in rows]
        return "\n".join(lines)

    def _cmd_audit(self, rest: list[str]) -> str:
        from ..engine.approval.audit import AuditLog
        from .widgets.audit import audit_fields

        try:
            count = int(rest[0]) if rest else 20
        except ValueError:
            raise UsageError("usage: %agent audit [N]") from None
        if count <= 0:
            raise UsageError("N must be a positive number")
        project = self.current or self.project()
        records = AuditLog(project).read(count)
        if not records:
            return f"no audit records in {project / '.codingcode' / 'audit.jsonl'}"
        rows = []
        for record in records:
            f = audit_fields(record)
            outcome = f" → {f['outcome']}" if f["outcome"] else ""
            rows.append(
                f"{str(record.get('ts', ''))[:19]:19}  {f['tool']:20}  {f['decision']:8}{outcome:14}  {f['why'][:50]:50}  {f['by']}".rstrip()
            )
        return "\n".join(rows)

    def _cmd_tools(self, rest: list[str]) -> str:
        entry = self._current()
        rows = []
        for tool, status in entry.parts.resolver.visible():
            flags = ", ".join(f for f in ("read-only" if tool.read_only else "", status if status != "offered" else "") if f)
            rows.append(f"{tool.display_name or tool.name:30} {tool.source:8} {flags}")
        for server in entry.parts.mcp.status():
            if server.state != "running":  # its tools are not in the list yet (or any more)
                rows.append(f"{'(' + server.name + ':*)':30} {'mcp':8} server {server.state.replace('_', ' ')}")
        return "\n".join(rows) or "no tools"

    async def _cmd_mcp(self, rest: list[str]) -> str:
        from ..engine.mcp import LoginError, McpConfigError, parse_typed_entry

        mcp = self._current().parts.mcp
        command, args = (rest[0], rest[1:]) if rest else ("", [])
        try:
            if command == "add":
                if len(args) < 2:
                    raise UsageError('usage: %agent mcp add NAME {"command": "...", "args": [...]}   (or a URL, '
                                     "or a command line)")
                return mcp.describe_status(await mcp.add(args[0], parse_typed_entry(args[1])))
            if command == "remove" and len(args) == 1:
                return f"removed {args[0]}" if await mcp.remove(args[0]) else f"no server named {args[0]!r}"
            if command == "restart" and len(args) == 1:
                return mcp.describe_status(await mcp.restart(args[0]))
            if command == "tools" and len(args) == 1:
                return mcp.describe_tools(args[0])
            if command == "log" and len(args) in (1, 2):
                return mcp.describe_log(args[0], int(args[1]) if len(args) == 2 and args[1].isdigit() else 50)
            if command == "login" and len(args) == 2:
                mcp.complete_login(args[0], args[1])
                return f"login to {args[0]} completed; it starts now (see %agent mcp)"
            if command == "login" and len(args) == 1:
                status = mcp.describe_status(await mcp.restart(args[0]))
                return status
        except (McpConfigError, LoginError, KeyError, TypeError) as error:
            raise UsageError(str(error).strip("'\"")) from None
        if command:
            raise UsageError("usage: %agent mcp [add NAME ENTRY | remove NAME | restart NAME | tools NAME | log NAME [N] "
                             "| login NAME [ADDRESS]]")
        return mcp.describe()

    async def _cmd_fix(self, rest: list[str]) -> None:
        from .references import NoErrorToFix, fix_prompt

        try:
            prompt = fix_prompt(self.shell, " ".join(rest))
        except NoErrorToFix as error:
            raise UsageError(str(error)) from None
        # The failing cell's own braces are code, not references.
        await self.run_cell("", prompt, expand=False)

    def _cmd_undo(self, rest: list[str]) -> str:
        from IPython.display import display

        from ..engine.checkpoints import CheckpointError, CheckpointStore

        flags = set(rest)
        unknown = flags - {"--dry-run", "--force", "--outside"}
        if unknown:
            raise UsageError(f"usage: %agent undo [--dry-run] [--force] [--outside] (unknown: {' '.join(sorted(unknown))})")
        project = self.current or self.project()
        entry = self.sessions.get(project)
        store = entry.session.services.get("checkpoints") if entry is not None else None
        store = store if isinstance(store, CheckpointStore) else CheckpointStore(project)
        try:
            plan = store.plan_undo(allow_outside="--outside" in flags)
        except CheckpointError as error:
            raise UsageError(str(error)) from None
        display(Pretty(plan.render()))
        if "--dry-run" in flags:
            return "Dry run: nothing was changed. `%agent undo` restores these files."
        try:
            store.undo(plan, force="--force" in flags, allow_outside="--outside" in flags)
        except CheckpointError as error:
            raise UsageError(str(error)) from None
        changed = sum(1 for item in plan.files if item.action != "unchanged")
        if entry is not None and entry.session.id == plan.checkpoint.session_id:
            files = ", ".join(item.path for item in plan.files if item.action != "unchanged") or "none"
            self.undo_notes.setdefault(entry.session.id, []).append(
                f"(Note: the user undid your file changes of turn {plan.checkpoint.turn_id}; these files are back "
                f"as they were before it: {files}. Read them again before changing them.)"
            )
        return f"Undid {plan.checkpoint.label}: {changed} file(s) restored; recorded in the audit log."


_NO_REQUEST = "%%agent needs a request in the cell body, e.g.\n%%agent\nAdd a test for parse()"
_COMMANDS = ("status", "mode", "reset", "sessions", "resume", "rules", "audit", "tools", "mcp", "fix", "undo", "compact")


def _split(line: str) -> list[str]:
    head = line.split(None, 3)
    if head[:2] == ["mcp", "add"] and len(head) == 4:
        # The server entry is kept as typed: JSON's quotes are not shell quoting.
        return head
    try:
        return shlex.split(line)
    except ValueError as error:
        raise UsageError(f"cannot parse {line!r}: {error}") from None


def _notice(session: Any, text: str) -> Any:
    from ..engine.events import Notice

    return Notice(session_id=session.id, text=text)


# -- the extension ----------------------------------------------------------------------

_STATE_KEY = "_codingcode_magics"


def _line_transformer(lines: list[str]) -> list[str]:
    """Rewrite a line that is exactly ``%agent ...`` into an awaited call."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines  # a cell magic's body is its own language, not Python with magics
    out = []
    for text in lines:
        stripped = text.rstrip("\r\n")
        if (stripped == "%agent" or stripped.startswith("%agent ")) and not stripped.rstrip().endswith("?"):
            out.append(f"await {LINE_FUNCTION}({stripped[len('%agent'):].strip()!r})\n")
        else:
            out.append(text)
    return out


def load(ip: Any) -> None:
    """Register the magics, the transformers and the config class on ``ip``."""
    if getattr(ip, _STATE_KEY, None) is not None:
        return
    config = CodingCode(parent=ip)
    ip.configurables.append(config)
    magics = AgentMagics(ip, config)
    ip.register_magics(magics)
    async_cell.install_transformer(ip, magics.run_cell)
    ip.input_transformers_cleanup.append(_line_transformer)
    ip.user_ns[LINE_FUNCTION] = magics.run_line
    ip.user_ns_hidden[LINE_FUNCTION] = magics.run_line
    # Errors are recorded from now on (for notebook_history and %agent fix); the kernel tools
    # themselves are registered with the first session, so loading the extension stays cheap
    # (the engine, the SDKs and MCP are imported by the first %%agent cell, not here).
    from .kernel_tools import install_error_recorder

    install_error_recorder(ip)
    setattr(ip, _STATE_KEY, magics)


def unload(ip: Any) -> None:
    """Remove what :func:`load` added (sessions are closed)."""
    magics = getattr(ip, _STATE_KEY, None)
    if magics is None:
        return
    async_cell.uninstall_transformer(ip)
    while _line_transformer in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.remove(_line_transformer)
    ip.user_ns.pop(LINE_FUNCTION, None)
    ip.user_ns_hidden.pop(LINE_FUNCTION, None)
    for entry in magics.sessions.values():
        magics._close_later(entry)
    ip.magics_manager.magics["cell"].pop("agent", None)
    ip.magics_manager.magics["line"].pop("agent", None)
    if magics.settings in ip.configurables:
        ip.configurables.remove(magics.settings)
    if magics._kernel_tools:
        from ..engine.runtime import global_registry

        for tool in magics._kernel_tools:
            global_registry().remove(tool.name)
    setattr(ip, _STATE_KEY, None)
