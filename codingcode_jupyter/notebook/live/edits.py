"""edit_notebook: change, insert, delete and move cells of the open notebook, through its page.

The changes travel to the page (see :mod:`.channel`), which applies them to the notebook's own
model, so an open document is never overwritten behind its back and, with real-time
collaboration, they go through the shared document like a person's typing. When the call
was allowed by a rule or the mode they are applied at once; when a person must answer they
show on the cells with Accept / Reject, and the answers are the tool's result.

A replacement or deletion names the source the agent last read (read_notebook); if the
person changed that cell since, the page answers "conflict" instead of overwriting it.
What was accepted is kept per turn beside the turn's checkpoint (``cells.json`` in its
directory), with the notebook it was made in, so ``%agent undo`` can put the cells back, after a
kernel restart too.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from ...engine.atomic import atomic_write
from ...engine.checkpoints import CheckpointError, CheckpointStore
from ...engine.tools.base import ToolContext, ToolError
from .channel import LiveChannel, NotebookUnavailable, Page, PageError, channel_for

__all__ = ["CellChange", "EditNotebookArgs", "CellEdits", "edit_notebook", "edit_notebook_preview", "undo_cell_edits"]

MAX_CHANGES = 20
MAX_SOURCE_CHARS = 200_000


class CellChange(BaseModel):
    """One change to the notebook."""

    action: Literal["replace", "insert", "delete", "move"] = Field(
        description="'replace' a cell's source, 'insert' a new cell, 'delete' a cell, or 'move' a cell."
    )
    cell_id: str | None = Field(
        default=None,
        description="The cell's id as read_notebook shows it. For insert: the cell to insert next to (none: at the end).",
    )
    source: str | None = Field(default=None, max_length=MAX_SOURCE_CHARS, description="replace/insert: the new source.")
    cell_type: Literal["code", "markdown", "raw"] = Field(default="code", description="insert: the new cell's type.")
    position: Literal["after", "before"] = Field(default="after", description="insert: after or before cell_id.")
    to_position: int | None = Field(default=None, ge=1, description="move: the cell's new position, counting from 1.")

    @model_validator(mode="after")
    def _complete(self) -> "CellChange":
        needs = {
            "replace": ("cell_id", "source"), "insert": ("source",), "delete": ("cell_id",), "move": ("cell_id", "to_position"),
        }[self.action]
        missing = [name for name in needs if getattr(self, name) is None]
        if missing:
            raise ValueError(f"{self.action} needs {' and '.join(missing)}")
        return self


class EditNotebookArgs(BaseModel):
    """Parameters of edit_notebook."""

    changes: list[CellChange] = Field(min_length=1, max_length=MAX_CHANGES, description="The changes, in order.")


class CellEdits(BaseModel):
    """What one turn's accepted changes were, and how to put each back (kept on disk, see ``save``)."""

    session_id: str
    turn_id: int
    # The notebook's path as its page names it (relative to the server's root): the cells are
    # put back only in that notebook.
    notebook: str = ""
    described: list[str] = Field(default_factory=list)
    inverse: list[dict[str, Any]] = Field(default_factory=list)
    undone: bool = False


CELLS_FILE = "cells.json"


def _edits_path(store: CheckpointStore, session_id: str, turn_id: int) -> Path:
    return store.turn_dir(session_id, turn_id) / CELLS_FILE


def _save(store: CheckpointStore, edits: CellEdits) -> None:
    atomic_write(_edits_path(store, edits.session_id, edits.turn_id), edits.model_dump_json(indent=1).encode(), 0o600)


def turn_edits(store: CheckpointStore, session_id: str, turn_id: int) -> CellEdits | None:
    """The accepted cell edits of a turn not undone yet (None: it edited no cell)."""
    try:
        path = _edits_path(store, session_id, turn_id)
        edits = CellEdits.model_validate_json(path.read_bytes())
    except (OSError, CheckpointError, ValidationError, ValueError):
        return None
    return None if edits.undone or not edits.inverse else edits


