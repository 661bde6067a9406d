"""A real MCP server for tests, built with the SDK's server API.

Run as ``python tests/fakes/mcp_server.py stdio`` or ``... http --port N``. Every tool
exercises one thing the client must handle: each content type, structured content, an
error, a call past the timeout, a crash of the whole process, and a tool list that changes.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

# A valid 1x1 PNG, so a client that decodes the image would not choke on it.
PNG_1X1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e2217bc50000000049454e44ae426082"
    )
).decode()

server = MCPServer("fake")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def image() -> CallToolResult:
    """Return a caption and a PNG image."""
    return CallToolResult(
        content=[TextContent(type="text", text="a red dot"), ImageContent(type="image", data=PNG_1X1, mime_type="image/png")]
    )


@server.tool()
def audio() -> CallToolResult:
    """Return a short audio clip."""
    return CallToolResult(content=[AudioContent(type="audio", data=base64.b64encode(b"RIFF0000").decode(), mime_type="audio/wav")])


@server.tool()
def link() -> CallToolResult:
    """Return a link to a resource."""
    return CallToolResult(
        content=[ResourceLink(type="resource_link", uri="file:///data/report.csv", name="report", mime_type="text/csv")]
    )


@server.tool()
def embedded() -> CallToolResult:
    """Return an embedded text resource and an embedded binary resource."""
    return CallToolResult(
        content=[
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="the notes"),
            ),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///blob.bin", mime_type="application/octet-stream", blob="AAEC"),
            ),
        ]
    )


@server.tool()
def structured() -> CallToolResult:
    """Return only structured content, no text."""
    return CallToolResult(content=[], structured_content={"temperature": 21.5, "unit": "C"})


@server.tool()
def fail(reason: str = "it broke") -> CallToolResult:
    """Return an error result."""
    return CallToolResult(content=[TextContent(type="text", text=f"failure: {reason}")], is_error=True)


@server.tool()
async def slow(seconds: float = 30.0) -> str:
    """Sleep, then answer (used to go past the client's timeout)."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def crash() -> str:
    """Kill the server process at once."""
    sys.stderr.write("crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
def pid() -> str:
    """The server's process id (tells a restarted server from the first one)."""
    return str(os.getpid())


@server.tool()
def where() -> str:
    """The server's working directory and the GREETING variable of its environment."""
    return f"{os.getcwd()} {os.environ.get('GREETING', '<unset>')}"


def _late_tool(x: int) -> str:
    """A tool that exists only after add_tool was called."""
    return f"late {x}"


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Add the tool `late` and tell the client the tool list changed."""
    server.add_tool(_late_tool, name="late")
    # The 2026 protocol delivers change events through subscriptions/listen; older
    # sessions through a notification on the session. Send both so either client era works.
    await ctx.notify_tools_changed()
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:
        pass
    return "added late"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    print(f"fake MCP server starting ({args.transport})", file=sys.stderr, flush=True)
    if args.transport == "stdio":
        server.run("stdio")
        # The client closed our input and the session is over: leave at once. The interpreter's
        # own exit, with the SDK loaded, takes ~0.3 s that every test stopping a server waited for.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
