"""Auto mode's reviewer, one session's account of it: its counts, and whether it has handed back too
often to go on. The session keeps it (what the reviewer layer of :mod:`.reviewer` reads and
``%agent status`` shows); the reviewer itself, which asks a model, is higher up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..events import Usage

__all__ = ["ReviewerState", "MAX_CONSECUTIVE", "MAX_TOTAL"]

# The reviewer pauses after this many hand-backs in a row, or this many in a session.
MAX_CONSECUTIVE = 3
MAX_TOTAL = 20


@dataclass
class ReviewerState:
    """One session's reviewer: its counts, and whether it has handed back too often to go on."""

    allowed: int = 0
    handed_back: int = 0  # the reviewer answered "ask"
    failed: int = 0  # error, timeout, an answer that does not parse
    consecutive: int = 0
    # Hand-backs since the person last set auto mode (the session limit counts these).
    since_set: int = 0
    paused: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0

    def record(self, allowed: bool, failed: bool = False) -> None:
        if allowed:
            self.allowed += 1
            self.consecutive = 0
            return
        if failed:
            self.failed += 1
        else:
            self.handed_back += 1
        self.consecutive += 1
        self.since_set += 1
        if self.consecutive >= MAX_CONSECUTIVE:
            self.paused = f"the reviewer handed back {self.consecutive} calls in a row"
        elif self.since_set >= MAX_TOTAL:
            self.paused = f"the reviewer handed back {self.since_set} calls in this session"

    def resume(self) -> None:
        """The person set auto mode again: the reviewer answers again, its limits counted afresh."""
        self.paused = None
        self.consecutive = 0
        self.since_set = 0

    def describe(self) -> str:
        cost = f", ${self.cost:.4f}" if self.cost else ""
        line = (f"reviewer: {self.allowed} allowed, {self.handed_back} handed to you, {self.failed} failed "
                f"({self.usage.input_tokens + self.usage.cache_read_input_tokens + self.usage.cache_creation_input_tokens}"
                f" in / {self.usage.output_tokens} out tokens{cost})")
        if self.paused:
            line += f"; paused ({self.paused}): every question goes to you until you set %agent mode auto again"
        return line
