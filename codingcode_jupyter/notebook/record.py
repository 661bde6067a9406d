"""The turn as a document: what the agent said and did, kept in the saved notebook.

:class:`TurnRecord` folds the engine's events into items (text, tool calls with their
decisions, notices, sub-agent sections), the todo list, the audit rows and the usage line.
The live view renders its rows from the same items; when the turn ends the cell's widgets
are replaced by :meth:`TurnRecord.html` and :meth:`TurnRecord.text`, which need no kernel,
no widget manager and no script: GitHub, nbviewer and an HTML export read them as they are.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from ..engine.approval.types import ApprovalRequest
from ..engine.events import (
    ApprovalAnswered,
    ApprovalRequested,
    AuditRecorded,
    ErrorEvent,
    Notice,
    TextDelta,
    TodoItem,
    TodoUpdated,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
    TurnDone,
)
from . import theme, words
from .rendering import diff_html, pre, render_markdown
from .theme import icon
from .widgets._text import h, pretty_json, reveal, short

__all__ = ["TextItem", "ToolItem", "NoteItem", "AgentSection", "TurnRecord", "tool_row_html", "usage_line",
           "todo_html", "audit_html", "is_diff"]

RESULT_LIMIT = 20_000
# Text spacing inside widgets, whose own line height is a control's (it double-spaces text).
LINES = "line-height:1.45"
_STATUS_ICONS = {"running": ("clock", "info"), "waiting": ("question", "warn"), "ok": ("check", "ok"),
                 "error": ("cross", "bad"), "denied": ("cross", "bad"), "interrupted": ("stop", None)}


def is_diff(text: str) -> bool:
    """A unified diff (what write_file and edit_file show as their result)."""
    return text.startswith("--- ") and "\n+++ " in text


@dataclass
class TextItem:
    agent: str
    text: str = ""


@dataclass
class NoteItem:
    agent: str
    kind: str  # "notice" | "error"
    text: str


@dataclass
class ToolItem:
    """One tool call, from its start to its outcome, with the question and answer if it was asked."""

    agent: str
    tool_use_id: str
    tool: str
    input: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    status: str = "running"
    result: str = ""
    images: list[dict[str, str]] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    duration_ms: float | None = None
    request: ApprovalRequest | None = None
    asked_at: float | None = None
    answered_at: float | None = None
    answer: str | None = None
    # The rules "Always allow" / "Never allow" saved (the one picked, else the narrowest offered).
    saved_rules: list[str] | None = None
    decision: dict[str, Any] | None = None
    outcome: str = ""
    # A call reviewed where it applies (edit_notebook): each change and its answer, from the audit.
    review: list[dict[str, Any]] = field(default_factory=list)

    @property
    def waited(self) -> float | None:
        """Seconds the call waited for a person (None if nobody was asked)."""
        if self.asked_at is None:
            return None
        end = self.answered_at if self.answered_at is not None else time.monotonic()
        return max(0.0, end - self.asked_at)

    @property
    def run_seconds(self) -> float | None:
        """How long the tool itself ran: the whole call less the wait for a person."""
        if self.duration_ms is None:
            return None
        return max(0.0, self.duration_ms / 1000 - (self.waited or 0.0))

    def elapsed(self) -> float:
        """Seconds since the tool started running (after any answer)."""
        start = self.answered_at if self.answered_at is not None else self.started
        return max(0.0, time.monotonic() - start)

    @property
    def diff(self) -> str:
        if is_diff(self.result):
            return self.result
        if self.request is not None and is_diff(self.request.preview or ""):
            return self.request.preview
        return ""


@dataclass
class AgentSection:
    """A sub-agent's own output, nested where it was dispatched."""

    agent: str
    items: list["Item"] = field(default_factory=list)


Item = Union[TextItem, ToolItem, NoteItem, AgentSection]


def usage_line(done: TurnDone, session: Any = None) -> str:
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
    stop = {"end_turn": "done", "interrupted": "stopped", "max_steps": "step limit reached", "error": "ended by an error",
            "max_tokens": "answer cut at the token limit", "refusal": "refused"}.get(done.stop_reason, done.stop_reason)
    return f"{u.total_input:,} in{cache} / {u.output_tokens:,} out{cost}{total} · {stop}"


