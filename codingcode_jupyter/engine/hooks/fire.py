"""The one place hooks are fired: every hook of one event, in order, each answer folded into the
event's combiner.

What differs between events is not how hooks are fired but how their answers add up, so that
is the combiner's job: :class:`~.lifecycle.EventOutcome` for the events outside approval (a
block, context for the model, notices for the person), ``pre_tool_use``'s for PreToolUse (the
strictest decision wins, a modified input is what the next hook is told, a deny ends the round).
The Python callables of PreToolUse and the configured commands of every event run through here;
ApprovalPost's observers are not fired, only told (their answer is not read, nothing waits for them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable, Iterable, Protocol, TypeVar

from .runner import HookAnswer

if TYPE_CHECKING:
    from ..settings import Dialect

__all__ = ["HookJob", "Combiner", "fire"]


@dataclass(frozen=True)
class HookJob:
    """One hook about to run for an event: a configured command or a kernel-registered callable."""

    name: str
    dialect: "Dialect"
    # Runs the hook and reads its answer. What it is told is made when it runs: for PreToolUse,
    # from the combiner's current call (an earlier hook's modified input).
    run: Callable[[], Awaitable[HookAnswer]]


class Combiner(Protocol):
    """How the answers of one event's hooks add up."""

    def add(self, job: HookJob, answer: HookAnswer) -> bool:
        """Fold one hook's answer in; False ends the round (the remaining hooks do not run)."""
        ...


C = TypeVar("C", bound=Combiner)


async def fire(jobs: Iterable[HookJob], combiner: C) -> C:
    """Run ``jobs`` (the hooks of one event that match, in the order configured) into ``combiner``
    (made for that event: :class:`~.events.HookEvent`)."""
    for job in jobs:
        answer = await job.run()
        if not combiner.add(job, answer):
            break
    return combiner
