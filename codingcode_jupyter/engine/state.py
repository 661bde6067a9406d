"""What a session remembers between tool calls (beyond the conversation itself)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .events import TodoItem

__all__ = ["FileStamp", "SessionState"]


@dataclass(frozen=True)
class FileStamp:
    """A file as the agent last saw it; a write is refused if the file moved on since."""

    mtime_ns: int
    size: int


@dataclass
class SessionState:
    todo: list[TodoItem] = field(default_factory=list)
    # Resolved path -> how it looked when the agent last read or wrote it.
    files_seen: dict[str, FileStamp] = field(default_factory=dict)
    # Deferred tools found through tool_search; offered from the next request on.
    discovered_tools: set[str] = field(default_factory=set)
