"""A session's transcript: typed records, one JSON object a line, appended and flushed as written.

The engine reads and writes only the record models below; JSON exists only in the file (each
record is converted once, on its way in or out). Records are told apart by their ``type``
field, which each model fixes. Reading is lenient, so a transcript written by an earlier
version still loads: fields a record does not know are kept (``extra="allow"``), a record of a
type this version does not know is kept as :class:`OtherRecord` (and skipped by whoever replays
the session), a line torn by a crash becomes :class:`TornLine`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .events import TodoItem, Usage
from .messages import MessageParam
from .own_dir import keep_out_of_git

__all__ = [
    "sessions_dir",
    "Transcript",
    "TranscriptRecord",
    "SessionHeader",
    "OriginRecord",
    "MessageRecord",
    "TodoRecord",
    "TurnRecord",
    "UsageRecord",
    "CompactionRecord",
    "SubagentRecord",
    "OtherRecord",
    "TornLine",
]


class _Record(BaseModel):
    # Written by another version: what this one does not know is kept, not dropped.
    model_config = ConfigDict(extra="allow")

    ts: float = Field(default_factory=time.time)


class SessionHeader(_Record):
    """The first record of a session's transcript."""

    type: Literal["session"] = "session"
    id: str = ""
    created: str = ""
    project: str = ""
    model: str = ""


class OriginRecord(_Record):
    """The document the session was started from, as the front named it (a notebook's path)."""

    type: Literal["origin"] = "origin"
    notebook: str = ""


class MessageRecord(_Record):
    """One message appended to the conversation, as it was sent (a prompt's content may be a string)."""

    type: Literal["message"] = "message"
    # The Messages API's message (role, content) exactly as on the wire.
    message: MessageParam


class TodoRecord(_Record):
    """The main agent's todo list after a change."""

    type: Literal["todo"] = "todo"
    items: list[TodoItem] = Field(default_factory=list)


class TurnRecord(_Record):
    """A finished turn: its tokens and cost (a sub-agent's transcript adds its steps)."""

    type: Literal["turn"] = "turn"
    turn_id: int | None = None  # a sub-agent's transcript has none (its turn is the parent's call)
    model: str = ""
    stop_reason: str = ""
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0
    steps: int | None = None


class UsageRecord(_Record):
    """Tokens spent outside any turn (a forced compaction's summary)."""

    type: Literal["usage"] = "usage"
    reason: str = ""
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0


class CompactionRecord(_Record):
    """What one compaction did to what is sent; replayed on resume by ``context.apply_compaction``."""

    type: Literal["compaction"] = "compaction"
    reason: str = ""
    arg_limit: int = 2000
    # The tool_use ids whose results (and long arguments) became short traces.
    shortened: list[str] | None = None
    # The older messages replaced by a summary: how many, and the summary.
    summary: str | None = None
    drop: int | None = None
    # Every long text clipped to this many characters.
    clip: int | None = None

    @property
    def changed(self) -> bool:
        return bool(self.shortened) or (self.summary is not None and bool(self.drop)) or bool(self.clip)


class SubagentRecord(_Record):
    """The first record of a sub-agent's transcript: who it is and what it was asked."""

    type: Literal["subagent"] = "subagent"
    agent: str
    profile: str
    origin: str = ""
    parent_tool_use_id: str = ""
    model: str = ""
    prompt: str = ""


class OtherRecord(_Record):
    """A record of a type this version does not know (a later version wrote it): kept, not replayed."""

    type: str = ""


class TornLine(_Record):
    """A line that is not a record (torn by a crash mid-write, or a record that does not parse)."""

    type: Literal["corrupt"] = "corrupt"
    line: int = 0


TranscriptRecord = Union[SessionHeader, OriginRecord, MessageRecord, TodoRecord, TurnRecord, UsageRecord, CompactionRecord,
                         SubagentRecord, OtherRecord, TornLine]

_BY_TYPE: dict[str, type[_Record]] = {
    model.model_fields["type"].default: model
    for model in (SessionHeader, OriginRecord, MessageRecord, TodoRecord, TurnRecord, UsageRecord, CompactionRecord, SubagentRecord)
}


def parse_record(raw: Any, line: int = 0) -> TranscriptRecord:
    """The record one JSON line holds (see the module docstring for what is lenient)."""
    if not isinstance(raw, dict):
        return TornLine(line=line)
    model = _BY_TYPE.get(str(raw.get("type", "")), OtherRecord)
    try:
        return model.model_validate(raw)  # type: ignore[return-value]
    except ValidationError:
        return TornLine(line=line)


class Transcript:
    """Append-only JSONL; each record flushed as written, so a crash loses nothing."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, record: TranscriptRecord) -> None:
        keep_out_of_git(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record.model_dump(mode="json", exclude_none=True), ensure_ascii=False, default=str)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()

    def read(self) -> list[TranscriptRecord]:
        """Every record, in order."""
        return [parse_record(raw, number) for number, raw in self._lines()]

    def records(self) -> list[dict[str, Any]]:
        """Every record as the file holds it (JSON objects): what a person or a test looks at."""
        out: list[dict[str, Any]] = []
        for number, raw in self._lines():
            out.append(raw if isinstance(raw, dict) else {"type": "corrupt", "line": number})
        return out

    def _lines(self) -> list[tuple[int, Any]]:
        if not self.path.exists():
            return []
        out: list[tuple[int, Any]] = []
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append((number, json.loads(line)))
            except json.JSONDecodeError:
                # A line torn by a crash mid-write: skip it rather than lose the session.
                out.append((number, None))
        return out


def sessions_dir(project: Path) -> Path:
    """Where a project's sessions keep their transcripts."""
    return Path(project) / ".codingcode" / "sessions"
