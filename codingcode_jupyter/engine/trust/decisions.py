"""Trust decisions in the audit log, like any other decision: who, what, which hashes, when."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ..approval.audit import AuditLog
from ..approval.audit_records import TrustRecord, TrustRecordItem
from .items import TrustItem

__all__ = ["record_trust"]

TrustDecision = Literal["trust", "not now", "revoke"]


def record_trust(project: Path, decision: TrustDecision, items: list[TrustItem], *, by: str,
                 session_id: str = "") -> None:
    """Append one ``{"event": "trust"}`` record naming every item and the files it came from."""
    AuditLog(project).append(TrustRecord(
        session_id=session_id, decision=decision, by=by,
        items=[TrustRecordItem(kind=item.kind, summary=item.summary, file=str(item.path), fingerprint=item.fingerprint,
                               files=item.files) for item in items],
    ))
