"""The audit trail of the current cell: one line per approval decision, as it happens."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ..record import audit_html

__all__ = ["AuditWidget", "audit_fields"]


def audit_fields(record: dict[str, Any]) -> dict[str, str]:
    """The raw columns of one audit record, whatever optional keys it lacks."""
    rule = record.get("rule") or ""
    layer = record.get("layer") or ""
    tool = record.get("tool") or record.get("display_name")
    if not tool and record.get("event") == "network":
        tool = f"network {record.get('host', '?')}:{record.get('port', '')}"  # a sandboxed command's connection
    return {
        "tool": str(tool or record.get("event") or "?"),
        "decision": str(record.get("decision") or record.get("kind") or "?"),
        "why": "/".join(part for part in (str(layer), str(rule)) if part) or str(record.get("reason") or ""),
        "by": str(record.get("by") or ""),
        "outcome": str(record.get("outcome") or ""),
    }


class AuditWidget(widgets.HTML):
    """Decisions of this cell: what, who decided and why, what came of it."""

    def __init__(self, project: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("codingcode-audit")
        self.project = project
        self.records: list[dict[str, Any]] = []
        self.show(self.records)

    def add(self, record: dict[str, Any]) -> None:
        """Append a decision; an outcome record completes its decision's row instead."""
        if record.get("event") == "outcome":
            for row in reversed(self.records):
                if row.get("tool_use_id") == record.get("tool_use_id") and row.get("tool_use_id"):
                    row["outcome"] = record.get("outcome", "")
                    self.show(self.records)
                    return
        self.records.append(dict(record))
        self.show(self.records)

    def show(self, records: list[dict[str, Any]]) -> None:
        """Redraw from ``records`` (the view shares its record's list)."""
        self.records = records
        self.value = audit_html(records, self.project)