# The loop says this when a turn is cancelled; the cell says it once itself.
LOOP_INTERRUPT_NOTICE = "Interrupted."


class TurnRecord:
    """Everything one turn showed, folded from its events (see the module docstring)."""

    def __init__(self, *, project: Path | str | None = None, session: Any = None,
                 todo: list[TodoItem] | None = None) -> None:
        self.project = project
        self.session = session
        # The cell's --approval-policy when it is not "ask": nobody is asked, by the person's choice.
        self.policy: str | None = None
        self.items: list[Item] = []
        self.sections: dict[str, list[Item]] = {"main": self.items}
        self.tools: dict[str, ToolItem] = {}
        self.todo: list[TodoItem] = list(todo or [])
        self.audit: list[dict[str, Any]] = []
        self.usage = ""
        self.stop_reason = ""
        self.interrupted = False
        # This turn changed the todo (a turn that failed at once must not show the previous turn's as its own).
        self.todo_changed = False

    # -- folding events ----------------------------------------------------------------

    def section(self, agent: str) -> list[Item]:
        found = self.sections.get(agent)
        if found is not None:
            return found
        parent = self.section(agent.rsplit("/", 1)[0] if "/" in agent else "main")
        sub = AgentSection(agent)
        parent.append(sub)
        self.sections[agent] = sub.items
        return sub.items

    def tool(self, agent: str, tool_use_id: str, tool: str) -> ToolItem:
        item = self.tools.get(tool_use_id)
        if item is None:
            item = self.tools[tool_use_id] = ToolItem(agent=agent, tool_use_id=tool_use_id, tool=tool)
            self.section(agent).append(item)
        return item

    def apply(self, event: Any) -> Item | None:
        """Fold one event in; returns the item it created or changed (None for side data)."""
        agent = getattr(event, "agent", "main") or "main"
        if isinstance(event, TextDelta):
            items = self.section(agent)
            if not items or not isinstance(items[-1], TextItem):
                items.append(TextItem(agent))
            items[-1].text += event.text  # type: ignore[union-attr]
            return items[-1]
        if isinstance(event, ToolCallStarted):
            item = self.tool(agent, event.tool_use_id, event.tool)
            item.input, item.key = dict(event.input), event.key or ""
            return item
        if isinstance(event, ToolProgress):
            running = self.tools.get(event.tool_use_id)
            if running is not None:
                running.progress = (running.progress + [event.text])[-20:]
            return running
        if isinstance(event, ApprovalRequested):
            item = self.tool(agent, event.tool_use_id, event.tool)
            item.request, item.asked_at, item.status = event.request, time.monotonic(), "waiting"
            if not item.input:
                item.input = dict(event.request.input)
            item.key = item.key or event.request.key or ""
            return item
        if isinstance(event, ApprovalAnswered):
            asked = self.tools.get(event.tool_use_id)
            if asked is not None:
                asked.answer, asked.answered_at = event.answer, time.monotonic()
                if asked.saved_rules is None and asked.request is not None and event.answer in ("always", "never"):
                    offered = asked.request.allow_choices if event.answer == "always" else asked.request.deny_choices
                    asked.saved_rules = list(offered[0]) if offered else []
                if asked.status == "waiting":
                    asked.status = "running" if event.answer in ("allow", "always") else "denied"
            return asked
        if isinstance(event, ToolCallFinished):
            item = self.tool(agent, event.tool_use_id, event.tool)
            item.status, item.result, item.duration_ms = event.status, event.result, event.duration_ms
            item.images = list(event.images)
            return item
        if isinstance(event, AuditRecorded):
            record = event.record
            if self.policy and record.get("by") == "nobody":
                # Nobody was asked because the cell said so: the policy refused it, nobody was not "missing".
                record = {**record, "by": "policy", "policy": self.policy}
            return self._audit(record)
        if isinstance(event, TodoUpdated):
            if agent == "main":
                self.todo = list(event.items)
                self.todo_changed = True
            return None
        if isinstance(event, Notice):
            if agent == "main" and event.text == LOOP_INTERRUPT_NOTICE:
                return None  # see LOOP_INTERRUPT_NOTICE
            note = NoteItem(agent, "notice", event.text)
            self.section(agent).append(note)
            return note
        if isinstance(event, ErrorEvent):
            note = NoteItem(agent, "error", event.message)
            self.section(agent).append(note)
            return note
        if isinstance(event, TurnDone) and agent == "main":
            self.stop_reason = event.stop_reason
            self.usage = usage_line(event, self.session)
        return None

    def _audit(self, record: dict[str, Any]) -> ToolItem | None:
        item = self.tools.get(str(record.get("tool_use_id") or ""))
        if record.get("event") == "review":
            changes = [dict(change) for change in record.get("changes") or [] if isinstance(change, dict)]
            fold_review(self.audit, record)
            if item is not None:
                item.review = changes
            return item
        if "decision" not in record and "kind" not in record:
            return None
        if record.get("event") == "outcome":
            for row in reversed(self.audit):
                if row.get("tool_use_id") and row.get("tool_use_id") == record.get("tool_use_id"):
                    row["outcome"] = record.get("outcome", "")
                    break
            if item is not None:
                item.outcome = str(record.get("outcome") or "")
            return item
        self.audit.append(dict(record))
        if item is not None and record.get("event", "decision") == "decision":
            item.decision = dict(record)
        return item

    def finish(self, *, interrupted: bool = False, failed: bool = False) -> None:
        """The turn ended: what was still running or waiting did not finish; a step still in progress
        when the turn was stopped or failed is not being worked on any more (shown as pending)."""
        self.interrupted = self.interrupted or interrupted
        if self.interrupted:
            self.usage = self.usage.removesuffix(" · stopped")  # the record's own line says it once
        if failed and not self.todo_changed:
            self.todo = []
        if self.interrupted or failed or self.stop_reason in ("error", "interrupted"):
            self.todo = [item.model_copy(update={"status": "pending"}) if item.status == "in_progress" else item
                         for item in self.todo]
        for item in self.tools.values():
            if item.status in ("running", "waiting"):
                # A turn that ended on an error did not stop its calls: they ended with it (the
                # error is the record's last line), unlike a Stop or an interrupt.
                item.status = "error" if failed and not self.interrupted else "interrupted"
                if item.asked_at is not None and item.answered_at is None:
                    item.answered_at = time.monotonic()

    # -- the document --------------------------------------------------------------------

    def html(self) -> str:
        """The whole turn as self-contained HTML (inline styles from the theme's variables)."""
        main = "".join(item_html(item, self.project) for item in self.items) or (
            f'<div style="color:{theme.MUTED}">(no answer)</div>')
        if self.interrupted:
            main += f'<div style="color:{theme.MUTED};margin-top:4px">{icon("stop")} The turn was stopped before it finished.</div>'
        side = todo_html(self.todo) + audit_html(self.audit, self.project)
        side_html = (f'<div style="flex:0 1 14em;min-width:10em;border-left:1px solid {theme.BORDER};padding-left:8px;'
                     f'font-size:.92em">{side}</div>') if side else ""  # a turn with no plan and no call: no panels
        footer = (f'<div class="codingcode-usage" style="color:{theme.MUTED};font-size:.9em;margin-top:4px">'
                  f"{h(self.usage)}</div>") if self.usage else ""
        return (
            # tex2jax_ignore, mathjax_ignore: JupyterLab's math typesetter would read "$0.01 · … $0.02" as LaTeX.
            f'<div class="codingcode-record tex2jax_ignore mathjax_ignore" style="font-family:{theme.var("ui-font-family", "sans-serif")};'
            f'color:{theme.var("content-font-color1", "inherit")}">'
            f'<div style="display:flex;flex-wrap:wrap;gap:8px 16px">'
            f'<div style="flex:1 1 28em;min-width:0">{main}</div>{side_html}</div>{footer}</div>'
        )

    def text(self) -> str:
        """The whole turn as plain text (terminals, text exports, a diff of the .ipynb)."""
        lines: list[str] = []
        for item in self.items:
            lines.extend(item_text(item, self.project))
        if self.interrupted:
            lines.append("The turn was stopped before it finished.")
        if self.todo:
            done = sum(1 for i in self.todo if i.status == "completed")
            lines.append(f"Todo ({done}/{len(self.todo)}):")
            marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
            lines.extend(f"  {marks[i.status]} {reveal(i.step)}" for i in self.todo)
        if self.usage:
            lines.append(self.usage)
        return "\n".join(lines)


