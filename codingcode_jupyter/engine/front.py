"""The front contract: what the engine needs from whatever shows a turn to a person.

The engine knows nothing of Jupyter; a front is the other side (the notebook cell's widgets
``notebook/view.py``, the terminal's text ``notebook/text_view.py``, the tests' recording front
``tests/fakes/front.py``). It has five channels, each a method of :class:`Front`:

- **emit** (``front(event)``): one of the engine's events (:mod:`.events`) as it happens. A front
  is therefore also an :data:`~.events.EventSink`.
- **ask**: an approval question; the person's answer (allow, deny, always, never, or a reply
  with a chosen rule). A turn is run with its front (``session.run_turn(prompt, front)``); a
  run where nobody may be asked is given only an event sink (:func:`shown_only`), or nothing.
- **elicit**: an MCP server's request for input (a form or a link) and the person's response.
- **ask_trust**: what a project's files ask for that loosens the agent; "trust", "not_now", or
  None when nobody could be asked.
- **ask_unconfined**: no sandbox can confine commands here; once per session, whether to ask for
  each command, run ordinary ones unconfined for the session, or never on this machine
  (:mod:`.approval.unconfined`); None when nobody could be asked.

A front that cannot show one of these still implements it, and says no in its own way (a
terminal declines forms; a headless kernel answers None to trust): the engine never looks a
channel up by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import BaseModel

    from .approval.types import Answer, ApprovalRequest, Reply, UnconfinedAnswer, UnconfinedRequest
    from .events import EventSink
    from .mcp.elicitation import ElicitationRequest, ElicitationResponse
    from .trust.items import TrustItem

__all__ = ["Front", "TrustAnswer", "shown_only"]

TrustAnswer = Literal["trust", "not_now"]


@runtime_checkable
class Front(Protocol):
    """Whatever shows a turn to a person and brings back their answers."""

    def __call__(self, event: BaseModel) -> None:
        """Show one event of the turn (emit); never raises into the engine."""

    async def ask(self, request: ApprovalRequest) -> Answer | Reply:
        """Ask the person about one tool call."""

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        """An MCP server asks the person for input."""

    async def ask_trust(self, items: list[TrustItem], project: Path) -> TrustAnswer | None:
        """Ask whether to trust what the project's files ask for; None when nobody could answer."""

    async def ask_unconfined(self, request: UnconfinedRequest) -> UnconfinedAnswer | None:
        """No sandbox here: ask once how commands that would run unconfined are handled; None when nobody could answer."""

    # Editing the notebook's cells (insert, replace, run a cell the person sees) is the next
    # channel: it will be a method here, with its request and answer types beside the others,
    # so every front (the cell, the terminal, the tests) has to say how it does it or refuses.


def shown_only(front: "EventSink") -> "EventSink":
    """``front``'s emit channel alone: a turn run with it is shown there and nobody is asked."""

    def show(event: BaseModel) -> None:
        front(event)

    return show
