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


# What a person would otherwise run: the bare SDK in a cell of a fresh kernel, which imports it
# there and then (the import is the same the loading pays), streaming one answer and printing it.
BARE_SDK_CELL = """
import anthropic
__bench_client = anthropic.AsyncAnthropic()
async with __bench_client.messages.stream(model={model!r}, max_tokens=256,
                                          messages=[{{"role": "user", "content": "say hello"}}]) as __bench_stream:
    async for __bench_text in __bench_stream.text_stream:
        print(__bench_text, end="", flush=True)
"""


def bare_sdk_first_cell(project: Any, fake: Any, env: dict[str, str], pause: float = 0.0,
                        model: str = "claude-test") -> float:
    """Seconds from a bare-SDK cell's execute request to its first text, in a fresh kernel in ``project``
    (``pause``: the person's, after the kernel answered its first cell)."""
    from common import start_kernel

    from tests.fakes.anthropic_server import Reply, text

    kernel = start_kernel(project, env)
    try:
        run_quietly(kernel, "1 + 1")
        time.sleep(pause)
        marker = f"bare-sdk-{time.monotonic_ns()}"
        fake.add(Reply([text(marker + " answered.")], chunk=64))
        sent = time.time()
        msg_id = kernel.execute(BARE_SDK_CELL.format(model=model))
        seen = first_message_with(kernel, msg_id, marker)
        if kernel.reply(msg_id, timeout=120)["status"] != "ok":
            raise RuntimeError(kernel.text_output(msg_id)[-2000:])
        return seen - sent
    finally:
        kernel.close()