# -- pieces, shared by the live view and the document ---------------------------------------


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"


def _status_words(item: ToolItem, *, live: bool) -> str:
    """"done in 0.42 s", "running 3 s", "waiting for you 5 s"."""
    if item.status == "running":
        return f"running {item.elapsed():.0f} s" if live else "running"
    if item.status == "waiting":
        return f"waiting for you {item.waited or 0:.0f} s" if live else "waiting for an answer"
    if item.status == "denied":
        return "not run"
    word = words.outcome(item.status)
    run = item.run_seconds
    return f"{word} in {_seconds(run)}" if run is not None and item.status in ("ok", "error") else word


def _decision_text(item: ToolItem, project: Any) -> str:
    if item.decision is None:
        if item.status == "interrupted" and item.request is not None:
            return "interrupted while waiting for an answer"
        return ""
    said = words.decision(item.decision, answer=item.answer, waited=item.waited if item.request else None)
    if item.decision.get("by") == "readonly" and item.status == "ok":
        return ""  # reading needs no explanation on every row
    saved = words.saved_rule(item.answer, item.saved_rules, bool(item.request is not None and item.request.forced),
                             str(item.decision.get("reason") or ""))
    return said + (f"; {saved}" if saved else "")


# What became of one reviewed change, as the record and the audit say it.
REVIEW_ANSWERS = {"accepted": "accepted", "applied": "applied", "rejected": "rejected",
                  "conflict": "conflict (the cell had changed since the agent read it; your text was kept)",
                  "cancelled": "not answered"}


