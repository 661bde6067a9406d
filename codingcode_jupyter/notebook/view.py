"""Rendering one turn's event stream into the cell, and asking the person in it.

The cell shows one widget tree: the conversation on the left (streamed Markdown, tool
lines, approval cards, notices; a sub-agent's output in its own collapsible section) and the
todo and audit widgets on the right. Streamed text is coalesced so the frontend gets at
most ``max_rate`` display updates a second however fast tokens arrive.

Where no widget frontend renders the cell (terminal IPython, nbconvert, a view that never
shows), approvals fall back to ``input()``; where stdin is not allowed either, a request is
denied after a timeout with a message — a cell never hangs on a question nobody can see.
"""

from __future__ import annotations

import asyncio
import io
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import mistune
from IPython.display import display

from ..engine.approval.types import Answer, ApprovalRequest
from ..engine.events import (
    ApprovalAnswered,
    ApprovalRequested,
    AuditRecorded,
    ErrorEvent,
    McpLoginRequired,
    Notice,
    TextDelta,
    TodoUpdated,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
    TurnDone,
    UsageUpdated,
)
from . import async_cell
from .widgets._text import h, reveal, short
from .widgets.approval import ApprovalCard
from .widgets.audit import AuditWidget, audit_fields
from .widgets.todo import TodoWidget
from .widgets.tool_line import ToolLine
from .widgets.trust import TrustAnswer, TrustCard, trust_lines


if TYPE_CHECKING:
    from ..engine.session import Session
    from ..engine.trust.items import TrustItem

__all__ = ["TurnView", "TextView", "render_markdown", "usage_line", "parse_text_answer"]

# escape=True: raw HTML in model text is shown as text, never run in the page.
_markdown = mistune.create_markdown(escape=True, plugins=["strikethrough", "table"])


def render_markdown(text: str) -> str:
    """Model text as safe HTML."""
    return _markdown(reveal(text))


def usage_line(done: TurnDone, session: "Session | None" = None) -> str:
    """Tokens and cost of a turn (and of the session so far)."""
    u = done.usage
    cache = ""
    if u.cache_read_input_tokens or u.cache_creation_input_tokens:
        cache = f" (cache read {u.cache_read_input_tokens:,}, written {u.cache_creation_input_tokens:,})"
    cost = f" · ${done.cost_usd:.4f}" if done.cost_usd is not None else ""
    total = ""
    if session is not None:
        total = f" · session {session.usage.total_input + session.usage.output_tokens:,} tokens"
        if getattr(session, "cost", None):
            total += f", ${session.cost:.4f}"
    return f"{u.total_input:,} in{cache} / {u.output_tokens:,} out{cost}{total} · {done.stop_reason}"


_TEXT_ANSWERS: dict[str, Answer] = {
    "y": "allow", "yes": "allow", "allow": "allow",
    "n": "deny", "no": "deny", "deny": "deny", "": "deny",
    "a": "always", "always": "always", "always allow": "always",
    "v": "never", "never": "never", "never allow": "never",
}


def parse_text_answer(text: str) -> Answer | None:
    """A typed answer (y/n/a/v or the words); None when unrecognised."""
    return _TEXT_ANSWERS.get(text.strip().lower())


def _text_question(request: ApprovalRequest) -> str:
    why = "/".join(p for p in (request.layer, request.rule or "") if p)
    lines = [f"Approve {reveal(request.tool)} {reveal(short(request.key or '', 100))}?"]
    if why or request.reason:
        lines.append(f"  asked by {why}: {reveal(request.reason)}".rstrip(": "))
    if request.preview:
        lines.append(reveal(request.preview))
    lines.append("[y]es / [n]o / [a]lways allow / ne[v]er allow: ")
    return "\n".join(lines)


def _ask_by_text(request: ApprovalRequest) -> Answer:
    """Ask on stdin; an interrupt meanwhile cancels the turn like the button would."""
    question = _text_question(request)
    for _ in range(3):
        with async_cell.sync_interrupts():
            try:
                typed = input(question)
            except KeyboardInterrupt:
                raise asyncio.CancelledError() from None
            except EOFError:
                return "deny"
        answer = parse_text_answer(typed)
        if answer is not None:
            return answer
        question = "Please answer y, n, a or v: "
    return "deny"


class _Section:
    """The output of one agent (main or a sub-agent): text segments, tool lines, cards."""

    def __init__(self, box: widgets.VBox) -> None:
        self.box = box
        self.segment: widgets.HTML | None = None
        self.text = ""

    def add(self, widget: widgets.Widget) -> None:
        self.box.children = (*self.box.children, widget)

    def close_segment(self) -> None:
        self.segment = None
        self.text = ""


