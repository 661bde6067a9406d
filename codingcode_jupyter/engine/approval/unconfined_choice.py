"""No sandbox here: the person's once-per-session choice about commands that would run unconfined.

Where neither bubblewrap nor Landlock can confine a command, the first time a command would run
unconfined in a session the front shows one card (:meth:`~..front.Front.ask_unconfined`); this
module is what the card asks and the answer the session keeps (:class:`UnconfinedChoice`, held
by the session's parts). What each answer lets through is :mod:`.unconfined`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..events import EventSink, Notice
from .types import UNCONFINED_CHOICES, UnconfinedAnswer, UnconfinedRequest

if TYPE_CHECKING:
    from ..front import Front

__all__ = ["UnconfinedChoice"]


class CallPlace(Protocol):
    """Where the command that needs the answer is: the call's context (a tool's ToolContext)."""

    @property
    def session_id(self) -> str: ...

    @property
    def turn_id(self) -> int: ...

    @property
    def agent(self) -> str: ...

    @property
    def tool_use_id(self) -> str: ...

    @property
    def emit(self) -> EventSink: ...


@dataclass
class UnconfinedChoice:
    """One session's answer, and the front that may be asked for it.

    Whoever runs a turn attaches its front (a notebook cell, a terminal) and detaches it at the
    end, as for MCP's requests; a turn where nobody may be asked attaches none."""

    answer: UnconfinedAnswer | None = None
    # Who gave the answer: "user", or "nobody" (no front, or it could not show the card).
    by: str = ""
    # The one line for runs without a card has been said in this session.
    told: bool = False
    _front: "Front | None" = field(default=None, repr=False)
    _asking: "asyncio.Future[UnconfinedAnswer] | None" = field(default=None, repr=False)

    def describe(self) -> str:
        """This session's answer, for ``%agent status``."""
        if self.answer is None:
            return "not asked yet in this session"
        said = {"ask_each": "ask for each command", "session": "ordinary commands run unconfined",
                "never": "never on this machine"}[self.answer]
        return f"this session: {said} ({'nobody could answer' if self.by == 'nobody' else 'your answer'})"

    def attach(self, front: "Front") -> None:
        self._front = front

    def detach(self, front: "Front") -> None:
        if self._front is front:
            self._front = None

    async def decide(self, ctx: CallPlace, command: str, why: str) -> UnconfinedAnswer:
        """The session's answer, asking the attached front the first time (concurrent calls share the one card)."""
        if self.answer is not None:
            return self.answer
        if self._asking is not None:
            return await asyncio.shield(self._asking)
        from ..user_dir import user_dir

        self._asking = asyncio.get_running_loop().create_future()
        front = self._front
        answer: UnconfinedAnswer | None = None
        try:
            if front is not None:
                request = UnconfinedRequest(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                                            tool_use_id=ctx.tool_use_id, command=command, why=why,
                                            settings_path=str(user_dir() / "settings.json"))
                answer = await front.ask_unconfined(request)
        except BaseException:
            # Interrupted before anyone answered: ask again next time.
            self._asking.cancel()
            self._asking = None
            raise
        if answer not in UNCONFINED_CHOICES:
            self.answer, self.by = "ask_each", "nobody"
            self.tell(ctx, why, "Nobody could answer whether to run commands unconfined here, so each such command "
                               "is asked (and denied when nobody answers); read-only commands run.")
        else:
            self.answer, self.by = answer, "user"
        self._asking.set_result(self.answer)
        self._asking = None
        return self.answer

    def tell(self, ctx: CallPlace, why: str, which: str) -> None:
        """The one line of a session without the card: no sandbox, and which answer applies."""
        if self.told:
            return
        self.told = True
        ctx.emit(Notice(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent,
                        text=f"No command sandbox here ({why}). {which}"))
