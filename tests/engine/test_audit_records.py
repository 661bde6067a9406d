"""Audit records are typed models, written as the same JSON lines as before; old files still read."""

import json

from codingcode_jupyter.engine.approval.audit import AuditLog
from codingcode_jupyter.engine.approval.audit_records import (
    DecisionRecord,
    NetworkRecord,
    OtherAuditRecord,
    OutcomeRecord,
    TrustRecord,
    TrustRecordItem,
    UndoRecord,
    UnreadableLine,
)


def _lines(project):
    return [json.loads(line) for line in (project / ".codingcode" / "audit.jsonl").read_text().splitlines()]


def test_each_record_is_written_as_the_json_it_was_before(tmp_path):
    log = AuditLog(tmp_path)
    log.append(DecisionRecord(session_id="s", turn_id=1, tool_use_id="t", agent="main", tool="write_file",
                              input={"path": "a"}, original_input=None, decision="allow", layer="rules",
                              rule="write_file(a)", reason="r", by="rule", mode="default", layers=[]))
    log.append(DecisionRecord(session_id="s", turn_id=1, tool_use_id="c", agent="main", tool="sampling", input={},
                              decision="deny", layer="mcp", rule=None, reason="sampling request of an MCP server",
                              by="user"))
    log.append(OutcomeRecord(session_id="s", turn_id=1, tool_use_id="t", agent="main", tool="write_file",
                             decision="allow", outcome="ok", duration_ms=1.5))
    log.append(NetworkRecord(method="CONNECT", host="example.org", port=443, decision="deny", by="sandbox"))
    log.append(TrustRecord(session_id="s", decision="trust", by="user",
                           items=[TrustRecordItem(kind="allow", summary="x", file="f", fingerprint="h", files=["f"])]))
    log.append(UndoRecord(session_id="s", turn_id=2, by="user", forced=False, files=[{"path": "a"}]))
    written = _lines(tmp_path)
    assert all(list(line)[:2] == ["ts", "event"] for line in written)
    without_ts = [{k: v for k, v in line.items() if k != "ts"} for line in written]
    assert without_ts == [
        {"event": "decision", "session_id": "s", "turn_id": 1, "tool_use_id": "t", "agent": "main",
         "tool": "write_file", "input": {"path": "a"}, "original_input": None, "decision": "allow", "layer": "rules",
         "rule": "write_file(a)", "reason": "r", "by": "rule", "mode": "default", "layers": []},
        # What a writer did not set is left out, what it set to null is written as null.
        {"event": "decision", "session_id": "s", "turn_id": 1, "tool_use_id": "c", "agent": "main", "tool": "sampling",
         "input": {}, "decision": "deny", "layer": "mcp", "rule": None,
         "reason": "sampling request of an MCP server", "by": "user"},
        {"event": "outcome", "session_id": "s", "turn_id": 1, "tool_use_id": "t", "agent": "main", "tool": "write_file",
         "decision": "allow", "outcome": "ok", "duration_ms": 1.5},
        {"event": "network", "method": "CONNECT", "host": "example.org", "port": 443, "decision": "deny", "by": "sandbox"},
        {"event": "trust", "session_id": "s", "decision": "trust", "by": "user",
         "items": [{"kind": "allow", "summary": "x", "file": "f", "fingerprint": "h", "files": ["f"]}]},
        {"event": "undo", "session_id": "s", "turn_id": 2, "by": "user", "forced": False, "files": [{"path": "a"}]},
    ]


def test_a_file_written_before_the_records_were_typed_reads(tmp_path):
    path = tmp_path / ".codingcode" / "audit.jsonl"
    path.parent.mkdir()
    old = [
        {"ts": "2026-01-01T00:00:00.000+00:00", "event": "decision", "session_id": "s", "turn_id": 1,
         "tool_use_id": "t", "agent": "main", "tool": "read_file", "input": {"path": "a"}, "original_input": None,
         "decision": "allow", "layer": "readonly", "rule": None, "reason": "", "by": "readonly", "mode": "default",
         "layers": [{"layer": "rules", "decision": "continue"}], "reviewer": {"verdict": "allow"}},
        {"ts": "2026-01-01T00:00:01.000+00:00", "event": "outcome", "session_id": "s", "turn_id": 1,
         "tool_use_id": "t", "agent": "main", "tool": "read_file", "decision": "allow", "outcome": "ok",
         "duration_ms": 3},
        {"ts": "2026-01-01T00:00:02.000+00:00", "event": "from-a-later-version", "what": 1},
        {"ts": "2026-01-01T00:00:03.000+00:00", "event": "undo", "turn_id": "not a number"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in old) + '{"torn\n')
    records = AuditLog(tmp_path).records(None)
    assert [type(r) for r in records] == [DecisionRecord, OutcomeRecord, OtherAuditRecord, OtherAuditRecord,
                                          UnreadableLine]
    decision = records[0]
    assert isinstance(decision, DecisionRecord) and decision.reviewer == {"verdict": "allow"} and decision.rule is None
    assert records[2].model_extra == {"what": 1}  # kept, not dropped
    assert records[3].model_extra == {"turn_id": "not a number"}
    # Read back, a typed record writes the line it was read from.
    assert decision.written(decision.ts) == old[0]
