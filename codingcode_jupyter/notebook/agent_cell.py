"""One ``%%agent`` cell: the request expanded, the session found, the turn run and rendered.

The cell's options (mode, approval timeout, model) go into the turn as
:class:`~..engine.session.TurnOptions`; nothing of the session is changed for the cell and
put back afterwards. The interrupt button (and the kernel's interrupt) cancel the turn,
which ends cleanly: commands killed, cards marked, audit written.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from . import async_cell
from .config import CodingCode
from .failures import AgentFailed, AgentInterrupted, one_line
from .sessions import SessionRegistry

if TYPE_CHECKING:

    from ..engine.commands import CommandRequest
    from ..engine.front import Front, TrustAnswer
    from ..engine.mcp.manager import McpManager
    from ..engine.messages import ContentBlockParam
    from ..engine.session import Session
    from .text_view import RunnerView
    from .view import TextView, TurnView

_POLICY_NOTICE = {
    "deny": "Approval policy deny: nobody is asked; only tools that read run, everything else is denied.",
    "rules": "Approval policy rules: nobody is asked; what the rules and the mode allow runs (in auto mode, what the "
             "reviewer allows too), everything else is denied (with the reviewer's reason when it handed a call back).",
}

__all__ = ["AgentCellRunner", "NO_REQUEST", "APPROVAL_POLICIES"]

NO_REQUEST = "%%agent needs a request in the cell body, e.g.\n%%agent\nAdd a test for parse()"


# What `--approval-policy` may say: who answers the questions of a turn.
APPROVAL_POLICIES = ("ask", "deny", "rules")


@dataclass
class AgentCellRunner:
    """Runs ``%%agent`` cells for one shell."""

    shell: Any
    config: CodingCode
    registry: SessionRegistry
    # Session id -> what `%agent undo` reverted, told to the model with its next prompt.
    undo_notes: dict[str, list[str]] = field(default_factory=dict)

    async def run(self, args: Any, body: str, *, expand: bool = True, reuse: Any = None) -> None:
        """Run the turn a parsed ``%%agent`` line and its body ask for."""
        from ..engine.events import ErrorEvent, Notice
        from ..engine.front import shown_only
        from ..engine.session import TurnOptions
        from .references import expand_references

        prompt = "\n".join(part for part in (shlex.join(args.request), body.strip()) if part)
        if not prompt:
            raise UsageError(NO_REQUEST)
        expanded = expand_references(prompt, shell=self.shell) if expand else None
        if expanded is not None:
            prompt = expanded.text
        if args.approval_timeout is not None and args.approval_timeout <= 0:
            raise UsageError("--approval-timeout must be a positive number of seconds")
        project = self.registry.project(args.project)
        if args.profile:
            session = self.registry.profile_session(project, args.profile, new=args.new)
        else:
            session = self.registry.session(project, new=args.new)
        await session.start()
        slash = self._slash_request(session, prompt)
        request = prompt if slash is not None else await self._mcp_request(session.mcp, prompt)
        if isinstance(request, str) and expanded is not None:
            request = expanded.content(request)  # the pictures `{fig}` and `{Out[n]}` attach
        # What the MCP servers' states are is added by the turn, once it waited for those still starting.
        notes = self.undo_notes.pop(session.id, [])
        if notes and slash is not None:
            slash.preface = "\n".join(notes) + "\n\n"  # the command's text replaces the request
        elif notes:
            note = "\n".join(notes) + "\n\n"
            request = note + request if isinstance(request, str) else [{"type": "text", "text": note}, *request]
        policy = getattr(args, "approval_policy", None) or "ask"
        mode = args.mode
        if policy == "deny":
            mode = "plan"  # nothing that changes anything runs: read-only tools only
        options = TurnOptions(mode=mode, approval_timeout=args.approval_timeout, model=args.model or None, command=slash)
        timeout = options.approval_timeout if options.approval_timeout is not None else session.approval_timeout
        view = self.make_view(session, timeout)
        view.display(reuse)
        session.mcp.attach_front(view)  # MCP notices and requests for input go to this cell
        turn: asyncio.Future[Any] | None = None
        interrupted = False
        failure: str | None = None
        try:
            # The trust question is part of the turn: the interrupt and Stop end it as they end the turn.
            turn = asyncio.ensure_future(self.review_trust(session, view))
            view.on_stop = turn.cancel
            async with async_cell.cancel_on_interrupt(turn):
                await async_cell.wait_answer(turn, self.shell)
            if expanded is not None and expanded.unresolved:
                names = ", ".join("{" + name + "}" for name in expanded.unresolved)
                view(Notice(session_id=session.id,
                            text=f"Not expanded (no such variable): {names}; write {{{{ and }}}} for literal braces."))
            if policy != "ask":
                view.record.policy = policy
                view(Notice(session_id=session.id, text=_POLICY_NOTICE[policy]))
            # With a policy nobody is asked: the pipeline denies what needs a person, as by "nobody".
            front = view if policy == "ask" else shown_only(view)
            turn = asyncio.ensure_future(session.run_turn(request, front, options=options))
            # The Stop button cancels the turn exactly as the interrupt handler below does.
            view.on_stop = turn.cancel
            async with async_cell.cancel_on_interrupt(turn):
                # Waiting this way lets the Stop click reach the kernel on ipykernel 6 as well.
                await async_cell.wait_answer(turn, self.shell)
        except asyncio.CancelledError:
            if turn is None or not turn.cancelled():
                raise  # the cell itself was cancelled from outside: let it go on up
            interrupted = True
        except Exception as error:  # noqa: BLE001 -- whatever ends the turn, the cell ends cleanly
            # A broken settings file read mid-session, a hook or a bug: one line in the record, the
            # view finished, the record saved; the next cell starts afresh.
            failure = one_line(error)
            view(ErrorEvent(session_id=session.id, message=failure))
        finally:
            if turn is not None and not turn.done():
                turn.cancel()
            session.mcp.detach_front(view)
            _finish_names(self.shell)
            view.finish(interrupted=interrupted, failed=failure is not None)
        # Stop ends this turn, and the record says so in one line; the kernel's interrupt ends the run
        # (an error, so Run All stops at this cell).
        if interrupted and not getattr(view, "stopped_by_button", False):
            raise AgentInterrupted()
        if failure is not None:
            raise AgentFailed(failure)

    async def review_trust(self, session: "Session", view: Front) -> TrustAnswer | None:
        """Ask about what the project's files ask for that loosens the agent (once per session unless
        ``%agent trust`` asks again); returns the answer, None when nobody could answer or nothing was asked."""
        from ..engine.events import Notice

        pending = session.pending_trust()
        if not pending:
            return None
        answer = await view.ask_trust(pending, session.project)
        if answer == "trust":
            session.trust(pending)
            return answer
        session.decline(by="user" if answer == "not_now" else "nobody")
        if answer is None:
            count = len(pending)
            why = getattr(view, "trust_unanswered", None) or "nobody could be asked here"
            view(Notice(session_id=session.id, text=(
                f"This project's files ask for {count} thing{'s' if count != 1 else ''} that loosen the agent "
                f"(allow rules, hooks, MCP servers, a looser mode...); {why}, so they are ignored. "
                "Trust it with `%agent trust` in a notebook, or set CODINGCODE_TRUST=1 for runs you set up.")))
        return answer

    def _slash_request(self, session: "Session", prompt: str) -> "CommandRequest | None":
        """The slash command (or skill) a request starts with (``/name args``), expanded; None when it does
        not start with one (an MCP prompt's ``/server:prompt`` is left to the MCP servers)."""
        from ..engine.commands import expand_command, load_commands, parse_slash

        head = parse_slash(prompt)
        if head is None:
            return None
        name, arguments = head
        project = session.project
        catalog = load_commands(project, plugins=session.settings.active_plugins())
        command = catalog.get(name)
        if command is not None:
            return expand_command(command, arguments, project, session_id=session.id)
        if ":" in name:
            return None
        several = catalog.ambiguous.get(name)
        if several:
            raise UsageError(f"/{name} could be any of {', '.join(f'/{n}' for n in several)}: type the one you mean.")
        known = ", ".join(catalog.names()) or "none (.claude/commands/*.md)"
        raise UsageError(f"No slash command /{name}. Commands: {known}. (%agent commands lists them.)")

    async def _mcp_request(self, mcp: "McpManager", prompt: str) -> "str | list[ContentBlockParam]":
        """The request, with a leading ``/server:prompt arg=value`` replaced by that MCP prompt's content."""
        from ..engine.mcp.prompts import PromptError

        try:
            content = await mcp.expand_prompt(prompt)
        except PromptError as error:
            raise UsageError(str(error)) from None
        return prompt if content is None else content

    def make_view(self, session: "Session", approval_timeout: float | None) -> "TurnView | TextView | RunnerView":
        """Widgets in a kernel, text in a terminal, the record alone for a runner's cell (nbconvert, papermill:
        it would save the live widgets' state in the notebook, and nobody sees them)."""
        from .text_view import RunnerView
        from .view import TextView, TurnView

        if async_cell.kernel_of(self.shell) is None:
            return TextView(session=session)
        if async_cell.sent_by_runner(self.shell):
            return RunnerView(session=session)
        return TurnView(
            ip=self.shell,
            session=session,
            max_rate=self.config.max_updates_per_second,
            frontend_wait=self.config.frontend_wait,
            headless_timeout=self.config.headless_timeout,
            approval_timeout=approval_timeout,
        )


def _finish_names(shell: Any) -> None:
    """The turn is over: what its code did to the variables is classified now, before the person's
    next cells change them (see kernel/undo_names.py)."""
    if shell is None or getattr(shell, "user_ns", None) is None:
        return
    from .kernel.namespace import KernelAccess
    from .kernel.undo_names import finish_turns

    try:
        finish_turns(shell.user_ns, hidden=KernelAccess(shell).hidden())
    except Exception:  # noqa: BLE001 -- undo's record must not break the cell; undo classifies it later
        pass

