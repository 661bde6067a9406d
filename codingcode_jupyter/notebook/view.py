"""Rendering one turn's event stream into the cell, and asking the person in it.

While the turn runs the cell shows live widgets: the conversation on the left (streamed
Markdown, one row per tool call, approval cards, notices; a sub-agent's output in its own
collapsible section), the todo and audit widgets on the right, a "thinking" indicator with
the seconds it has waited and a Stop button. Streamed text is coalesced so the frontend
gets at most ``max_rate`` display updates a second however fast tokens arrive. When the
turn ends the same display is replaced by the static record (:mod:`.record`): the saved
notebook keeps what happened, readable without a kernel.

Where no widget frontend renders the cell (nbconvert, papermill, a view that never
shows), approvals fall back to ``input()``; where stdin is not allowed either, nobody can
answer: the question times out after ``headless_timeout`` and is recorded as such.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as widgets
from IPython.display import display

from ..engine.approval.types import Answer, ApprovalRequest, Reply
from ..engine.deadline import within
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
)
from ..engine.front import TrustAnswer
from . import async_cell, theme
from .record import NoteItem, TextItem, ToolItem, TurnRecord, note_html, usage_line
from .rendering import render_markdown
from .text_view import TextView, ask_by_text, parse_text_answer
from .widgets._text import h
from .widgets.approval import ApprovalCard
from .widgets.audit import AuditWidget
from .widgets.todo import TodoWidget
from .widgets.tool_line import ToolLine
from .widgets.trust import TrustCard

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..engine.approval.types import UnconfinedAnswer, UnconfinedRequest
    from ..engine.mcp.elicitation import ElicitationRequest, ElicitationResponse
    from ..engine.session import Session
    from ..engine.trust.items import TrustItem

__all__ = ["TurnView", "TextView", "render_markdown", "usage_line", "parse_text_answer", "STOP_LABEL", "register_event",
           "EXTRA_HANDLERS"]

STOP_LABEL = "Stop"
# How often the waiting indicator and running tools' elapsed seconds are redrawn.
TICK = 1.0
# Text that stopped arriving this long ago counts as the model thinking again.
IDLE_AFTER = 1.5


# Renderers for event types of other fronts' own (an MCP form, say): handler(view, event),
# consulted before the built-in ones; see :func:`register_event`.
EXTRA_HANDLERS: dict[type, Callable[["TurnView", Any], None]] = {}


def register_event(event_type: type, handler: Callable[["TurnView", Any], None]) -> None:
    """Render ``event_type`` (and its subclasses) with ``handler`` in every turn's view."""
    EXTRA_HANDLERS[event_type] = handler


class _Section:
    """Where one agent's (main or a sub-agent's) widgets go."""

    def __init__(self, box: widgets.VBox) -> None:
        self.box = box
        self.segment: widgets.HTML | None = None
        self.item: TextItem | None = None

    def add(self, widget: widgets.Widget) -> None:
        self.box.children = (*self.box.children, widget)

    def swap(self, old: widgets.Widget, new: widgets.Widget) -> None:
        self.box.children = tuple(new if child is old else child for child in self.box.children)

    def close_segment(self) -> None:
        self.segment = None
        self.item = None


# What a saved notebook shows for a turn that never reached its end (the kernel restarted or died
# mid-turn): the live widgets' models are gone with the kernel, so an export or a viewer without
# them falls back to this instead of the widget's repr.
CUT_OFF_TEXT = ("This agent turn was cut off before it finished (the kernel restarted or stopped while it ran); "
                "nothing after that moment is recorded here. Run the cell again to redo it.")


class _LiveRoot(widgets.VBox):
    """The live cell's root: a widget view, and for whoever cannot render it, what the turn became."""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, dict):
            data["text/plain"] = CUT_OFF_TEXT
            data["text/html"] = (f'<div class="codingcode-record codingcode-cut-off" style="color:{theme.MUTED}">'
                                 f'{theme.icon("stop")} {h(CUT_OFF_TEXT)}</div>')
        return data


