"""A table's match / not-match examples, checked once before the table is first used.

The tables (the built-in rules, the read-only commands) check their examples so that an
entry that stops working fails by name rather than judging wrongly. The check parses dozens
of commands, so it needs the shell parser, whose import builds its parse tables; run at
import it would make every session's opening wait for both. It runs at the first judgement
instead, or ahead of it on the prewarm thread; until it has passed, nothing is judged.
"""

from __future__ import annotations

import threading
from typing import Callable

from ..budget import not_counted

__all__ = ["CheckedOnce"]


class CheckedOnce:
    """``check`` run once, by whichever thread needs it first; a failed check raises at every use."""

    def __init__(self, check: Callable[[], None]) -> None:
        self._check = check
        self._lock = threading.Lock()
        self.done = False

    def __call__(self) -> None:
        if self.done:
            return
        with self._lock:
            if not self.done:
                with not_counted():
                    self._check()
                self.done = True