def _record(ctx: ToolContext, notebook: str, described: list[str], inverse: list[dict[str, Any]]) -> None:
    """Add one call's accepted changes to its turn's record (a turn may edit several times)."""
    kept = ctx.deps.checkpoints
    store = kept if kept is not None else CheckpointStore(ctx.project_path)
    edits = turn_edits(store, ctx.session_id, ctx.turn_id) or CellEdits(
        session_id=ctx.session_id, turn_id=ctx.turn_id, notebook=notebook)
    edits.described.extend(described)
    edits.inverse.extend(inverse)
    try:
        _save(store, edits)
    except (OSError, CheckpointError) as error:
        ctx.progress(f"the cell edits could not be recorded for undo: {error}")


def _wire(change: CellChange, number: int, expected: str | None) -> dict[str, Any]:
    wire: dict[str, Any] = {"change": f"c{number}", "kind": change.action, "cell_id": change.cell_id}
    if change.action in ("replace", "insert"):
        wire["source"] = change.source
    if change.action == "insert":
        wire["cell_type"] = change.cell_type
        wire["position"] = change.position
    if change.action in ("replace", "delete"):
        wire["expected_source"] = expected
    if change.action == "move":
        wire["to_index"] = (change.to_position or 1) - 1
    return wire


def _diff(before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=2)
    return "\n".join(list(lines)[2:])


def _describe(change: CellChange, read: dict[str, str]) -> str:
    where = f"cell {change.cell_id}" if change.cell_id else "the end"
    if change.action == "replace":
        before = read.get(change.cell_id or "", "")
        return f"Replace the source of cell {change.cell_id}:\n{_diff(before, change.source or '')}"
    if change.action == "insert":
        place = f"{change.position} {where}" if change.cell_id else "at the end"
        return f"Insert a {change.cell_type} cell {place}:\n{change.source}"
    if change.action == "delete":
        return f"Delete cell {change.cell_id}:\n{read.get(change.cell_id or '', '')}"
    return f"Move cell {change.cell_id} to position {change.to_position}"


async def edit_notebook_preview(args: EditNotebookArgs, ctx: ToolContext, shell: Any = None) -> str:
    read = last_read(channel_for(shell)) if shell is not None else {}
    return "\n\n".join(_describe(change, read) for change in args.changes)


def last_read(channel: LiveChannel) -> dict[str, str]:
    """Each cell's source as the agent last read it (cell id -> source)."""
    return channel.last_read


# Outputs longer than this (in JSON) are not kept for undo: undoing clears the cell's outputs instead
# (the agent's run since is never what the cell showed before).
MAX_KEPT_OUTPUTS = 1_000_000


def _as_it_was(result: dict[str, Any]) -> dict[str, Any]:
    """The outputs and execution count a cell had before a change, to put back with it on undo
    (nothing when the page did not send them: an older extension)."""
    cell = result.get("before_cell")
    if not isinstance(cell, dict) or cell.get("cell_type", "code") != "code":
        return {}
    outputs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
    if len(json.dumps(outputs)) > MAX_KEPT_OUTPUTS:
        return {"outputs": [], "execution_count": None}
    return {"outputs": outputs, "execution_count": cell.get("execution_count")}


def _inverse(change: dict[str, Any], result: dict[str, Any]) -> dict[str, Any] | None:
    kind = change["kind"]
    if kind == "replace":
        return {"kind": "replace", "cell_id": result.get("cell_id"), "source": result.get("before", ""),
                "expected_source": change.get("source"), **_as_it_was(result)}
    if kind == "insert":
        return {"kind": "delete", "cell_id": result.get("cell_id"), "expected_source": change.get("source")}
    if kind == "delete":
        found = result.get("before_cell")
        cell: dict[str, Any] = found if isinstance(found, dict) else {}
        # The cell comes back as it was: its own id (the agent's next edit names it), outputs, metadata.
        return {"kind": "insert", "cell_id": None, "index": result.get("index"), "source": result.get("before", ""),
                "cell_type": result.get("cell_type", "code"), "id": cell.get("id") or result.get("cell_id"),
                **({"metadata": cell["metadata"]} if isinstance(cell.get("metadata"), dict) else {}),
                **_as_it_was(result)}
    if kind == "move":
        return {"kind": "move", "cell_id": result.get("cell_id"), "to_index": result.get("index")}
    return None


