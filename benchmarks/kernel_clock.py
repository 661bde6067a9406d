"""Reading a harness kernel's IOPub one message at a time, each with the moment it arrived.

The kernel benchmarks that time what a person sees (the first streamed text of a cell) need
the arrival time of the very message that carries it, not the time a batch was drained.
"""

from __future__ import annotations

import json
import time
from typing import Any

__all__ = ["next_message", "first_message_with", "run_quietly"]


def next_message(kernel: Any, deadline: float) -> tuple[dict[str, Any], float]:
    """One IOPub message and the ``time.time()`` it was received (recorded by the harness too)."""
    while True:
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out; last messages: {[m['msg_type'] for m in kernel.messages[-15:]]}")
        try:
            msg = kernel.kc.get_iopub_msg(timeout=0.2)
        except Exception:
            continue
        received = time.time()
        kernel._take(msg)
        return msg, received


def first_message_with(kernel: Any, msg_id: str, marker: str, timeout: float = 120) -> float:
    """When the first IOPub message of cell ``msg_id`` whose content holds ``marker`` arrived.

    The marker is text the fake server streams; whichever widget or output shows it first,
    its message carries the marker in its JSON.
    """
    deadline = time.monotonic() + timeout
    while True:
        msg, received = next_message(kernel, deadline)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "error":
            raise RuntimeError("the cell failed: " + "\n".join(msg["content"]["traceback"])[-2000:])
        if marker in json.dumps(msg["content"], ensure_ascii=False):
            return received


def run_quietly(kernel: Any, code: str, timeout: float = 120) -> None:
    """Run a cell to its end; raise with its output when it fails."""
    msg_id = kernel.execute(code)
    reply = kernel.reply(msg_id, timeout=timeout)
    if reply["status"] != "ok":
        raise RuntimeError(f"cell failed: {reply.get('ename')}: {reply.get('evalue')} {kernel.text_output(msg_id)[-2000:]}")
