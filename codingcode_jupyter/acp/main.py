"""``codingcode acp``: the agent on stdio, for an editor that starts it.

stdout is the editor's JSON-RPC channel and nothing else: the channel keeps the real stdout
(a duplicate of its descriptor) and file descriptor 1 becomes stderr, so a stray print, a
library's warning or a child process writes to the editor's log, never into the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from typing import Any, cast

__all__ = ["serve"]


def _protocol_streams() -> tuple[Any, Any]:
    """The editor's channel (stdin, and stdout's own descriptor), with fd 1 and sys.stdout sent to stderr."""
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), 1)
    sys.stdout = sys.stderr
    return sys.stdin, channel


async def _serve(existing: str | None, kernel_name: str | None) -> None:
    from acp import Agent, run_agent
    from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES

    from .agent import CodingcodeAgent

    stdin, channel = _protocol_streams()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, protocol = await loop.connect_write_pipe(lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
                                                        channel)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    agent = CodingcodeAgent(existing=existing, kernel_name=kernel_name)
    # An editor stops its agent with SIGTERM: the sessions still end (their SessionEnd hooks run)
    # and a kernel started here is shut down, not left to notice its parent is gone.
    main = asyncio.current_task()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if main is not None:
            loop.add_signal_handler(signum, main.cancel)
    try:
        # The agent answers the methods it has; the package answers "method not found" for the rest
        # (fork, resume, config options), so it is not the whole Agent protocol.
        await run_agent(cast("Agent", agent), writer, reader)
    finally:
        await agent.close()


def serve(existing: str | None = None, kernel_name: str | None = None) -> int:
    """Speak ACP on stdin/stdout until the editor closes stdin; 0 then."""
    logging.basicConfig(level=os.environ.get("CODINGCODE_ACP_LOG", "WARNING").upper(), stream=sys.stderr,
                        format="codingcode acp: %(levelname)s %(name)s: %(message)s")
    if existing and not os.path.isfile(existing):
        print(f"codingcode acp: no connection file {existing}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(existing, kernel_name))
    except asyncio.CancelledError:
        pass  # stopped by a signal, after closing what it had opened
    return 0
