"""``%agent undo`` as a person meets it: the plan with a coloured diff, then a question before anything is restored.

The plan is shown as HTML (each file's diff tinted, long lines scrolling sideways rather than
wrapping mid-word) with the plain text as its fallback. The question is two buttons in a
notebook; where no widget view renders it (an export, a run without a frontend) it falls back
to ``input()`` when stdin is allowed, and otherwise nothing is restored: undo never acts
without a yes (``--yes`` is that yes, for scripts).
"""

from __future__ import annotations

import asyncio
import html
from typing import Any, Literal

from ..engine.deadline import within
from . import async_cell, theme, words
from .rendering import diff_html

__all__ = ["plan_html", "ask_restore", "Confirmation", "KernelNames"]

Confirmation = Literal["yes", "no", "nobody"]


class KernelNames:
    """The kernel's side of an undo: the variables a turn's code changed (kernel/undo_names.py)."""

    def __init__(self, shell: Any) -> None:
        from .kernel.namespace import KernelAccess
        from .kernel.undo_names import journal_for

        namespace = getattr(shell, "user_ns", None)
        self.available = namespace is not None
        self.namespace = namespace if namespace is not None else {}
        self.hidden = KernelAccess(shell).hidden() if namespace is not None else set()
        self.journal = journal_for(self.namespace)

    def checkpoint(self, session_id: str, turn_id: int) -> Any:
        """An empty file checkpoint for a turn that changed only variables (None: it has a file
        checkpoint, or no record of variables)."""
        from datetime import datetime, timezone

        from ..engine.checkpoints import TurnCheckpoint

        record = self.journal.turns.get((session_id, turn_id))
        if record is None or record.undone:
            return None
        return TurnCheckpoint(session_id=session_id, turn_id=turn_id,
                              created=datetime.now(timezone.utc).isoformat(timespec="microseconds"))

    def newer_than(self, session_id: str, chosen: Any) -> Any:
        """The newest turn of the session whose variables are not undone, when it is newer than the
        files' ``chosen`` turn and changed something (None otherwise)."""
        record = self.journal.latest(session_id)
        if record is None or (chosen is not None and chosen.turn_id >= record.turn_id):
            return None
        if self.journal.plan(self.namespace, session_id, record.turn_id, hidden=self.hidden) is None:
            return None
        return self.checkpoint(session_id, record.turn_id)

    def plan(self, session_id: str, turn_id: int) -> Any:
        return self.journal.plan(self.namespace, session_id, turn_id, hidden=self.hidden)

    def restore(self, plan: Any) -> list[dict[str, Any]]:
        return self.journal.restore(self.namespace, plan)


def _names_html(variables: Any) -> str:
    if variables is None or not variables.names:
        return ""
    rows = []
    for item in variables.names:
        note = f" — {item.note}" if item.note else ""
        conflict = f" — <b>conflict</b>: {html.escape(item.conflict)}" if item.conflict else ""
        action = item.action.replace("_", " ")
        style = f' style="color:{theme.ROLE["bad"]}"' if item.action == "not_restorable" else ""
        rows.append(f"<li{style}><b>{html.escape(action)}</b> <code>{html.escape(item.name)}</code> "
                    f"({html.escape(item.kind)}){html.escape(note)}{conflict}</li>")
    return f'<div>Variables ({len(variables.names)}):</div><ul style="margin:2px 0">{"".join(rows)}</ul>'


def plan_html(plan: Any, project: Any, variables: Any = None) -> str:
    """The undo plan: one row per file (what will happen to it), then each file's diff, coloured;
    the variables the turn's code changed, and which cannot be restored, before the diffs."""
    rows = []
    for item in plan.files:
        note = f" — conflict: {item.conflict}" if item.conflict else ""
        note += f" — refused: {item.refused}" if item.refused else ""
        rows.append(f"<li><b>{html.escape(item.action)}</b> <code>{html.escape(words.relative(item.path, project))}</code>"
                    f"{html.escape(words.relative(note, project))}</li>")
    rows += [f"<li>cannot undo: {html.escape(words.relative(limit, project))}</li>" for limit in plan.limits]
    count = len(plan.files)
    head = f"Undo {html.escape(plan.checkpoint.label)} ({count} file{'s' if count != 1 else ''}):"
    diffs = "".join(diff_html(item.diff) for item in plan.files if item.diff)
    return (f'<div class="codingcode-undo"><div>{head}</div><ul style="margin:2px 0">{"".join(rows)}</ul>'
            f"{_names_html(variables)}{diffs}</div>")