def fold_review(rows: list[dict[str, Any]], record: dict[str, Any]) -> None:
    """A review record's answers onto the decision row of its call (one row a call)."""
    for row in reversed(rows):
        if row.get("tool_use_id") and row.get("tool_use_id") == record.get("tool_use_id"):
            row["review"] = [dict(change) for change in record.get("changes") or [] if isinstance(change, dict)]
            return


def review_lines(changes: list[dict[str, Any]]) -> list[str]:
    """"replace cell a: accepted", one line a change."""
    return [f"{change.get('change', '?')}: {REVIEW_ANSWERS.get(str(change.get('answer')), str(change.get('answer')))}"
            for change in changes]


# How many of a command's last lines show under its row without expanding it (pytest's summary, a
# build's last error).
TAIL_LINES = 4


def command_tail(item: ToolItem) -> list[str]:
    """The last lines a command printed (stdout, else stderr), as its result holds them."""
    if item.tool != "execute_command" or item.status in ("denied", "interrupted") or "--- stdout ---" not in item.result:
        return []
    body = item.result.split("--- stdout ---", 1)[1]
    stdout, _, stderr = body.partition("--- stderr ---")
    for stream in (stdout, stderr):
        lines = [line.rstrip() for line in stream.strip("\n").splitlines() if line.strip() and line.strip() != "(empty)"]
        if lines:
            return [short(line, 200) for line in lines[-TAIL_LINES:]]
    return []


def _result_summary(item: ToolItem, project: Any) -> str:
    """The first line of what the tool returned, as a person reads it (not a denial told to the model)."""
    if item.status in ("denied", "interrupted") or not item.result or item.diff == item.result:
        return ""
    first = next((line for line in item.result.splitlines() if line.strip()), "")
    return short(words.relative(first, project), 160)


