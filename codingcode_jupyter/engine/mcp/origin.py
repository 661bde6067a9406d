"""The tool call a server is answering while it talks back to the client.

A server may send progress, log messages, sampling and elicitation requests while one of
its tools runs. :class:`CallOrigin` is what the connection knows about that call — where
its events go, who can be asked, which model the turn runs and where its tokens are
counted — so those messages reach the cell that made the call, not some other one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..events import EventSink, Usage

if TYPE_CHECKING:
    from ..approval.types import Asker
    from ..models.base import Model
    from ..tools.base import ToolContext

__all__ = ["CallOrigin"]


@dataclass(frozen=True)
class CallOrigin:
    """Where a call came from: its ids, its event sink, its asker, its turn's model and usage."""

    session_id: str
    turn_id: int
    agent: str
    tool_use_id: str
    emit: EventSink
    ask: "Asker | None" = None
    # The turn's model and its usage counter, for sampling.
    model: "Model | None" = None
    add_usage: Callable[[Usage, float | None], None] | None = None

    @classmethod
    def from_context(cls, ctx: "ToolContext") -> "CallOrigin":
        """The origin of a call the agent loop is running (``ctx.run`` is that agent)."""
        run = ctx.run
        return cls(
            session_id=ctx.session_id,
            turn_id=ctx.turn_id,
            agent=ctx.agent,
            tool_use_id=ctx.tool_use_id,
            emit=ctx.emit,
            ask=run.ask if run is not None else None,
            model=run.model if run is not None else None,
            add_usage=run.add_usage if run is not None else None,
        )

    def stamp(self, event: Any) -> Any:
        """The event with this call's session, turn and agent filled in."""
        event.session_id, event.turn_id, event.agent = self.session_id, self.turn_id, self.agent
        return event