class _Question:
    """Restore / Cancel buttons whose click resolves a future on the cell's loop (clicks may come on another thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, question: str) -> None:
        import ipywidgets as widgets

        self.loop = loop
        self.answer: asyncio.Future[Confirmation] = loop.create_future()
        self.seen: asyncio.Future[bool] = loop.create_future()
        self.text = widgets.HTML(f"<b>{html.escape(question)}</b>")
        self.restore = widgets.Button(description="Restore", button_style="danger")
        self.cancel = widgets.Button(description="Cancel")
        self.restore.on_click(lambda _b: self._clicked("yes"))
        self.cancel.on_click(lambda _b: self._clicked("no"))
        self.box = widgets.VBox([self.text, widgets.HBox([self.restore, self.cancel])])
        self.box.add_class("codingcode-undo-question")
        # Counting views tells whether a frontend shows the buttons at all.
        self.box._view_count = 0
        self.box.observe(self._viewed, names="_view_count")

    def _viewed(self, change: dict[str, Any]) -> None:
        if (change.get("new") or 0) >= 1:
            self.loop.call_soon_threadsafe(_settle, self.seen, True)

    def _clicked(self, answer: Confirmation) -> None:
        self.restore.disabled = self.cancel.disabled = True
        self.loop.call_soon_threadsafe(_settle, self.answer, answer)

    def close(self) -> None:
        for widget in (self.restore, self.cancel, self.text, *self.box.children, self.box):
            widget.close()


def _settle(future: "asyncio.Future[Any]", value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _ask_by_text(question: str) -> Confirmation:
    try:
        said = input(f"{question} [y/N] ")
    except (EOFError, KeyboardInterrupt):
        return "no"
    return "yes" if said.strip().lower() in ("y", "yes") else "no"


async def ask_restore(shell: Any, question: str, *, frontend_wait: float) -> Confirmation:
    """Ask before restoring: buttons in a notebook, ``input()`` where only text reaches a person;
    "nobody" when neither does (nothing is restored then)."""
    from IPython.display import display

    if async_cell.kernel_of(shell) is None:  # terminal IPython
        return _ask_by_text(question) if async_cell.stdin_allowed(shell) else "nobody"
    if async_cell.sent_by_runner(shell):  # nbconvert, papermill: no buttons (the runner would save their state)
        return "nobody"
    loop = asyncio.get_running_loop()
    asked = _Question(loop, question)
    handle = display(asked.box, display_id=True)
    answer: Confirmation
    try:
        try:
            await within(async_cell.wait_answer(asyncio.shield(asked.seen), shell), frontend_wait)
            seen = True
        except asyncio.TimeoutError:
            seen = (asked.box._view_count or 0) >= 1
        if seen:
            answer = await async_cell.wait_answer(asked.answer, shell)
        elif async_cell.stdin_allowed(shell):
            answer = _ask_by_text(question)
        else:
            answer = "nobody"
    except asyncio.CancelledError:
        answer = "no"
        raise
    finally:
        said = {"yes": "Restore: yes.", "no": "Not restored (cancelled).",
                "nobody": "Not restored: nobody could answer here."}[answer]
        if handle is not None:
            # The saved notebook keeps the answer, not two dead buttons.
            handle.update({"text/plain": f"{question} {said}",
                           "text/html": f'<div style="color:{theme.MUTED}">{html.escape(question)} {html.escape(said)}</div>'},
                          raw=True)
        asked.close()
    return answer