def tool_row_html(item: ToolItem, project: Any = None, *, live: bool = False) -> str:
    """One row per call: status icon, tool and key argument, who decided, outcome; details on click."""
    name, role = _STATUS_ICONS.get(item.status, ("dot", None))
    key = short(words.relative(item.key, project), 90)
    decided = _decision_text(item, project)
    status = _status_words(item, live=live)
    # The wait for a person is in the decision's words ("allowed by you after 4 s"); status has the run alone.
    summary_line = _result_summary(item, project)
    parts = [f'<code>{h(item.tool)}</code>', f"{h(key)}" if key else ""]
    summary = (
        f'{icon(name, role)} ' + " ".join(p for p in parts if p)
        + (f' <span class="cc-decision" style="color:{theme.MUTED}">— {words.code_html(decided)}</span>' if decided else "")
        + f' <span class="tool-status" style="color:{theme.MUTED}">· {h(status)}</span>'
    )
    body = f'<div style="margin:2px 0 0 1.4em"><div style="color:{theme.MUTED}">input</div>{pre(h(pretty_json(item.input)))}'
    if item.result and item.status not in ("denied",) and item.result != item.diff:  # a diff shows once, below
        result = item.result if len(item.result) <= RESULT_LIMIT else item.result[:RESULT_LIMIT] + "\n…"
        body += f'<div style="color:{theme.MUTED}">result</div>{pre(h(words.relative(result, project)))}'
    # A denial's reason is written for the model and is not shown; the row says who decided and why.
    body += "</div>"
    extra = ""
    if item.review:
        marks = {"accepted": icon("check", "ok"), "applied": icon("check", "ok"), "conflict": icon("warn", "warn")}
        extra += "".join(f'<div class="cc-review-answer cc-review-{h(str(change.get("answer")))}" '
                         f'style="margin-left:1.4em">{marks.get(str(change.get("answer")), icon("cross", "bad"))} {h(line)}</div>'
                         for change, line in zip(item.review, review_lines(item.review)))
    elif summary_line:
        extra += f'<div class="cc-result" style="margin-left:1.4em;color:{theme.MUTED}">{h(summary_line)}</div>'
    tail = command_tail(item)
    if tail:
        extra += (f'<pre class="cc-command-tail" style="margin:2px 0 2px 1.4em;color:{theme.MUTED};white-space:pre;'
                  f'overflow-x:auto">{h(words.relative(chr(10).join(tail), project))}</pre>')
    if item.diff:
        extra += f'<div style="margin-left:1.4em">{diff_html(item.diff)}</div>'
    if live and item.progress and item.status == "running":
        tail = "\n".join(item.progress).splitlines()[-6:]
        extra += f'<pre class="tool-progress" style="margin:2px 0 2px 1.4em;color:{theme.MUTED}">{h(chr(10).join(tail))}</pre>'
    for image in item.images:
        # The engine passes raster types only; the media type is still escaped into the URL.
        extra += (f'<img src="data:{h(image["media_type"])};base64,{h(image["data"])}" '
                  'style="max-width:100%;max-height:24em;display:block;margin:4px 0 4px 1.4em">')
    return (f'<div class="cc-tool cc-tool-{h(item.status)}" style="margin:2px 0;{LINES}">'
            f'<details><summary style="cursor:pointer">{summary}</summary>{body}</details>{extra}</div>')


def note_html(item: NoteItem, project: Any = None) -> str:
    if item.kind == "error":
        return (f'<div class="cc-error" style="color:{theme.ROLE["bad"]};margin:2px 0;{LINES}">{icon("warn")} '
                f"{h(words.relative(item.text, project))}</div>")
    # Notices are written with Markdown's backticks and bold (`%agent login`): shown as code and bold, not raw.
    body = _BOLD.sub(r"<b>\1</b>", words.code_html(words.relative(item.text, project)))
    return (f'<div class="cc-notice" style="color:{theme.MUTED};margin:2px 0;{LINES}">{icon("info")} '
            f"{body}</div>")


_BOLD = re.compile(r"\*\*([^*]+)\*\*")


def item_html(item: Item, project: Any = None) -> str:
    if isinstance(item, TextItem):
        return f'<div class="codingcode-text">{render_markdown(item.text)}</div>'
    if isinstance(item, ToolItem):
        return tool_row_html(item, project)
    if isinstance(item, NoteItem):
        return note_html(item, project)
    inner = "".join(item_html(sub, project) for sub in item.items)
    return (f'<details class="cc-subagent" style="margin:4px 0;border-left:2px solid {theme.BORDER};padding-left:8px">'
            f'<summary style="cursor:pointer">sub-agent {h(item.agent.rsplit("/", 1)[-1])}</summary>{inner}</details>')


