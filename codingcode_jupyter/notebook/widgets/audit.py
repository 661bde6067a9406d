"""The audit trail of the current cell: one line per approval decision, as it happens."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ._text import h, short

__all__ = ["AuditWidget", "audit_fields"]


def audit_fields(record: dict[str, Any]) -> dict[str, str]:
    """The columns shown for one audit record, whatever optional keys it lacks."""
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
    """Decisions of this cell (tool, decision, layer/rule, who decided)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_class("codingcode-audit")
        self.records: list[dict[str, Any]] = []
        self._render()

    def add(self, record: dict[str, Any]) -> None:
        """Append a decision; an outcome record completes its decision's row instead."""
        if record.get("event") == "outcome":
            for row in reversed(self.records):
                if row.get("tool_use_id") == record.get("tool_use_id") and row.get("tool_use_id"):
                    row["outcome"] = record.get("outcome", "")
                    self._render()
                    return
        self.records.append(dict(record))
        self._render()

    def _render(self) -> None:
        if not self.records:
            self.value = "<b>Audit</b><div><i>no decisions yet</i></div>"
            return
        rows = []
        for record in self.records:
            f = audit_fields(record)
            colour = "#1a7f37" if f["decision"].startswith("allow") else "#cf222e"
            outcome = f" → {h(f['outcome'])}" if f["outcome"] else ""
            rows.append(
                f'<div class="audit-row"><code>{h(f["tool"])}</code> '
                f'<b style="color:{colour}">{h(f["decision"])}</b>{outcome} '
                f'<span style="opacity:.7">{h(short(f["why"], 60))}'
                f'{" · by " + h(f["by"]) if f["by"] else ""}</span></div>'
            )
        self.value = "<b>Audit</b>" + "".join(rows)
