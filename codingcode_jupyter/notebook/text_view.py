"""The turn as text, for terminal IPython; and asking on stdin (terminal or a notebook's input box).

Model text is rendered for the terminal by rich (when installed) a block at a time: a
paragraph, list or code block is printed once it is complete, so streaming still shows
progress and Markdown never prints raw. A question names what will happen in words and
takes ``y``, ``n``, ``a`` (always) or ``v`` (never); an empty answer asks again, since the
Enter that ended the cell must not count as anyone's "no".
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..engine.approval.types import Answer, ApprovalRequest
from ..engine.events import (
    ApprovalRequested,
    ErrorEvent,
    Notice,
    TextDelta,
    TodoUpdated,
    ToolCallFinished,
    ToolCallStarted,
    TurnDone,
)
from ..engine.front import TrustAnswer
from . import async_cell, words
from .record import LOOP_INTERRUPT_NOTICE, ToolItem, TurnRecord, item_text
from .widgets._text import reveal

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import BaseModel

    from ..engine.approval.types import UnconfinedAnswer, UnconfinedRequest
    from ..engine.mcp.elicitation import ElicitationRequest, ElicitationResponse
    from ..engine.trust.items import TrustItem

__all__ = ["TextView", "RunnerView", "ask_by_text", "ask_unconfined_by_text", "parse_text_answer", "text_question", "PROMPT"]

_TEXT_ANSWERS: dict[str, Answer] = {
    "y": "allow", "yes": "allow", "allow": "allow",
    "n": "deny", "no": "deny", "deny": "deny",
    "a": "always", "always": "always", "always allow": "always",
    "v": "never", "never": "never", "never allow": "never",
}

PROMPT = "Allow it? [y/n/a/v] (y yes, n no, a always allow, v never allow): "
_AGAIN = "Please type y, n, a or v and press Enter: "
_T = TypeVar("_T")


def parse_text_answer(text: str) -> Answer | None:
    """A typed answer (y/n/a/v or the words); None when empty or unrecognised."""
    return _TEXT_ANSWERS.get(text.strip().lower())


def _yes_no(typed: str) -> str | None:
    answer = typed.strip().lower()
    return "yes" if answer in ("y", "yes") else "no" if answer in ("", "n", "no") else None


def text_question(request: ApprovalRequest, project: Any = None) -> str:
    """The question as plain text: what will happen, why, the diff or command, what the buttons save."""
    sentence = words.action(request.tool, request.input, key=request.key, preview=request.preview, project=project)
    lines = [f"{reveal(request.tool)}: the agent wants to {reveal(sentence)}",
             "  " + reveal(words.why_asked(request.layer, request.rule, request.reason, project))]
    if request.sandboxed is not None:
        lines.append("  It runs in the sandbox." if request.sandboxed else "  It runs WITHOUT a sandbox.")
    if request.preview:
        lines.append(reveal(words.relative(request.preview, project)).rstrip("\n"))
    if request.policy:
        # The organisation's policy holds it: only yes or no (a or v count as once, confirm.py).
        lines.append("  " + reveal(request.policy))
        lines.append("Allow it this once? [y/n]: ")
        return "\n".join(lines)
    lines.append("  " + reveal(words.consequences(request.allow_choices, request.deny_choices, request.forced)))
    lines.append(PROMPT)
    return "\n".join(lines)


def _drop_typeahead() -> None:
    """Forget keys typed before the question (the Enter that ended a terminal cell)."""
    try:
        import termios

        if sys.stdin is not None and sys.stdin.isatty():
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass


def _ask_until(question: str, again: str, parse: Callable[[str], _T | None]) -> _T:
    """Ask on stdin until ``parse`` knows the answer (``again`` after an unknown one); an interrupt
    meanwhile cancels the turn like Stop would. EOFError when stdin closes: nobody is left to answer."""
    _drop_typeahead()
    while True:
        with async_cell.sync_interrupts():
            try:
                typed = input(question)
            except KeyboardInterrupt:
                raise asyncio.CancelledError() from None
        answer = parse(typed)
        if answer is not None:
            return answer
        question = again


def ask_by_text(request: ApprovalRequest, project: Any = None) -> Answer:
    """Ask on stdin until a known answer comes; an interrupt meanwhile cancels the turn like Stop would."""
    try:
        return _ask_until(text_question(request, project), _AGAIN, parse_text_answer)
    except EOFError:
        raise asyncio.TimeoutError() from None


_UNCONFINED_KEYS: dict[str, "UnconfinedAnswer"] = {"a": "ask_each", "s": "session", "n": "never"}


def ask_unconfined_by_text(request: "UnconfinedRequest") -> "UnconfinedAnswer | None":
    """The no-sandbox question on stdin, until a known answer comes (an interrupt cancels the turn);
    None when stdin closes."""
    from .widgets.unconfined import unconfined_lines

    question = "\n".join(unconfined_lines(request)) + ("\nHow should commands run? [a/s/n] (a ask for each, "
                                                        "s ordinary ones unconfined this session, n never here): ")
    try:
        return _ask_until(question, "Please type a, s or n and press Enter: ",
                          lambda typed: _UNCONFINED_KEYS.get(typed.strip().lower()[:1]) if typed.strip() else None)
    except EOFError:
        return None


def _cut_point(text: str) -> int:
    """Where the text so far ends in a complete block (a blank line outside a code fence); 0 if none."""
    fenced = False
    cut = 0
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            if not fenced and line.endswith("\n"):
                cut = position
        elif not stripped and not fenced and line.endswith("\n"):
            cut = position
    return cut


class TextView:
    """The engine's :class:`~..engine.front.Front` as text, for terminal IPython (no widget frontend)."""

    def __init__(self, *, session: Any = None, out: Any = None, markdown: bool | None = None) -> None:
        self.session = session
        self.project = getattr(session, "project", None)
        self.out = out or sys.stdout
        self.record = TurnRecord(project=self.project, session=session)
        self._at_line_start = True
        self._text = ""
        self._console = _console(self.out) if markdown is not False else None
        # A terminal has no Stop button (Ctrl-C interrupts); kept so every view takes the callback.
        self.on_stop: Any = None

    def display(self, reuse: Any = None) -> None:
        pass

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self._at_line_start = text.endswith("\n")
            self.out.flush()

    def _print(self, text: str) -> None:
        self._flush_text(everything=True)
        if not self._at_line_start:
            self._write("\n")
        self._write(text + "\n")

    def _flush_text(self, *, everything: bool = False) -> None:
        cut = len(self._text) if everything else _cut_point(self._text)
        if not cut:
            return
        block, self._text = self._text[:cut], self._text[cut:]
        if not block.strip():
            return
        if self._console is not None:
            from rich.markdown import Markdown

            self._console.print(Markdown(reveal(block)))
            self._at_line_start = True
        else:
            self._write(reveal(block) if block.endswith("\n") else reveal(block) + "\n")

    def __call__(self, event: BaseModel) -> None:
        item = self.record.apply(event)
        agent = getattr(event, "agent", "main")
        prefix = "" if agent == "main" else f"[{agent}] "
        if isinstance(event, TextDelta):
            self._text += event.text
            self._flush_text()
        elif isinstance(event, ToolCallStarted):
            # One row per call, printed when it ends (a terminal cannot rewrite a row the way a cell does);
            # a call that needs an answer shows its question first.
            self._flush_text(everything=True)
        elif isinstance(event, ToolCallFinished) and isinstance(item, ToolItem):
            rows = item_text(item, self.project, indent="  ")
            shown = len(item.diff.splitlines()[:200]) if item.diff and item.request is not None else 0
            if shown:  # the question already showed the diff
                rows = rows[:-shown]
            self._print(prefix + "\n".join(rows).lstrip())
        elif isinstance(event, TodoUpdated) and agent == "main":
            marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
            self._print("Todo:\n" + "\n".join(f"  {marks[i.status]} {reveal(i.step)}" for i in event.items))
        elif isinstance(event, Notice) and not (agent == "main" and event.text == LOOP_INTERRUPT_NOTICE):
            self._print(f"{prefix}{reveal(words.relative(event.text, self.project))}")
        elif isinstance(event, ErrorEvent):
            self._print(f"{prefix}error: {reveal(words.relative(event.message, self.project))}")
        elif isinstance(event, TurnDone) and agent == "main":
            self._print(self.record.usage)
        elif isinstance(event, ApprovalRequested):
            self._flush_text(everything=True)

    async def ask(self, request: ApprovalRequest) -> Answer:
        """Ask on stdin (terminal)."""
        self._flush_text(everything=True)
        if not self._at_line_start:
            self._write("\n")
        offer = request.dry_run
        if offer is not None and offer.available and sys.stdin is not None and sys.stdin.isatty():
            try:
                wanted = _ask_until("Preview it first, in a throwaway copy of the project? [y/N] ",
                                    "Please type y or n and press Enter: ", _yes_no)
            except EOFError:
                wanted = "no"
            if wanted == "yes":
                self._print(reveal(words.relative((await request.run_preview()).render(), self.project)))
        elif offer is not None and not offer.available:
            # As the card's disabled button: why this command cannot be seen first.
            self._print(reveal(words.relative(f"(No preview: {offer.reason}.)", self.project)))
        return ask_by_text(request, self.project)

    async def ask_trust(self, items: list[TrustItem], project: Path) -> TrustAnswer | None:
        """Ask on the terminal when a person is at it; None otherwise (the project stays untrusted)."""
        from .widgets.trust import trust_lines

        if not (sys.stdin is not None and sys.stdin.isatty()):
            return None
        self._print("This project's files ask for things that loosen the agent:\n" + "\n".join(trust_lines(items, project)))
        try:
            answer = input("Trust this project? [y/N] ").strip().lower()
        except EOFError:
            return None
        return "trust" if answer in ("y", "yes") else "not_now"

    async def ask_unconfined(self, request: UnconfinedRequest) -> UnconfinedAnswer | None:
        """Ask on the terminal when a person is at it; None otherwise (each command is then asked)."""
        if not (sys.stdin is not None and sys.stdin.isatty()):
            return None
        self._flush_text(everything=True)
        if not self._at_line_start:
            self._write("\n")
        return ask_unconfined_by_text(request)

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        """A terminal shows no forms: an MCP server's request for input is declined, and said so."""
        from ..engine.mcp.elicitation import ElicitationResponse

        self._print(f"Declined MCP server {request.server}'s request for input ({request.message}): "
                    "forms are shown in a notebook only.")
        return ElicitationResponse.decline("terminal")

    def finish(self, *, interrupted: bool = False, failed: bool = False) -> None:
        # The interrupt itself is said once, by the cell's exception.
        self._flush_text(everything=True)
        self.record.finish(interrupted=interrupted, failed=failed)