def item_text(item: Item, project: Any = None, indent: str = "") -> list[str]:
    if isinstance(item, TextItem):
        return [indent + line for line in reveal(item.text).strip("\n").splitlines()]
    if isinstance(item, NoteItem):
        return [f"{indent}{'error: ' if item.kind == 'error' else ''}{reveal(words.relative(item.text, project))}"]
    if isinstance(item, AgentSection):
        out = [f"{indent}sub-agent {item.agent.rsplit('/', 1)[-1]}:"]
        for sub in item.items:
            out.extend(item_text(sub, project, indent + "  "))
        return out
    decided = _decision_text(item, project)
    key = short(words.relative(item.key, project), 90)
    status = _status_words(item, live=False)
    line = f"{indent}[{item.status}] {item.tool} {key}".rstrip() + (f" — {decided}" if decided else "") + f" · {status}"
    out = [reveal(line)]
    summary = _result_summary(item, project)
    if item.review:
        out.extend(f"{indent}    {reveal(said)}" for said in review_lines(item.review))
    elif summary:
        out.append(f"{indent}    {reveal(summary)}")
    out.extend(f"{indent}    | {reveal(words.relative(line, project))}" for line in command_tail(item))
    if item.diff:
        out.extend(f"{indent}    {reveal(d)}" for d in item.diff.splitlines()[:200])
    return out


def todo_html(items: list[TodoItem]) -> str:
    """The todo list (a heading and one row a step); nothing when there is no step."""
    if not items:
        return ""
    marks = {"pending": icon("box"), "in_progress": icon("play", "info"), "completed": icon("boxcheck", "ok")}
    rows = []
    for item in items:
        style = f"text-decoration:line-through;color:{theme.MUTED}" if item.status == "completed" else (
            "font-weight:bold" if item.status == "in_progress" else "")
        rows.append(f'<div class="todo-item todo-{item.status}" style="{style}">{marks[item.status]} {h(item.step)}</div>')
    done = sum(1 for item in items if item.status == "completed")
    return f'<div class="codingcode-todo" style="{LINES}"><b>Todo</b> ({done}/{len(items)})' + "".join(rows) + "</div>"


def audit_row_words(record: dict[str, Any], project: Any = None) -> tuple[str, str, str]:
    """(what, who decided and why, outcome) of one audit record, in words."""
    tool = record.get("tool") or record.get("display_name")
    if not tool and record.get("event") == "network":
        what = f"network {record.get('host', '?')}:{record.get('port', '')}"
        allowed = (record.get("decision") or "") == "allow"
        by = record.get("by") or ""
        return what, ("allowed" if allowed else "refused") + (f" by {by}" if by else ""), ""
    what = str(tool or record.get("event") or "?")
    target = record.get("input") or {}
    key = ""
    if isinstance(target, dict):
        for name in ("path", "command", "url", "query", "pattern", "agent", "name"):
            if isinstance(target.get(name), str):
                key = target[name]
                break
    if key:
        what += " " + short(words.relative(key, project), 60)
    if "decision" not in record and "kind" in record:
        return what, str(record.get("kind")), ""
    if record.get("review"):
        return what, words.decision(record), " · ".join(review_lines(record["review"]))
    return what, words.decision(record), words.outcome(str(record.get("outcome") or "")) if record.get("outcome") else ""


def audit_html(records: list[dict[str, Any]], project: Any = None) -> str:
    """This turn's decisions: what, who decided and why, what came of it; nothing when there is none."""
    if not records:
        return ""
    rows = []
    for record in records:
        what, said, came = audit_row_words(record, project)
        allowed = str(record.get("decision") or "").startswith("allow")
        mark = icon("check", "ok") if allowed else icon("cross", "bad")
        rows.append(
            f'<div class="audit-row" style="margin:1px 0">{mark} <code>{h(what)}</code> '
            f'<span style="color:{theme.MUTED}">{words.code_html(said)}{" → " + h(came) if came else ""}</span></div>'
        )
    return f'<div class="codingcode-audit" style="margin-top:6px;{LINES}"><b>Audit</b>' + "".join(rows) + "</div>"


def audit_text(records: list[dict[str, Any]], project: Any = None) -> list[str]:
    out = []
    for record in records:
        what, said, came = audit_row_words(record, project)
        out.append(f"{what} — {said}" + (f" → {came}" if came else ""))
    return out