class TurnView:
    """Widgets for one ``%%agent`` cell; an event sink and an ``ask`` callback for the engine."""

    def __init__(
        self,
        *,
        ip: Any = None,
        session: "Session | None" = None,
        max_rate: float = 20.0,
        frontend_wait: float = 3.0,
        headless_timeout: float = 10.0,
        approval_timeout: float | None = None,
        todo: list[Any] | None = None,
    ) -> None:
        self.ip = ip
        self.session = session
        self.interval = 1.0 / max_rate if max_rate > 0 else 0.0
        self.frontend_wait = frontend_wait
        self.headless_timeout = headless_timeout
        self.approval_timeout = approval_timeout
        self.loop = asyncio.get_event_loop()
        self.main = widgets.VBox(layout=widgets.Layout(flex="3 1 0%", min_width="0"))
        self.todo = TodoWidget(todo or [])
        self.audit = AuditWidget()
        self.footer = widgets.HTML()
        self.side = widgets.VBox(
            [self.todo, self.audit],
            layout=widgets.Layout(flex="1 1 0%", min_width="14em", border_left="1px solid #d0d7de", padding="0 0 0 8px"),
        )
        self.root = widgets.VBox([widgets.HBox([self.main, self.side]), self.footer])
        self.root.add_class("codingcode-cell")
        # Opt in to view counting: the frontend reports each rendered view, which is how
        # we know a person can see (and click) an approval card.
        self.root._view_count = 0
        self._seen = self.loop.create_future()
        self.root.observe(self._view_counted, names="_view_count")
        self.sections: dict[str, _Section] = {"main": _Section(self.main)}
        self.tools: dict[str, ToolLine] = {}
        self.cards: dict[str, ApprovalCard] = {}
        self.forms: list[Any] = []  # MCP elicitation forms
        self._dirty: set[_Section] = set()
        self._flush_handle: asyncio.TimerHandle | None = None
        self._last_flush = 0.0
        self.flushes = 0
        # A plain-text record of the turn, printed at the end when no frontend ever rendered
        # the widgets (nbconvert, papermill): the saved notebook then still says what happened.
        self._record = io.StringIO()
        self._mirror = TextView(session=session, out=self._record)

    def display(self) -> None:
        """Put the widgets in the cell's output."""
        display(self.root)

    # -- frontend presence --------------------------------------------------------------

    def _view_counted(self, change: dict[str, Any]) -> None:
        if (change.get("new") or 0) >= 1:
            self.loop.call_soon_threadsafe(lambda: self._seen.done() or self._seen.set_result(True))

    @property
    def frontend_seen(self) -> bool:
        """A frontend rendered this cell's widgets."""
        return (self.root._view_count or 0) >= 1

    async def _wait_frontend(self) -> bool:
        if self.frontend_seen:
            return True
        try:
            await asyncio.wait_for(async_cell.wait_answer(asyncio.shield(self._seen), self.ip), self.frontend_wait)
        except asyncio.TimeoutError:
            return self.frontend_seen
        return True

    # -- sections -------------------------------------------------------------------------

    def _section(self, agent: str) -> _Section:
        section = self.sections.get(agent)
        if section is not None:
            return section
        parent_name = agent.rsplit("/", 1)[0] if "/" in agent else "main"
        parent = self._section(parent_name)
        self._flush_now()
        parent.close_segment()
        box = widgets.VBox()
        accordion = widgets.Accordion([box], selected_index=None)
        accordion.set_title(0, f"sub-agent {agent.rsplit('/', 1)[-1]}")
        parent.add(accordion)
        section = self.sections[agent] = _Section(box)
        return section

    # -- the event sink -------------------------------------------------------------------

    def __call__(self, event: Any) -> None:
        try:
            self._mirror(event)
            self._handle(event)
        except Exception as error:  # a rendering bug must not kill the agent's turn
            self._section("main").add(widgets.HTML(f'<div style="color:#cf222e">display error: {h(error)}</div>'))

    def _handle(self, event: Any) -> None:
        agent = getattr(event, "agent", "main") or "main"
        if isinstance(event, TextDelta):
            section = self._section(agent)
            if section.segment is None:
                section.segment = widgets.HTML()
                section.segment.add_class("codingcode-text")
                section.add(section.segment)
            section.text += event.text
            self._dirty.add(section)
            self._schedule_flush()
            return
        # Anything else goes below the text so far: flush it first to keep the order.
        self._flush_now()
        if isinstance(event, ToolCallStarted):
            self._tool_line(agent, event.tool_use_id, event.tool, event.input, event.key)
        elif isinstance(event, ToolProgress):
            line = self.tools.get(event.tool_use_id)
            if line is not None:
                line.set_progress(event.text)
        elif isinstance(event, ToolCallFinished):
            line = self._tool_line(agent, event.tool_use_id, event.tool, {})
            line.finish(event.status, event.result, event.duration_ms, event.images)
        elif isinstance(event, ApprovalRequested):
            self._tool_line(agent, event.tool_use_id, event.tool, event.input, event.key).set_status("waiting")
        elif isinstance(event, ApprovalAnswered):
            card = self.cards.get(event.tool_use_id)
            if card is not None and event.answer in ("timeout", "interrupted"):
                card.settle(event.answer, by=event.by)
            line = self.tools.get(event.tool_use_id)
            if line is not None and line.status == "waiting":
                line.set_status("running" if event.answer in ("allow", "always") else "denied")
        elif isinstance(event, AuditRecorded):
            if "decision" in event.record or "kind" in event.record:
                self.audit.add(event.record)
        elif isinstance(event, TodoUpdated):
            if agent == "main":
                self.todo.show(event.items)
        elif isinstance(event, McpLoginRequired):
            self._line(agent, _login_html(event))
        elif isinstance(event, Notice):
            self._line(agent, f'<div style="opacity:.75">ℹ {h(event.text)}</div>')
        elif isinstance(event, ErrorEvent):
            self._line(agent, f'<div style="color:#cf222e">⚠ {h(event.message)}</div>')
        elif isinstance(event, UsageUpdated):
            pass
        elif isinstance(event, TurnDone):
            if agent == "main":
                self.footer.value = f'<div class="codingcode-usage" style="opacity:.7">{h(usage_line(event, self.session))}</div>'

    def _line(self, agent: str, html: str) -> None:
        section = self._section(agent)
        section.close_segment()
        section.add(widgets.HTML(html))

    def _tool_line(self, agent: str, tool_use_id: str, tool: str, tool_input: dict[str, Any],
                   key: str | None = None) -> ToolLine:
        line = self.tools.get(tool_use_id)
        if line is None:
            section = self._section(agent)
            section.close_segment()
            line = self.tools[tool_use_id] = ToolLine(tool, tool_input, key)
            section.add(line)
        else:
            if tool_input and not line.input:
                line.input = tool_input
            if key and not line.key:
                line.key = key
        return line

    # -- throttled text -------------------------------------------------------------------

    def _schedule_flush(self) -> None:
        if self._flush_handle is not None:
            return
        delay = max(0.0, self._last_flush + self.interval - time.monotonic())
        self._flush_handle = self.loop.call_later(delay, self._flush_now)

    def _flush_now(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, set()
        for section in dirty:
            if section.segment is not None:
                section.segment.value = render_markdown(section.text)
                self.flushes += 1
        self._last_flush = time.monotonic()

    # -- asking ---------------------------------------------------------------------------

    async def ask(self, request: ApprovalRequest) -> Answer:
        """Show a card and wait for the person's answer (see the module docstring)."""
        self._flush_now()
        card = ApprovalCard(request, loop=self.loop)
        self.cards[request.tool_use_id] = card
        section = self._section(request.agent or "main")
        section.close_segment()
        section.add(card)
        try:
            if await self._wait_frontend():
                return await async_cell.wait_answer(card.answer, self.ip)
            if async_cell.stdin_allowed(self.ip):
                answer = _ask_by_text(request)
                card.settle(answer, by="text prompt")
                return answer
            if self.approval_timeout is not None:
                # The pipeline times the wait; a late click from a frontend still counts.
                return await async_cell.wait_answer(card.answer, self.ip)
            remaining = max(0.0, self.headless_timeout - self.frontend_wait)
            try:
                return await asyncio.wait_for(async_cell.wait_answer(asyncio.shield(card.answer), self.ip), remaining)
            except asyncio.TimeoutError:
                card.settle("no_frontend", by="timeout", note=f"no widget view and no stdin for {self.headless_timeout:g} s")
                self._line(
                    request.agent or "main",
                    f'<div style="color:#9a6700">Denied {h(request.tool)}: nobody could answer (no widget '
                    "frontend, stdin not allowed). Run the cell in JupyterLab, or allow it with a rule or "
                    "<code>--mode</code>.</div>",
                )
                return "deny"
        except asyncio.CancelledError:
            card.settle("interrupted")
            raise

    async def elicit(self, request: Any) -> Any:
        """An MCP server's request for input, as a form in the cell (declined where nobody can see it)."""
        from ..engine.mcp.elicitation import ElicitationResponse
        from .widgets.elicitation import ElicitationForm

        self._flush_now()
        form = ElicitationForm(request, loop=self.loop)
        self.forms.append(form)
        section = self._section(request.agent or "main")
        section.close_segment()
        section.add(form)
        try:
            if await self._wait_frontend():
                return await async_cell.wait_answer(form.answer, self.ip)
        except asyncio.CancelledError:
            form.settle("interrupted")
            raise
        form.settle("no_frontend", note="no widget view")
        self._line(request.agent or "main", f'<div style="color:#9a6700">Declined {h(request.server)}\'s request for '
                   "input: no widget frontend shows this cell.</div>")
        return ElicitationResponse.decline("no widget frontend")

    async def ask_trust(self, items: list["TrustItem"], project: Path) -> TrustAnswer | None:
        """Show the trust card and wait for the answer; None when no frontend can show it."""
        card = TrustCard(items, project, loop=self.loop)
        self._section("main").add(card)
        try:
            if await self._wait_frontend():
                return await async_cell.wait_answer(card.answer, self.ip)
        except asyncio.CancelledError:
            card.settle("interrupted")
            raise
        card.settle("no_frontend")
        return None

    # -- the end ---------------------------------------------------------------------------

    def finish(self, *, interrupted: bool = False) -> None:
        """Final flush; pending cards are marked interrupted; running tools too."""
        self._mirror.finish(interrupted=interrupted)
        if not self.frontend_seen:
            print(self._record.getvalue(), end="")
        self._flush_now()
        for card in self.cards.values():
            if card.state == "pending":
                card.settle("interrupted")
        for form in self.forms:
            form.settle("interrupted")
        if interrupted:
            for line in self.tools.values():
                if line.status in ("running", "waiting"):
                    line.set_status("interrupted")
            self._line("main", '<div style="color:#6e7781"><b>Interrupted.</b></div>')


class TextView:
    """The same events as plain text, for terminal IPython (no widget frontend)."""

    def __init__(self, *, session: "Session | None" = None, out: Any = None) -> None:
        self.session = session
        self.out = out or sys.stdout
        self._at_line_start = True

    def display(self) -> None:
        pass

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self._at_line_start = text.endswith("\n")
            self.out.flush()

    def _print(self, text: str) -> None:
        if not self._at_line_start:
            self._write("\n")
        self._write(text + "\n")

    def __call__(self, event: Any) -> None:
        prefix = "" if getattr(event, "agent", "main") == "main" else f"[{event.agent}] "
        if isinstance(event, TextDelta):
            self._write(reveal(event.text))
        elif isinstance(event, ToolCallStarted):
            self._print(f"{prefix}→ {event.tool} {reveal(short(event.key or '', 70))}")
        elif isinstance(event, ToolCallFinished):
            self._print(f"{prefix}  {event.tool}: {event.status} ({event.duration_ms / 1000:.2f} s)")
        elif isinstance(event, TodoUpdated) and event.agent == "main":
            marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
            self._print("Todo:\n" + "\n".join(f"  {marks[i.status]} {reveal(i.step)}" for i in event.items))
        elif isinstance(event, AuditRecorded) and event.record.get("event") != "outcome" and (
            "decision" in event.record or "kind" in event.record
        ):  # an outcome is already the tool's own line
            f = audit_fields(event.record)
            self._print(f"{prefix}audit: {f['tool']} {f['decision']} {f['why']} {('by ' + f['by']) if f['by'] else ''}".rstrip())
        elif isinstance(event, Notice):
            self._print(f"{prefix}{event.text}")
        elif isinstance(event, ErrorEvent):
            self._print(f"{prefix}error: {event.message}")
        elif isinstance(event, TurnDone) and event.agent == "main":
            self._print(usage_line(event, self.session))

    async def ask_trust(self, items: list["TrustItem"], project: Path) -> TrustAnswer | None:
        """Ask on the terminal when a person is at it; None otherwise (the project stays untrusted)."""
        if not (sys.stdin is not None and sys.stdin.isatty()):
            return None
        self._print("This project's files ask for things that loosen the agent:\n" + "\n".join(trust_lines(items, project)))
        try:
            answer = input("Trust this project? [y/N] ").strip().lower()
        except EOFError:
            return None
        return "trust" if answer in ("y", "yes") else "not_now"

    async def ask(self, request: ApprovalRequest) -> Answer:
        """Ask on stdin (terminal)."""
        if not self._at_line_start:
            self._write("\n")
        return _ask_by_text(request)

    async def elicit(self, request: Any) -> Any:
        """A terminal shows no forms: an MCP server's request for input is declined, and said so."""
        from ..engine.mcp.elicitation import ElicitationResponse

        self._print(f"Declined MCP server {request.server}'s request for input ({request.message}): "
                    "forms are shown in a notebook only.")
        return ElicitationResponse.decline("terminal")

    def finish(self, *, interrupted: bool = False) -> None:
        if interrupted:
            self._print("Interrupted.")


def _login_html(event: McpLoginRequired) -> str:
    return (
        f'<div class="codingcode-login">🔑 MCP server <code>{h(event.server)}</code> needs you to log in: '
        f'<a href="{h(event.url)}" target="_blank" rel="noopener noreferrer">open the login page</a>. '
        "<small>If the page you land on afterwards does not load (the browser runs on another machine), copy its "
        f"address into <code>%agent mcp login {h(event.server)} ADDRESS</code>.</small></div>"
    )

