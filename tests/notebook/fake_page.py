"""A notebook page with the codingcode-jupyter extension, played over the kernel protocol.

It does what ``frontend/src`` does in the browser, on a list of cells kept here: it answers the
kernel's ping by opening its comm with a hello, and answers read / propose / set_outputs
requests. Proposals under review are answered by the test (``answers``), as a person clicks.
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

from tests.notebook.kernel_harness import Kernel

__all__ = ["FakePage"]


@dataclass
class FakePage:
    kernel: Kernel
    cells: list[dict[str, Any]]
    path: str = "page.ipynb"
    dirty: bool = True
    # change id -> "accepted" / "rejected"; a change not named waits.
    answers: dict[str, str] = field(default_factory=dict)
    client: str = field(default_factory=lambda: uuid.uuid4().hex)
    comm_id: str | None = None
    seen: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    # Each page numbers its own new cells: a count shared by every page made ids depend on the tests run before.
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        self.kernel.kc.session.send(self.kernel.kc.shell_channel.socket, msg_type, content)

    def _reply(self, request: dict[str, Any], result: Any) -> None:
        self._send("comm_msg", {"comm_id": self.comm_id, "data": {"type": "reply", "id": request["id"], "ok": True, "result": result}})

    def step(self) -> None:
        """Answer what the kernel published since the last step (call it inside a wait loop)."""
        self.kernel.pump(0.02)
        messages = self.kernel.messages[self.seen:]
        self.seen = len(self.kernel.messages)
        for msg in messages:
            content = msg["content"]
            if msg["msg_type"] == "comm_open" and content.get("target_name") == "codingcode.notebook.ping":
                hello = {"type": "hello", "protocol": 1, "client": self.client, "path": self.path,
                         "focused": True, "visible": True, "dirty": self.dirty}
                if self.comm_id is None:
                    self.comm_id = uuid.uuid4().hex
                    self._send("comm_open", {"comm_id": self.comm_id, "target_name": "codingcode.notebook", "data": hello})
                else:
                    self._send("comm_msg", {"comm_id": self.comm_id, "data": hello})
            elif msg["msg_type"] == "comm_msg" and content.get("comm_id") == self.comm_id:
                data = content.get("data") or {}
                if data.get("type") == "request" and data.get("to") == self.client:
                    self.requests.append(data)
                    self._handle(data)
        for request in list(self.pending):
            self._review(request)

    def _index(self, cell_id: str | None) -> int:
        return next((i for i, cell in enumerate(self.cells) if cell["id"] == cell_id), -1)

    def _handle(self, request: dict[str, Any]) -> None:
        op = request["op"]
        if op == "read":
            self._reply(request, {
                "path": self.path, "dirty": self.dirty, "active_index": 0, "active_cell_id": None,
                "cells": [{**cell, "index": i} for i, cell in enumerate(self.cells)],
            })
        elif op == "set_outputs":
            index = self._index(request["cell_id"])
            self.cells[index]["outputs"] = request["outputs"]
            self._reply(request, {"ok": True})
        elif op == "propose":
            if request.get("review"):
                self.pending.append(request)
            else:
                self._reply(request, {"results": [self._apply(change, "applied") for change in request["changes"]]})

    def _apply(self, change: dict[str, Any], answer: str) -> dict[str, Any]:
        kind = change["kind"]
        if kind == "insert":
            index = self._index(change.get("cell_id"))
            at = len(self.cells) if index < 0 else index + (0 if change.get("position") == "before" else 1)
            if change.get("cell_id") is None and change.get("index") is not None:
                at = change["index"]
            taken = change.get("id") and self._index(change["id"]) >= 0
            new = {"id": change.get("id") if change.get("id") and not taken else f"new{next(self._ids)}",
                   "cell_type": change.get("cell_type", "code"), "source": change.get("source", ""),
                   "outputs": list(change.get("outputs") or []), "execution_count": change.get("execution_count")}
            self.cells.insert(at, new)
            return {"change": change["change"], "answer": answer, "cell_id": new["id"], "index": at}
        index = self._index(change.get("cell_id"))
        if index < 0:
            return {"change": change["change"], "answer": "conflict", "note": "no such cell"}
        cell = self.cells[index]
        if change.get("expected_source") is not None and cell["source"] != change["expected_source"]:
            return {"change": change["change"], "answer": "conflict", "note": "the cell changed since the agent read it"}
        before, before_cell = cell["source"], json.loads(json.dumps(cell))
        if kind == "replace":
            cell["source"] = change["source"]
            if "outputs" in change:
                cell["outputs"], cell["execution_count"] = list(change["outputs"]), change.get("execution_count")
        elif kind == "delete":
            self.cells.pop(index)
        elif kind == "move":
            self.cells.insert(change["to_index"], self.cells.pop(index))
        return {"change": change["change"], "answer": answer, "cell_id": cell["id"], "index": index,
                "before": before, "before_cell": before_cell, "cell_type": cell["cell_type"]}

    def _review(self, request: dict[str, Any]) -> None:
        if not all(change["change"] in self.answers for change in request["changes"]):
            return
        self.pending.remove(request)
        results = []
        for change in request["changes"]:
            if self.answers[change["change"]] == "accepted":
                results.append(self._apply(change, "accepted"))
            else:
                results.append({"change": change["change"], "answer": "rejected"})
        self._reply(request, {"results": results})
