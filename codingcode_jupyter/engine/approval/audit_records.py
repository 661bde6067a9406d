"""The audit log's records, typed: one pydantic model per ``event``, each written as one JSON line.

A field is written when the writer set it, even to null (``rule: null`` says no rule decided),
and left out when it did not (a sampling decision has no ``layers``); :meth:`AuditRecord.written`
keeps that, so the JSON is what it was before the records were typed. Reading is lenient: a
record of an event this version does not know, or one whose fields do not validate, is kept
as :class:`OtherAuditRecord` with every field, and an unreadable line as :class:`UnreadableLine`.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = ["AuditRecord", "DecisionRecord", "OutcomeRecord", "ReviewRecord", "NetworkRecord", "TrustRecord", "TrustRecordItem",
           "UndoRecord", "PreviewRecord", "OtherAuditRecord", "UnreadableLine", "WrittenRecord", "parse_record"]


class AuditRecord(BaseModel):
    """One line of the audit log. ``ts`` is set as it is written."""

    # Fields a later version adds are kept when an old version reads the file.
    model_config = ConfigDict(extra="allow")

    event: str
    ts: str | None = None

    def written(self, ts: str | None) -> dict[str, Any]:
        """The JSON object written at ``ts``: ``ts``, ``event``, then what the writer set, in the model's
        order (no ``ts`` for a record shown but not written: auditing off)."""
        fields = {"event": self.event, **self.model_dump(exclude_unset=True, exclude={"ts", "event"})}
        return {"ts": ts, **fields} if ts is not None else fields


class _CallRecord(AuditRecord):
    """What names the call a record is about: its session, turn, id, agent and tool."""

    session_id: str = ""
    turn_id: int | None = None
    tool_use_id: str = ""
    agent: str = ""
    tool: str = ""


class DecisionRecord(_CallRecord):
    """A tool call decided (the pipeline, a call that changed nothing, an MCP server's sampling request)."""

    event: Literal["decision"] = "decision"
    input: Any = None
    original_input: Any = None
    decision: str = ""
    layer: str | None = None
    rule: str | None = None
    reason: str = ""
    by: str | None = None
    mode: str | None = None
    # The trail: every layer's word on the call, as Verdict.trail_entry writes it.
    layers: list[dict[str, Any]] | None = None
    reviewer: dict[str, Any] | None = None
    outcome: str | None = None


class OutcomeRecord(_CallRecord):
    """How a decided call ended (ok / error / denied / interrupted), with the decision's tool_use_id."""

    event: Literal["outcome"] = "outcome"
    decision: str = ""
    outcome: str = ""
    duration_ms: float = 0.0


class ReviewRecord(_CallRecord):
    """What came of each change of a call the person reviewed where it applies (edit_notebook's cells):
    ``changes`` holds one ``{"change": what, "answer": accepted | rejected | conflict | cancelled | applied}``
    (and a ``note``) per change, in order."""

    event: Literal["review"] = "review"
    changes: list[dict[str, Any]] = []


class NetworkRecord(AuditRecord):
    """A connection a sandboxed command asked the allowlist proxy for."""

    event: Literal["network"] = "network"
    method: str = ""
    host: str = ""
    port: int | None = None
    decision: Literal["allow", "deny"] = "deny"
    by: str = ""


class TrustRecordItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    kind: str
    summary: str
    file: str
    fingerprint: str
    files: Any = None


class TrustRecord(AuditRecord):
    """The person trusted, declined ("not now") or revoked what the project's files ask for."""

    event: Literal["trust"] = "trust"
    session_id: str = ""
    decision: str = ""
    by: str = ""
    items: list[TrustRecordItem] = []


class UndoRecord(AuditRecord):
    """A turn's file changes (and the variables its code changed) undone."""

    event: Literal["undo"] = "undo"
    session_id: str = ""
    turn_id: int | None = None
    by: str = ""
    forced: bool = False
    files: list[dict[str, Any]] = []
    # The person's variables put back with the files (a front that lives in a kernel restores them).
    names: list[dict[str, Any]] = []


class PreviewRecord(_CallRecord):
    """A command's card ran its Preview: the command in a throwaway copy of the project, and what it changed
    there (the project itself untouched)."""

    event: Literal["preview"] = "preview"
    command: str = ""
    method: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    error: str | None = None
    files: list[dict[str, Any]] = []
    more_files: int = 0
    seconds: float = 0.0


class OtherAuditRecord(AuditRecord):
    """A record of an event this version does not know, or that does not validate: kept as written."""


class UnreadableLine(AuditRecord):
    """A line that is not a JSON object (a torn write, an edit by hand)."""

    event: str = "unreadable"
    line: str = ""


WrittenRecord = Union[DecisionRecord, OutcomeRecord, ReviewRecord, NetworkRecord, TrustRecord, UndoRecord, PreviewRecord]
_BY_EVENT: dict[str, type[AuditRecord]] = {
    "decision": DecisionRecord, "outcome": OutcomeRecord, "review": ReviewRecord, "network": NetworkRecord, "trust": TrustRecord,
    "undo": UndoRecord, "preview": PreviewRecord, "unreadable": UnreadableLine,
}


def parse_record(raw: Any) -> AuditRecord:
    """One line's JSON as its record; what cannot be typed is kept, never dropped."""
    if not isinstance(raw, dict):
        return UnreadableLine(line=repr(raw)[:200])
    model = _BY_EVENT.get(str(raw.get("event", "")))
    if model is not None:
        try:
            return model.model_validate(raw)
        except ValidationError:
            pass
    try:
        return OtherAuditRecord.model_validate({"event": str(raw.get("event", "")), **{k: v for k, v in raw.items()
                                                                                      if k != "event"}})
    except ValidationError:
        return UnreadableLine(line=repr(raw)[:200])
