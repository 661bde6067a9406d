"""Work worth doing ahead that nobody waits for (an import a later call will need).

Done at once on a worker thread, unless a front that loads the engine in the background
takes it (the notebook's loading runs it among its later steps, once no cell runs): on a
kernel's one interpreter such work would otherwise slow the very loading a first cell waits for.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["defer", "set_taker"]

# Takes (label, work) and returns whether it will run it; None: nobody takes work.
_taker: Callable[[str, Callable[[], Any]], bool] | None = None


def set_taker(taker: Callable[[str, Callable[[], Any]], bool] | None) -> None:
    global _taker
    _taker = taker


def defer(label: str, work: Callable[[], Any]) -> None:
    """Have ``work`` run some time soon, by the taker if there is one, else on a thread of its own."""
    taker = _taker
    if taker is not None and taker(label, work):
        return

    def run() -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 -- whoever needs it later does it again and sees the error
            pass

    threading.Thread(target=run, name=f"codingcode-later-{label}", daemon=True).start()
