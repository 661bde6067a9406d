"""What ``%agent mcp`` shows: each server's state, tools, prompts, roots and log, as text."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .naming import display_name
from .tool_defs import trusted_read_only

if TYPE_CHECKING:
    from .client import ConnectionState, ServerConnection

__all__ = ["ServerStatus", "describe_status", "describe_tools", "describe_log"]


@dataclass(frozen=True)
class ServerStatus:
    """What ``%agent mcp`` shows for one server."""

    name: str
    transport: str
    state: ConnectionState
    error: str | None
    tool_count: int
    log_path: Path | None
    deferred: bool = False
    tools: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    resource_count: int = 0
    # Tools the server has that are not offered, with why.
    skipped: tuple[tuple[str, str], ...] = ()
    log_count: int = 0
    login_url: str | None = None
    trust_annotations: bool = False
    # Seconds since it began starting (while starting).
    starting_for: float | None = None
    # The directories its own arguments name, sent as roots beside the project.
    argument_roots: tuple[str, ...] = ()


def describe_status(status: ServerStatus, project: Path) -> str:
    """The lines of one server in ``%agent mcp``."""
    if status.state == "refused":
        return f"{status.name} not started: {status.error}"
    head = f"{status.name} [{status.transport}] {status.state.replace('_', ' ')}"
    if status.starting_for is not None:
        head += f" ({status.starting_for:.0f} s)"
    if status.state != "failed" or status.tool_count:
        head += f", {status.tool_count} tool(s)"
    if status.resource_count:
        head += f", {status.resource_count} resource(s)"
    if status.prompts:
        head += f", {len(status.prompts)} prompt(s)"
    if status.deferred:
        head += ", deferred (found through tool_search)"
    if status.trust_annotations:
        head += ", annotations trusted"
    lines = [head]
    if status.error:
        lines.append(f"  error: {status.error}")
    if status.login_url:
        lines.append(f"  log in: {status.login_url}")
        lines.append(f"  (browser elsewhere? paste the address it ends on: %agent mcp login {status.name} ADDRESS)")
    if status.argument_roots:
        lines.append(f"  roots: {project.resolve()} (the project), " + ", ".join(status.argument_roots)
                     + " (named in its arguments)")
    if status.tools:
        lines.append("  tools: " + ", ".join(f"{status.name}:{tool}" for tool in status.tools))
    for name, why in status.skipped:
        lines.append(f"  not offered: {status.name}:{name} ({why})")
    if status.prompts:
        lines.append("  prompts: " + ", ".join(status.prompts))
    if status.log_count:
        lines.append(f"  {status.log_count} log message(s): %agent mcp log {status.name}")
    if status.log_path is not None and status.log_path.exists():
        lines.append(f"  stderr: {status.log_path}")
    return "\n".join(lines)

def describe_tools(server: ServerConnection) -> str:
    """One server's tools with their annotations and whether approval counts them read-only."""
    name = server.name
    if not server.tools and not server.skipped_tools:
        return f"{name}: no tools ({server.state}{': ' + server.error if server.error else ''})"
    lines = []
    for info in sorted(server.tools, key=lambda tool: tool.name):
        flags = []
        if trusted_read_only(server, info):
            flags.append("read-only (trusted)")
        annotations = ", ".join(f"{key}={value}" for key, value in sorted((info.annotations or {}).items()))
        line = f"{display_name(name, info.name):40} {' '.join(flags):20} {annotations}".rstrip()
        lines.append(line)
        if info.description:
            lines.append(f"    {info.description.strip().splitlines()[0][:100]}")
    for tool, why in server.skipped_tools:
        lines.append(f"{display_name(name, tool):40} not offered: {why}")
    if not server.config.trust_annotations and any((t.annotations or {}).get("readOnlyHint") for t in server.tools):
        lines.append(f'(readOnlyHint is shown, not trusted; "trustAnnotations": true in .mcp.json for {name} trusts it)')
    return "\n".join(lines)

def describe_log(server: ServerConnection, count: int = 50) -> str:
    name = server.name
    entries = server.log.tail(count)
    if not entries:
        return f"{name}: no log messages"
    return "\n".join(entry.describe() for entry in entries)
