"""A session's context window: its compactor, ``%agent compact``, and the gauge in ``%agent status``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from .compactor import CompactionReport, Compactor
from .transforms import json_chars, key_of_tools
from .window import CHARS_PER_TOKEN, context_window

if TYPE_CHECKING:
    from ..session import Session
    from ..tools.base import AgentRun

__all__ = ["ContextStatus", "keep_in_window", "compact", "context_status"]


def _window_setting(session: "Session") -> int | None:
    return session.deps.settings.current().merged.contextWindow


def keep_in_window(session: "Session") -> Compactor:
    """The compactor of ``session``'s conversation: it becomes the session's context keeper."""
    compactor = Compactor(
        conversation=session.conversation,
        window_setting=lambda: _window_setting(session),
        record=session.transcript.write,
        on_usage=lambda usage, cost: session.add_usage(usage, cost, reason="compaction"),
        key_of=key_of_tools(session.tools),
        before_compact=lambda trigger, run: _pre_compact(session, trigger, run),
    )
    session.context = compactor
    return compactor


async def _pre_compact(session: "Session", trigger: str, run: "AgentRun | None") -> None:
    """The PreCompact hooks; what they say for the person goes to the running turn, else the next one."""
    outcome = await session.deps.hooks.pre_compact(session_id=session.id, trigger=trigger)
    for text in outcome.notices + ([outcome.reason] if outcome.blocked and outcome.reason else []):
        if run is not None:
            run.notify(text)
        else:
            session.pending_notices.append(text)


def _session_model(session: "Session") -> str:
    if session.last_model:
        return session.last_model
    from ..models import resolve_model_name

    return resolve_model_name(session.default_model())[0]


def _compactor(session: "Session") -> Compactor:
    context = session.context
    return context if isinstance(context, Compactor) else keep_in_window(session)


async def compact(session: "Session", force: bool = True) -> CompactionReport:
    """Compact a session's conversation now (``%agent compact``); without ``force`` only when over the trigger."""
    compactor = _compactor(session)
    model = _session_model(session)
    budget = compactor.budget(model, 8192)[0]
    if not force:
        tokens = compactor.overhead_tokens + compactor.estimate(session.conversation.messages)
        if tokens <= compactor.trigger * budget:
            return CompactionReport(reason="auto", before_tokens=tokens, after_tokens=tokens)
    return await compactor.compact(model, budget, reason="forced" if force else "auto")


class ContextStatus(BaseModel):
    """How full the context is, for ``%agent status``."""

    model: str
    window: int
    tokens: int  # estimated tokens of what the next request sends (system and tools of the last one included)
    compactions: int

    @property
    def percent(self) -> float:
        return 100.0 * self.tokens / self.window if self.window else 0.0

    def describe(self) -> str:
        """One line for the person."""
        text = f"context: about {self.tokens:,} of {self.window:,} tokens ({self.percent:.0f}%)"
        if self.compactions:
            text += f", compacted {self.compactions}×"
        return text


def context_status(session: "Session") -> ContextStatus:
    """The context gauge of a session; a local estimate, no request is made."""
    model = _session_model(session)
    context = session.context
    if isinstance(context, Compactor):
        window = context.window(model)
        tokens = context.overhead_tokens + context.estimate(session.conversation.messages)
        count = len(context.reports)
    else:
        window = context_window(model, _window_setting(session))
        tokens = int(json_chars(session.conversation.messages) / CHARS_PER_TOKEN) + 1
        count = 0
    return ContextStatus(model=model, window=window, tokens=tokens, compactions=count)
