"""The judge's time budget for one call: past it, the call is asked instead of judged.

Judging is pure computation on the call's text and a few looks at the disk, and it runs on the
kernel's event loop: a line that takes the walkers long (a deep nesting, a huge script) must not
freeze the notebook. The pipeline runs its judging steps inside :meth:`Budget.running`; the
walkers call :func:`check` at each step of their loops, which raises :class:`OverBudget` once the
time spent judging this call (waits for hooks and people excluded) passes the budget. The pipeline
turns that into a question naming why, like any other failure to judge.
"""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

__all__ = ["DEFAULT_SECONDS", "Budget", "OverBudget", "check", "checked", "not_counted"]

# Far above what any command of the replay corpus takes (p99 a few ms, the slowest a few hundred
# on a loaded 2-core machine: a large repository's index read), short enough that a stall is seen
# as one question rather than a frozen notebook.
DEFAULT_SECONDS = 2.0


class OverBudget(Exception):
    """Judging this call took longer than its budget."""


class Budget:
    """Time spent judging one call, summed over the sections run inside :meth:`running`."""

    def __init__(self, seconds: float = DEFAULT_SECONDS) -> None:
        self.seconds = seconds
        self.spent = 0.0
        self._started: float | None = None

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Count the time of this section (nested sections count once) and make it checkable."""
        if self._started is not None:
            yield
            return
        self._started = time.perf_counter()
        token = _CURRENT.set(self)
        try:
            self.check()
            yield
        finally:
            _CURRENT.reset(token)
            self.spent += time.perf_counter() - self._started
            self._started = None

    def check(self) -> None:
        now = self.spent + (time.perf_counter() - self._started if self._started is not None else 0.0)
        if now > self.seconds:
            raise OverBudget(f"judging it took longer than its budget of {self.seconds:g} s")


_CURRENT: ContextVar[Budget | None] = ContextVar("codingcode_judge_budget", default=None)


def check() -> None:
    """Raise :class:`OverBudget` if the call being judged has spent its budget (no-op outside judging)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.check()


def checked(items: Iterable[T], every: int = 256) -> Iterator[T]:
    """``items``, with the budget checked every ``every`` of them (a walk of a large syntax tree)."""
    for index, item in enumerate(items):
        if index % every == 0:
            check()
        yield item


@contextlib.contextmanager
def not_counted() -> Iterator[None]:
    """A section that is not the call's judging (a table's examples checked once, a parser's first
    import): neither checked nor counted against the budget of the call that happens to come first."""
    budget = _CURRENT.get()
    if budget is None:
        yield
        return
    token = _CURRENT.set(None)
    started = time.perf_counter()
    try:
        yield
    finally:
        _CURRENT.reset(token)
        budget.spent -= time.perf_counter() - started