def _console(out: Any) -> Any:
    """A rich console writing to ``out``, or None when rich is not installed."""
    try:
        from rich.console import Console
    except ImportError:
        return None
    terminal = bool(getattr(out, "isatty", lambda: False)())
    return Console(file=out, force_terminal=terminal, highlight=False, soft_wrap=False,
                   width=None if terminal else 100)


class RunnerView:
    """The engine's front for a cell a runner sent (nbconvert, papermill): no widgets, since nobody sees
    them and the runner would save every one's state in the notebook; the turn's static record takes the
    place of a one-line notice when it ends. Nobody can answer: a question is refused as nobody's answer
    (the pipeline records it as a timeout), a trust or no-sandbox question keeps the safer choice, and
    an MCP server's request for input is declined."""

    RUNNING = "The agent is working (a runner such as nbconvert sent this cell: its record follows when the turn ends)."

    def __init__(self, *, session: Any = None) -> None:
        self.session = session
        self.project = getattr(session, "project", None)
        self.record = TurnRecord(project=self.project, session=session)
        self.handle: Any = None
        self.on_stop: Any = None
        self.stopped_by_button = False
        self.trust_unanswered: str | None = None

    def display(self, reuse: Any = None) -> None:
        from IPython.display import display

        shown = {"text/plain": self.RUNNING}
        if reuse is not None:
            reuse.update(shown, raw=True)
            self.handle = reuse
        else:
            self.handle = display(shown, raw=True, display_id=True)

    def __call__(self, event: BaseModel) -> None:
        self.record.apply(event)

    async def ask(self, request: ApprovalRequest) -> Answer:
        from .record import NoteItem

        agent = request.agent or "main"
        self.record.section(agent).append(NoteItem(agent, "notice", (
            "Nobody was there to answer (a runner such as nbconvert or papermill sent this cell: no widget view, "
            f"no stdin), so {request.refused or request.tool + ' was not run'}. Run the notebook where someone can "
            "answer, or let a rule or --approval-policy decide.")))
        raise asyncio.TimeoutError  # nobody's answer, recorded by the pipeline as a timeout

    async def ask_trust(self, items: list[TrustItem], project: Path) -> TrustAnswer | None:
        self.trust_unanswered = "a runner sent this cell and nobody could be asked"
        return None

    async def ask_unconfined(self, request: UnconfinedRequest) -> UnconfinedAnswer | None:
        return None

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        from ..engine.events import Notice as _Notice
        from ..engine.mcp.elicitation import ElicitationResponse

        self(_Notice(agent=request.agent or "main",
                     text=f"Declined {request.server}'s request for input: a runner sent this cell and nobody sees forms."))
        return ElicitationResponse.decline("runner")

    def finish(self, *, interrupted: bool = False, failed: bool = False) -> None:
        self.record.finish(interrupted=interrupted, failed=failed)
        if self.handle is not None:
            self.handle.update({"text/html": self.record.html(), "text/plain": self.record.text()}, raw=True)