class TurnView:
    """Widgets for one ``%%agent`` cell: the engine's :class:`~..engine.front.Front` in a notebook."""

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
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self.ip = ip
        self.session = session
        self.project = getattr(session, "project", None)
        self.interval = 1.0 / max_rate if max_rate > 0 else 0.0
        self.frontend_wait = frontend_wait
        self.headless_timeout = headless_timeout
        self.approval_timeout = approval_timeout
        self.on_stop = on_stop
        # A runner's cell (nbconvert, papermill) has nobody to answer from its first question on.
        self.runner = async_cell.sent_by_runner(ip)
        self.loop = asyncio.get_event_loop()
        self.record = TurnRecord(project=self.project, session=session, todo=todo)
        self.main = widgets.VBox(layout=widgets.Layout(flex="1 1 0%", min_width="0"))
        self.todo = TodoWidget(self.record.todo)
        self.audit = AuditWidget(self.project)
        self.footer = widgets.HTML()
        # The todo and the audit beside the answer, narrow; shown once one of them has something.
        self.side = widgets.VBox(
            [self.todo, self.audit],
            layout=widgets.Layout(flex="0 1 14em", min_width="10em", padding="0 0 0 8px",
                                  border_left=f"1px solid {theme.BORDER}"),
        )
        self._show_panels()
        self.thinking = widgets.HTML()
        self.thinking.add_class("codingcode-thinking")
        self.stop_button = widgets.Button(description=STOP_LABEL, button_style="warning",
                                          tooltip="End this turn now (the kernel's interrupt also stops the cells after it)",
                                          layout=widgets.Layout(width="auto"))
        self.stop_button.add_class("codingcode-stop")
        self.stop_button.on_click(lambda _b: self._stop_clicked())
        self.status_bar = widgets.HBox([self.stop_button, self.thinking], layout=widgets.Layout(align_items="center"))
        self.root = _LiveRoot([widgets.HBox([self.main, self.side]), self.status_bar, self.footer])
        self.root.add_class("codingcode-cell")
        for name in ("tex2jax_ignore", "mathjax_ignore"):  # a cost line "$0.01 … $0.02" is not LaTeX
            self.root.add_class(name)
        # Opt in to view counting: the frontend reports each rendered view, which is how
        # we know a person can see (and click) an approval card.
        self.root._view_count = 0
        self._seen = self.loop.create_future()
        self.root.observe(self._view_counted, names="_view_count")
        self.sections: dict[str, _Section] = {"main": _Section(self.main)}
        self.lines: dict[str, ToolLine] = {}
        self.cards: dict[str, ApprovalCard] = {}
        # Questions the person is being asked outside a tool's row (the trust card): no "thinking" meanwhile.
        self.asking_person = 0
        self.trust_cards: list[TrustCard] = []
        # Why the trust question got no answer ("nobody answered within 3 s"), for the turn's notice.
        self.trust_unanswered: str | None = None
        self.forms: list[Any] = []  # MCP elicitation forms
        self._dirty: set[_Section] = set()
        self._flush_handle: asyncio.TimerHandle | None = None
        self._last_flush = 0.0
        self.flushes = 0
        self.handle: Any = None
        self.finished = False
        self._last_event = time.monotonic()
        self._last_text = 0.0
        self._tick_handle: asyncio.TimerHandle | None = None
        self.stopped_by_button = False

    @property
    def tools(self) -> dict[str, ToolLine]:
        return self.lines

    def display(self, reuse: Any = None) -> None:
        """Put the widgets in the cell's output (in place of ``reuse``, a display handle already
        there) and start the clock of the waiting indicator."""
        if reuse is not None:
            reuse.update(self.root)
            self.handle = reuse
        else:
            self.handle = display(self.root, display_id=True)
        self._tick()

    # -- frontend presence --------------------------------------------------------------

    def _view_counted(self, change: dict[str, Any]) -> None:
        if (change.get("new") or 0) >= 1:
            self.loop.call_soon_threadsafe(self._mark_seen)

    def _mark_seen(self) -> None:
        _HEADLESS_KERNELS.discard(id(async_cell.kernel_of(self.ip)))  # a frontend shows this kernel's widgets after all
        if not self._seen.done():
            self._seen.set_result(True)

    @property
    def frontend_seen(self) -> bool:
        """A frontend rendered this cell's widgets."""
        return (self.root._view_count or 0) >= 1

    async def _wait_frontend(self) -> bool:
        if self.frontend_seen:
            return True
        try:
            await within(async_cell.wait_answer(asyncio.shield(self._seen), self.ip), self.frontend_wait)
        except asyncio.TimeoutError:
            return self.frontend_seen
        return True

    # -- the Stop button ------------------------------------------------------------------

    def _stop_clicked(self) -> None:
        if self.finished or self.on_stop is None or self.stopped_by_button:
            return
        self.stopped_by_button = True
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping…"
        # The click may come in on another thread (ipykernel 7 subshells).
        self.loop.call_soon_threadsafe(self.on_stop)

    # -- the waiting indicator and running clocks --------------------------------------------

    def _tick(self) -> None:
        self._tick_handle = None
        if self.finished:
            return
        now = time.monotonic()
        busy = self.asking_person > 0 or any(item.status in ("running", "waiting") for item in self.record.tools.values())
        idle = now - max(self._last_event, self._last_text)
        if not busy and (idle >= IDLE_AFTER or not self.record.items):
            value = f'<span style="color:{theme.MUTED}">{theme.icon("clock")} thinking… {idle:.0f} s</span>'
        else:
            value = ""
        if self.thinking.value != value:
            self.thinking.value = value
        for line in self.lines.values():
            if line.item.status == "running" and line.item.tool_use_id:
                line.render()
        try:
            self._tick_handle = self.loop.call_later(TICK, self._tick)
        except RuntimeError:  # the loop is closed (a test's loop ended)
            self._tick_handle = None

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

    def __call__(self, event: BaseModel) -> None:
        try:
            self._handle(event)
        except Exception as error:  # a rendering bug must not kill the agent's turn
            self._section("main").add(widgets.HTML(
                f'<div style="color:{theme.ROLE["bad"]}">display error: {h(type(error).__name__)}: {h(error)}</div>'))

    def _handle(self, event: Any) -> None:
        agent = getattr(event, "agent", "main") or "main"
        if isinstance(event, TextDelta):
            self._last_text = time.monotonic()
            if self.thinking.value:
                self.thinking.value = ""
            item = self.record.apply(event)
            section = self._section(agent)
            if section.segment is None or section.item is not item:
                section.segment = widgets.HTML()
                section.segment.add_class("codingcode-text")
                section.item = item  # type: ignore[assignment]
                section.add(section.segment)
            self._dirty.add(section)
            self._schedule_flush()
            return
        self._last_event = time.monotonic()
        # Anything else goes below the text so far: flush it first to keep the order.
        self._flush_now()
        for kind, handler in EXTRA_HANDLERS.items():
            if isinstance(event, kind):
                handler(self, event)
                return
        item = self.record.apply(event)
        if isinstance(event, (ToolCallStarted, ApprovalRequested, ToolCallFinished, ToolProgress)):
            if isinstance(item, ToolItem):
                line = self._line(agent, item)
                if isinstance(event, ToolProgress):
                    line.set_progress(event.text)
                else:
                    line.render()
        elif isinstance(event, ApprovalAnswered):
            self._answered(event)
        elif isinstance(event, AuditRecorded):
            self.audit.show(self.record.audit)
            self._show_panels()
            if isinstance(item, ToolItem) and item.tool_use_id in self.lines:
                self.lines[item.tool_use_id].render()
        elif isinstance(event, TodoUpdated):
            if agent == "main":
                self.todo.show(self.record.todo)
                self._show_panels()
        elif isinstance(event, McpLoginRequired):
            section = self._section(agent)
            section.close_segment()
            section.add(widgets.HTML(_login_html(event)))
        elif isinstance(event, (Notice, ErrorEvent)):
            if isinstance(item, NoteItem):
                section = self._section(agent)
                section.close_segment()
                section.add(widgets.HTML(note_html(item, self.project)))
        elif isinstance(event, TurnDone):
            if agent == "main":
                self.footer.value = f'<div class="codingcode-usage" style="color:{theme.MUTED}">{h(self.record.usage)}</div>'

    def _show_panels(self) -> None:
        """Each side panel only when it has something to show; the side column only when one does."""
        for panel, shown in ((self.todo, bool(self.record.todo)), (self.audit, bool(self.record.audit))):
            panel.layout.display = None if shown else "none"
        self.side.layout.display = None if self.record.todo or self.record.audit else "none"

    def add(self, agent: str, widget: widgets.Widget) -> None:
        """Put ``widget`` at the end of ``agent``'s output (for handlers of other event types)."""
        section = self._section(agent)
        section.close_segment()
        section.add(widget)

    def _line(self, agent: str, item: ToolItem) -> ToolLine:
        line = self.lines.get(item.tool_use_id)
        if line is None:
            section = self._section(agent)
            section.close_segment()
            line = self.lines[item.tool_use_id] = ToolLine(item=item, project=self.project)
            section.add(line)
        return line

    def _answered(self, event: ApprovalAnswered) -> None:
        """The decision is made: the card settles and its call's row takes its place again."""
        card = self.cards.get(event.tool_use_id)
        line = self.lines.get(event.tool_use_id)
        if card is not None:
            if event.answer in ("timeout", "interrupted"):
                card.settle(event.answer, by=event.by)
            section = self._section(card.request.agent or "main")
            if line is not None:
                section.swap(card, line)
        if line is not None:
            line.render()

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
            if section.segment is not None and section.item is not None:
                section.segment.value = render_markdown(section.item.text)
                self.flushes += 1
        self._last_flush = time.monotonic()

    # -- asking ---------------------------------------------------------------------------

    async def ask(self, request: ApprovalRequest) -> "Answer | Reply":
        """Show a card in place of the call's row and wait for the person's answer (see the module docstring)."""
        self._flush_now()
        card = ApprovalCard(request, loop=self.loop, project=self.project)
        self.cards[request.tool_use_id] = card
        section = self._section(request.agent or "main")
        section.close_segment()
        line = self.lines.get(request.tool_use_id)
        if line is not None and line in section.box.children:
            section.swap(line, card)
        else:
            section.add(card)
        try:
            if await self._wait_frontend():
                return self._reply(card, await async_cell.wait_answer(card.answer, self.ip))
            if async_cell.stdin_allowed(self.ip):
                answer = ask_by_text(request, self.project)
                card.settle(answer, by="text prompt")
                return self._reply(card, answer)
            if self.approval_timeout is not None:
                # The pipeline times the wait; a late click from a frontend still counts.
                return self._reply(card, await async_cell.wait_answer(card.answer, self.ip))
            # The run knows there is no frontend when a runner sent this cell (no cell id, no stdin), or once a
            # question in this kernel went unseen for the whole wait: then a question waits only for a view,
            # not the headless timeout. A notebook editor's cell that no view shows yet waits the whole time.
            kernel = async_cell.kernel_of(self.ip)
            unseen_before = kernel is not None and id(kernel) in _HEADLESS_KERNELS
            known = unseen_before or self.runner
            remaining = 0.0 if known else max(0.0, self.headless_timeout - self.frontend_wait)
            try:
                answer = await within(async_cell.wait_answer(asyncio.shield(card.answer), self.ip), remaining)
                return self._reply(card, answer)
            except asyncio.TimeoutError:
                waited = self.frontend_wait if known else self.headless_timeout
                card.settle("no_frontend", note=f"no widget view and no stdin for {waited:g} s")
                if kernel is not None and not self.frontend_seen:
                    _HEADLESS_KERNELS.add(id(kernel))
                why = ("no widget frontend has shown a question in this run" if unseen_before
                       else "a runner such as nbconvert or papermill sent this cell: no widget view, no stdin"
                       if self.runner else f"no widget frontend, no stdin, within {self.headless_timeout:g} s")
                self.record.section(request.agent or "main").append(NoteItem(
                    request.agent or "main", "notice",
                    f"Nobody was there to answer ({why}), so {request.refused or request.tool + ' was not run'}. "
                    "Run the notebook where "
                    "someone can answer, or let a rule or --approval-policy decide."))
                # A timeout, not a person's "no": the pipeline records it as by "timeout".
                raise
        except asyncio.CancelledError:
            card.settle("interrupted")
            raise

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        """An MCP server's request for input, as a form in the cell (declined where nobody can see it)."""
        from ..engine.mcp.elicitation import ElicitationResponse
        from .widgets.elicitation import ElicitationForm

        self._flush_now()
        form = ElicitationForm(request, loop=self.loop)
        self.forms.append(form)
        self.add(request.agent or "main", form)
        try:
            if await self._wait_frontend():
                return await async_cell.wait_answer(form.answer, self.ip)
        except asyncio.CancelledError:
            form.settle("interrupted")
            raise
        form.settle("no_frontend", note="no widget view")
        self(Notice(agent=request.agent or "main",
                    text=f"Declined {request.server}'s request for input: no widget frontend shows this cell."))
        return ElicitationResponse.decline("no widget frontend")

    async def ask_trust(self, items: list["TrustItem"], project: Path) -> TrustAnswer | None:
        """Show the trust card and wait for the answer; None when no frontend can show it."""
        card = TrustCard(items, project, loop=self.loop)
        self.trust_cards.append(card)
        self._section("main").add(card)
        self.asking_person += 1
        self.thinking.value = ""
        answer: TrustAnswer | None = None
        try:
            if not await self._wait_frontend():
                card.settle("no_frontend")
            elif self.approval_timeout is None:
                answer = await async_cell.wait_answer(asyncio.shield(card.answer), self.ip)
            else:
                # --approval-timeout bounds every question of the turn, this one too.
                try:
                    answer = await within(async_cell.wait_answer(asyncio.shield(card.answer), self.ip),
                                                    self.approval_timeout)
                except asyncio.TimeoutError:
                    self.trust_unanswered = f"nobody answered within {self.approval_timeout:g} s"
                    card.settle("timeout", note=self.trust_unanswered)
        except BaseException:  # interrupted (CancelledError, or KeyboardInterrupt on an older kernel)
            card.settle("interrupted")
            raise
        finally:
            self.asking_person -= 1
        # The card is gone from the saved record; one line says what was decided.
        said = {"trust": "You trusted this project's files for this session.",
                "not_now": "You did not trust this project's files (Not now): what they ask for is ignored."}
        if answer in said:
            self.record.items.append(NoteItem("main", "notice", said[answer]))
        return answer

    async def ask_unconfined(self, request: "UnconfinedRequest") -> "UnconfinedAnswer | None":
        """No sandbox here: the once-per-session card (or the text prompt where stdin is allowed); None
        when nobody can answer."""
        from .text_view import ask_unconfined_by_text
        from .widgets.unconfined import UnconfinedCard, unconfined_settled

        self._flush_now()
        agent = request.agent or "main"
        section = self._section(agent)
        section.close_segment()
        card = UnconfinedCard(request, loop=self.loop)
        section.add(card)
        answer: UnconfinedAnswer | None
        try:
            if await self._wait_frontend():
                clicked: UnconfinedAnswer = await async_cell.wait_answer(card.answer, self.ip)
                answer = clicked
            elif async_cell.stdin_allowed(self.ip):
                answer = ask_unconfined_by_text(request)
                card.settle(answer or "no_frontend")
            else:
                card.settle("no_frontend")
                answer = None
        except asyncio.CancelledError:
            card.settle("interrupted")
            raise
        if answer is not None:
            # The card is gone from the saved record; one line says what was decided.
            self.record.section(agent).append(NoteItem(agent, "notice",
                                                       unconfined_settled(answer, request.settings_path)))
        return answer

    def _reply(self, card: ApprovalCard, answer: Answer) -> "Answer | Reply":
        """The answer, with the rules to save when it is "Always allow" or "Never allow"."""
        rules = card.rules_for(answer) if answer in ("always", "never") else None
        item = self.record.tools.get(card.request.tool_use_id)
        if item is not None and answer in ("always", "never"):
            item.saved_rules = rules or []
        return Reply(answer=answer, rules=rules) if rules else answer

    # -- the end ---------------------------------------------------------------------------

    def finish(self, *, interrupted: bool = False, failed: bool = False) -> None:
        """Final flush; what still waits or runs is marked; the widgets give way to the static record."""
        self._flush_now()
        self.finished = True
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None
        self.record.finish(interrupted=interrupted, failed=failed)
        for card in self.cards.values():
            if card.state == "pending":
                card.settle("interrupted")
        for form in self.forms:
            form.settle("interrupted")
        for trust in self.trust_cards:
            trust.settle("interrupted")
        for line in self.lines.values():
            line.render()
        self.thinking.value = ""
        self.stop_button.layout.display = "none"
        if self.handle is not None:
            html = self.record.html()
            # A page reloaded during the turn no longer receives this cell's display updates (they
            # follow the request of the page that ran it), only widget state: the root keeps the
            # record as its one child for such a page, everything else is closed.
            final = widgets.HTML(html)
            final.add_class("codingcode-final")
            live, self.root.children = self.root.children, (final,)
            self.handle.update({"text/html": html, "text/plain": self.record.text()}, raw=True)
            for child in (*live, *self.cards.values(), *self.forms):  # answered cards are no longer in the tree
                _close_tree(child)


# Kernels whose run is known to have no frontend (see TurnView.ask); only a kernel has a "run".
_HEADLESS_KERNELS: set[int] = set()


def _close_tree(widget: Any) -> None:
    """Close a widget and everything under it (the static record replaced its views)."""
    for child in getattr(widget, "children", ()) or ():
        _close_tree(child)
    widget.close()


def _login_html(event: McpLoginRequired) -> str:
    return (
        f'<div class="codingcode-login">{theme.icon("info", "info")} MCP server <code>{h(event.server)}</code> needs you '
        f'to log in: <a href="{h(event.url)}" target="_blank" rel="noopener noreferrer">open the login page</a>. '
        f'<small style="color:{theme.MUTED}">If the page you land on afterwards does not load (the browser runs on another '
        f"machine), copy its address into <code>%agent mcp login {h(event.server)} ADDRESS</code>.</small></div>"
    )
