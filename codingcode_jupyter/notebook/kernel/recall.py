"""A cell's record: as recorded, or rebuilt from what IPython itself kept.

Cells run before the extension was loaded (or dropped from the recorder's budget) can still
be partly recovered: IPython keeps every input, ``Out[n]`` (the value, formatted again
now), and since IPython 9 each cell's stream text, result bundle and formatted exception.
What a rebuilt record lacks (display_data outputs such as inline plots: ipykernel does not
let IPython keep those) is said in its notes.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import AGENT_CELL, last_error
from .outputs import CellRecord, Output, bundle_output, output_history

__all__ = ["cell_record", "last_cell", "last_error_cell", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _inputs(shell: Any) -> list[str]:
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if history:
        return list(history)
    inputs = (getattr(shell, "user_ns", None) or {}).get("In")
    return list(inputs) if isinstance(inputs, list) else []


def rebuild(shell: Any, count: int) -> CellRecord | None:
    """Cell ``count`` from IPython's own history, or None when IPython has no such cell."""
    inputs = _inputs(shell)
    if count <= 0 or count >= len(inputs) or not (inputs[count] or "").strip():
        return None
    source = inputs[count]
    record = CellRecord(source=source, execution_count=count, agent=bool(AGENT_CELL.match(source)), started=0.0, finished=0.0)
    if record.agent:
        return record
    manager = getattr(shell, "history_manager", None)
    kept = getattr(manager, "outputs", None)
    outputs = kept.get(count, []) if isinstance(kept, dict) else []
    for item in outputs:
        kind = getattr(item, "output_type", "")
        bundle = getattr(item, "bundle", {}) or {}
        if kind in ("out_stream", "err_stream"):
            name = "stdout" if kind == "out_stream" else "stderr"
            stream = Output("stream", {"text/plain": ""}, name=name)
            stream.append_stream("".join(str(part) for part in bundle.get("stream", [])))
            record.outputs.append(stream)
        elif kind in ("execute_result", "display_data"):
            record.outputs.append(bundle_output(kind, bundle))
    values = getattr(manager, "output_hist", None) or (getattr(shell, "user_ns", None) or {}).get("Out") or {}
    if count in values and not any(o.kind == "execute_result" for o in record.outputs):
        formatter = getattr(shell, "display_formatter", None)
        try:
            data, _ = formatter.format(values[count]) if formatter is not None else ({"text/plain": repr(values[count])}, {})
        except Exception as error:
            data = {"text/plain": f"<could not be formatted again: {type(error).__name__}: {error}>"}
        record.outputs.append(bundle_output("execute_result", data))
        record.notes.append(f"Out[{count}] was formatted again now, from the value as it is today.")
    exceptions = getattr(manager, "exceptions", None)
    stored = exceptions.get(count) if isinstance(exceptions, dict) else None
    if isinstance(stored, dict):
        traceback = strip_ansi("\n".join(str(line) for line in stored.get("traceback", [])))
        text = traceback or f"{stored.get('ename')}: {stored.get('evalue')}"
        record.outputs.append(Output("error", {"text/plain": text}, name=str(stored.get("ename", ""))))
    record.notes.append(
        "This cell ran before outputs were recorded: what IPython kept is shown (stream text, the result, "
        "the error); displayed images and tables of that run are not available."
    )
    return record


def cell_record(shell: Any, count: int) -> CellRecord | None:
    """Cell ``count`` as recorded, else as IPython kept it, else None."""
    history = output_history(shell)
    record = history.get(count) if history is not None else None
    return record if record is not None else rebuild(shell, count)


def last_cell(shell: Any) -> CellRecord | None:
    """The newest finished cell of the person's (not an agent cell)."""
    history = output_history(shell)
    recorded = history.last() if history is not None else None
    inputs = _inputs(shell)
    newest = (recorded.execution_count or 0) if recorded is not None else 0
    for count in range(len(inputs) - 1, newest, -1):
        text = inputs[count] or ""
        if text.strip() and not AGENT_CELL.match(text):
            # Newer than anything recorded: a cell the recorder did not see.
            if history is None or history.get(count) is None:
                return rebuild(shell, count)
    return recorded


def last_error_cell(shell: Any) -> CellRecord | None:
    """The newest cell that failed, with its traceback."""
    history = output_history(shell)
    recorded = history.last(error=True) if history is not None else None
    error = last_error(shell)
    if recorded is not None and (error is None or error.execution_count in (None, recorded.execution_count)):
        return recorded
    if error is None:
        return recorded
    if error.execution_count is not None:
        record = cell_record(shell, error.execution_count)
        if record is not None and any(o.kind == "error" for o in record.outputs):
            return record
    record = CellRecord(source=error.cell, execution_count=error.execution_count, started=0.0, finished=0.0)
    record.outputs.append(Output("error", {"text/plain": error.traceback}, name=error.error.split(":", 1)[0]))
    return record


def cell_kinds(shell: Any, count: int) -> list[str]:
    """The kinds of cell ``count``'s outputs ('stdout', 'image/png', 'table', 'error ...'), cheaply.

    Unlike :func:`rebuild` nothing is formatted again: a cell the recorder did not see is
    described from the bundles and streams IPython kept.
    """
    history = output_history(shell)
    record = history.get(count) if history is not None else None
    if record is not None:
        return record.kinds()
    manager = getattr(shell, "history_manager", None)
    kept = getattr(manager, "outputs", None)
    record = CellRecord(source="", execution_count=count)
    for item in (kept.get(count, []) if isinstance(kept, dict) else []):
        kind = getattr(item, "output_type", "")
        if kind in ("out_stream", "err_stream"):
            record.outputs.append(Output("stream", name="stdout" if kind == "out_stream" else "stderr"))
        elif kind in ("execute_result", "display_data"):
            bundle = getattr(item, "bundle", {}) or {}
            record.outputs.append(Output(kind, {
                mime: value if mime == "text/html" and isinstance(value, str) else ""
                for mime, value in bundle.items() if isinstance(mime, str)
            }))
    exceptions = getattr(manager, "exceptions", None)
    stored = exceptions.get(count) if isinstance(exceptions, dict) else None
    if isinstance(stored, dict):
        record.outputs.append(Output("error", name=str(stored.get("ename", ""))))
    return record.kinds()
