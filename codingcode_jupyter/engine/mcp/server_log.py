"""The log messages one MCP server sent (``notifications/message``), kept for ``%agent mcp log``."""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Iterator

__all__ = ["LogEntry", "ServerLog", "LEVELS", "is_alarming"]

# RFC 5424 severities in increasing order, as MCP names them.
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def is_alarming(level: str) -> bool:
    """Warning or worse: worth showing to the person as it happens."""
    return level in LEVELS and LEVELS.index(level) >= LEVELS.index("warning")


def _text(data: Any) -> str:
    if isinstance(data, str):
        return data
    try:
        return json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(data)


@dataclass(frozen=True)
class LogEntry:
    """One message: when it arrived, its level, the server's logger name and its text."""

    time: float
    level: str
    logger: str | None
    text: str

    def describe(self) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.time))
        where = f" [{self.logger}]" if self.logger else ""
        return f"{stamp} {self.level:9}{where} {self.text}"


class ServerLog:
    """The last ``limit`` messages of one server, oldest first (a chatty server cannot fill memory)."""

    def __init__(self, limit: int = 500) -> None:
        self._entries: deque[LogEntry] = deque(maxlen=limit)
        self.total = 0

    def add(self, level: str, logger: str | None, data: Any) -> LogEntry:
        entry = LogEntry(time=time.time(), level=level, logger=logger, text=_text(data))
        self._entries.append(entry)
        self.total += 1
        return entry

    def __iter__(self) -> Iterator[LogEntry]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def tail(self, count: int) -> list[LogEntry]:
        return list(self._entries)[-count:] if count > 0 else []