_ANSWERS = {
    "applied": "done", "accepted": "accepted by the person", "rejected": "rejected by the person (nothing changed)",
    "cancelled": "not answered (the review was withdrawn; nothing changed)",
}


async def edit_notebook(shell: Any, args: EditNotebookArgs, ctx: ToolContext, *, review: bool) -> str:
    """The tool: send the changes to the page; return what each became."""
    channel = channel_for(shell)
    read = last_read(channel)
    try:
        live = await channel.request("read")
    except NotebookUnavailable as error:
        raise ToolError(f"Cannot edit the notebook: {error}. Use insert_cell to propose a cell instead.") from None
    current = {cell["id"]: cell.get("source", "") for cell in live.get("cells", []) if cell.get("id")}
    wire = []
    for number, change in enumerate(args.changes, 1):
        if change.cell_id is not None and change.cell_id not in current:
            raise ToolError(f"There is no cell {change.cell_id!r} in the open notebook: call read_notebook for the ids.")
        expected = read.get(change.cell_id or "", current.get(change.cell_id or "")) if change.cell_id else None
        wire.append(_wire(change, number, expected))

    def on_answer(event: dict[str, Any]) -> None:
        ctx.progress(f"cell change {event.get('change')}: {event.get('answer')}")

    timeout = ctx.approval_timeout if review else None
    try:
        reply = await channel.request(
            "propose", changes=wire, review=review, on_answer=on_answer,
            title=f"The agent proposes {len(wire)} cell change{'s' if len(wire) != 1 else ''}",
            wait=timeout if review else 30.0,
        )
    except NotebookUnavailable as error:
        raise ToolError(f"The notebook page stopped answering: {error}. Nothing more was changed.") from None
    except PageError as error:
        raise ToolError(f"The notebook page could not apply the changes: {error}") from None
    results = {result.get("change"): result for result in reply.get("results", [])}
    outcome = _outcome(args, wire, results, read)
    if outcome.inverses:
        _record(ctx, str(live.get("path") or ""), outcome.described, outcome.inverses)
    _audit_answers(ctx, outcome.answers)
    how = "reviewed on the cells" if review else "applied (allowed without review)"
    return f"Notebook changes {how}:\n" + "\n".join(outcome.lines)


class _Outcome(BaseModel):
    """What came of each change: the lines told to the model, the answers for the record and the audit,
    and what undo needs of the accepted ones."""

    lines: list[str] = Field(default_factory=list)
    answers: list[dict[str, Any]] = Field(default_factory=list)
    described: list[str] = Field(default_factory=list)
    inverses: list[dict[str, Any]] = Field(default_factory=list)


def _what(change: CellChange) -> str:
    if change.action == "insert":
        anchor = f" {change.position} cell {change.cell_id}" if change.cell_id else " at the end"
        return f"insert a new {change.cell_type} cell{anchor}"
    return f"{change.action} cell {change.cell_id}"


