"""The audit log: `.codingcode/audit.jsonl`, one JSON object a line.

Each decision is written, flushed and fsync'd before the tool runs, so an interrupt or a
kernel crash loses nothing; the outcome follows as a second record with the same
``tool_use_id``. Appends take an exclusive lock so concurrent sessions never interleave.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..own_dir import keep_out_of_git
from .audit_records import AuditRecord, parse_record

__all__ = ["AuditLog", "audit_path", "clip_input"]

_MAX_STRING = 4000


def audit_path(project: Path) -> Path:
    """Where the project's audit log lives."""
    return Path(project) / ".codingcode" / "audit.jsonl"


def clip_input(value: Any) -> Any:
    """The input with very long strings shortened (their sha256 kept), for the log."""
    if isinstance(value, str) and len(value) > _MAX_STRING:
        digest = hashlib.sha256(value.encode(errors="replace")).hexdigest()
        return f"{value[:_MAX_STRING]}... [{len(value)} chars, sha256 {digest}]"
    if isinstance(value, dict):
        return {key: clip_input(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clip_input(item) for item in value]
    return value


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class AuditLog:
    """Append-only JSONL audit trail of one project."""

    def __init__(self, project: Path) -> None:
        self.path = audit_path(project)

    def append(self, record: AuditRecord) -> dict[str, Any]:
        """Write one record durably (flush + fsync) and return it as written."""
        written = record.written(now())
        line = json.dumps(written, ensure_ascii=False, default=str, separators=(",", ":")) + "\n"
        keep_out_of_git(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)  # closing releases the lock
        return written

    def records(self, last_n: int | None = 50) -> list[AuditRecord]:
        """The last ``last_n`` records, typed (all when None); old files read, nothing is dropped."""
        return [parse_record(raw) for raw in self.read(last_n)]

    def read(self, last_n: int | None = 50) -> list[dict[str, Any]]:
        """The last ``last_n`` records as the JSON objects in the file (all when None); a damaged line
        is reported, not fatal."""
        if not self.path.exists():
            return []
        lines: deque[str] = deque(maxlen=last_n) if last_n else deque()
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    lines.append(line)
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                records.append({"event": "unreadable", "line": line[:200]})
        return records