def _outcome(args: EditNotebookArgs, wire: list[dict[str, Any]], results: dict[Any, dict[str, Any]],
             read: dict[str, str]) -> _Outcome:
    outcome = _Outcome()
    for change, sent in zip(args.changes, wire):
        result = results.get(sent["change"], {"answer": "cancelled"})
        answer = str(result.get("answer", "cancelled"))
        what = _what(change)
        note = str(result.get("note") or "")
        outcome.answers.append({"change": what, "answer": answer, **({"note": note} if note else {})})
        if answer == "conflict":
            outcome.lines.append(f"- {what}: not done, {note or 'the cell changed'}")
            continue
        if answer in ("applied", "accepted"):
            inverse = _inverse(sent, result)
            if inverse is not None:
                outcome.inverses.append(inverse)
                outcome.described.append(what)
            if change.action == "insert" and result.get("cell_id"):
                what += f" (its id: {result['cell_id']})"
                outcome.answers[-1]["cell_id"] = result["cell_id"]
            if change.cell_id and change.action == "replace":
                read[change.cell_id] = change.source or ""
        outcome.lines.append(f"- {what}: {_ANSWERS.get(answer, answer)}")
    return outcome


def _audit_answers(ctx: ToolContext, answers: list[dict[str, Any]]) -> None:
    """Each change and its answer in the audit log and the cell's audit panel (the decision said only
    that the call went to the person's review)."""
    from ...engine.approval.audit import AuditLog
    from ...engine.approval.audit_records import ReviewRecord
    from ...engine.events import AuditRecorded

    typed = ReviewRecord(session_id=ctx.session_id, turn_id=ctx.turn_id, tool_use_id=ctx.tool_use_id, agent=ctx.agent,
                         tool="edit_notebook", changes=answers)
    try:
        record = AuditLog(ctx.project_path).append(typed)
    except OSError:
        record = typed.written(None)  # the cell still shows them
    ctx.emit(AuditRecorded(session_id=ctx.session_id, turn_id=ctx.turn_id, agent=ctx.agent, record=record))


# How long `%agent undo` waits for the notebook's page to put the cells back.
UNDO_WAIT = 15.0


def _undone_words(inverse: dict[str, Any]) -> str:
    """What putting one change back did, as the person reads it."""
    kind, cell = inverse.get("kind"), inverse.get("cell_id") or inverse.get("id")
    if kind == "replace":
        return f"cell {cell}: its source" + (" and outputs" if "outputs" in inverse else "") + " as before"
    if kind == "delete":
        return f"the cell the agent added ({cell}) removed"
    if kind == "insert":
        return f"cell {cell} put back at position {int(inverse.get('index') or 0) + 1}"
    return f"cell {cell} moved back to position {int(inverse.get('to_index') or 0) + 1}"


async def undo_cell_edits(shell: Any, store: CheckpointStore, edits: CellEdits) -> str:
    """Put ``edits`` back (newest first) through the page of the notebook they were made in, and say
    what the page did: each cell restored (its id, source and outputs as they were), or why not.

    After a kernel restart no page has said hello to this kernel yet: connecting asks them to.
    """
    channel = channel_for(shell)
    inverses = list(reversed(edits.inverse))
    changes = [{"change": f"u{number}", **inverse} for number, inverse in enumerate(inverses, 1)]
    where = edits.notebook or "the notebook"
    try:
        reply = await channel.request("propose", changes=changes, review=False, wait=UNDO_WAIT,
                                      to=lambda page: _shows(page, edits.notebook))
    except NotebookUnavailable as error:
        return f"The notebook cells were not restored: {where} did not answer ({error}). Open it and run %agent undo again."
    except PageError as error:
        return f"The notebook cells were not restored: the page of {where} could not ({error})."
    edits.undone = True
    _save(store, edits)
    answers = {result.get("change"): result for result in reply.get("results", [])}
    done: list[str] = []
    kept: list[str] = []
    for change, inverse in zip(changes, inverses):
        result = answers.get(change["change"], {})
        (done if result.get("answer") == "applied" else kept).append(_undone_words(inverse))
    said = f"Restored {len(done)} cell{'s' if len(done) != 1 else ''} in {where}: {'; '.join(done)}." if done else ""
    if kept:
        said += (" " if said else "") + (f"Not restored (changed since the turn, so left as they are): {'; '.join(kept)}.")
    return said


def _shows(page: Page, notebook: str) -> bool:
    return not notebook or page.path == notebook
