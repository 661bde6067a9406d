"""read_notebook: the cells of the notebook this kernel belongs to, markdown and code, run or not.

A kernel is not told which notebook it serves; the frontends leave a trace of it:

- jupyter-server (JupyterLab, Notebook 7, Voilà) starts the kernel with ``JPY_SESSION_NAME``,
  the session's path (absolute, or relative to the server's root, which is then an
  ancestor of the kernel's working directory); ipykernel copies it to ``__session__``;
- VS Code puts the file's path in ``__vsc_ipynb_file__``;
- Colab keeps no file beside the kernel, but its frontend answers a ``get_ipynb`` request
  with the live notebook.

The file is read as saved (with nbformat when importable, else as the JSON it is), so its
age is told along with how many cells ran since; the cell running the agent is found by the
cell id the frontend sent with the execute request, else by its source.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ...engine.tools.base import ToolError
from .outputs import output_history

__all__ = ["ReadNotebookArgs", "find_notebook", "read_notebook"]

MAX_TOTAL_CHARS = 40_000


class ReadNotebookArgs(BaseModel):
    """Parameters of read_notebook."""

    start: int = Field(default=1, ge=1, description="The first cell to show, counting from 1 (default 1).")
    limit: int = Field(default=40, ge=1, le=200, description="Most cells to show (default 40).")
    max_cell_chars: int = Field(default=3000, ge=100, le=20_000, description="Most characters of each cell's source.")


@dataclass
class NotebookSource:
    """Where the notebook came from: a saved file (path, mtime) or a frontend's live copy."""

    how: str
    path: Path | None = None
    content: dict[str, Any] | None = None


def _resolve(name: str) -> Path | None:
    raw = Path(name).expanduser()
    if raw.is_absolute():
        return raw if raw.is_file() else None
    cwd = Path.cwd()
    # Relative to the server's root, an ancestor of the kernel's working directory.
    for base in (cwd, *cwd.parents):
        candidate = base / raw
        if candidate.is_file():
            return candidate
    candidate = cwd / raw.name
    return candidate if candidate.is_file() else None


def _colab_notebook() -> dict[str, Any] | None:
    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import _message  # type: ignore[import-not-found, import-untyped, unused-ignore]  # untyped beside google-auth

        reply = _message.blocking_request("get_ipynb", request="", timeout_sec=10)
    except Exception:
        return None
    notebook = reply.get("ipynb") if isinstance(reply, dict) else None
    return notebook if isinstance(notebook, dict) else None


def find_notebook(user_ns: Any) -> NotebookSource:
    """The notebook this kernel serves, or ToolError saying why it cannot be known."""
    vscode = user_ns.get("__vsc_ipynb_file__") if hasattr(user_ns, "get") else None
    if isinstance(vscode, str) and vscode:
        path = _resolve(vscode)
        if path is not None:
            return NotebookSource("VS Code's __vsc_ipynb_file__", path)
        raise ToolError(f"VS Code says this kernel's notebook is {vscode}, but no such file exists (not saved yet?).")
    session = os.environ.get("JPY_SESSION_NAME") or (user_ns.get("__session__") if hasattr(user_ns, "get") else None)
    if isinstance(session, str) and session:
        path = _resolve(session)
        if path is not None and path.suffix == ".ipynb":
            return NotebookSource("the Jupyter server's session (JPY_SESSION_NAME)", path)
        what = "is not a notebook file (a console or another document?)" if path is not None else "was not found on disk"
        raise ToolError(f"The Jupyter server named this kernel's session {session!r}, which {what}.")
    colab = _colab_notebook()
    if colab is not None:
        return NotebookSource("Colab's frontend (the live notebook)", content=colab)
    raise ToolError(
        "No notebook is known for this kernel: no frontend said which file it serves (JupyterLab and Notebook "
        "set JPY_SESSION_NAME, VS Code sets __vsc_ipynb_file__). This looks like a terminal IPython or a console; "
        "notebook_history shows the cells run here."
    )


def _load(path: Path) -> dict[str, Any]:
    try:
        try:
            import nbformat
        except ImportError:
            loaded = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(loaded, dict):
                raise ValueError("the file is not a JSON object") from None
            return loaded
        return dict(nbformat.read(str(path), as_version=4))
    except Exception as error:
        raise ToolError(f"{path} could not be read as a notebook: {type(error).__name__}: {error}") from None


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source or "")


def _saved_outputs(cell: dict[str, Any]) -> str:
    kinds: list[str] = []
    for output in cell.get("outputs") or []:
        kind = output.get("output_type", "")
        if kind == "stream":
            found = [output.get("name", "stream")]
        elif kind == "error":
            found = [f"error {output.get('ename', '')}".strip()]
        else:
            data = output.get("data") or {}
            found = [m for m in data if m.startswith("image/")] or (
                ["html"] if "text/html" in data else ["text"] if data else []
            )
        kinds += [k for k in found if k not in kinds]
    return ", ".join(kinds)


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def read_notebook(shell: Any, user_ns: Any, args: ReadNotebookArgs, live: dict[str, Any] | None = None) -> str:
    """The tool: the notebook's cells in order, paged, with where the agent is running.

    ``live`` is the page's own copy (see :mod:`..live`), read in preference to the saved file.
    """
    if live is not None:
        dirty = " It has unsaved changes, included here." if live.get("dirty") else ""
        found = NotebookSource(
            f"the open notebook page, live{(' (' + str(live['path']) + ')') if live.get('path') else ''}.{dirty}",
            content=live,
        )
    else:
        found = find_notebook(user_ns)
    notebook = found.content if found.content is not None else _load(found.path)  # type: ignore[arg-type]
    cells = [c for c in notebook.get("cells") or [] if isinstance(c, dict)]
    history = output_history(shell)
    running = history.current if history is not None and history.current is not None else None
    records = history.cells() if history is not None else []
    # The newest run of each cell id, so a stale saved copy still says what ran since.
    runs = {r.cell_id: r for r in records if r.cell_id and r.execution_count is not None}

    if found.path is not None:
        saved = found.path.stat().st_mtime
        since = sum(1 for r in records if not r.agent and r.finished and r.finished > saved)
        fresh = f"{since} cell(s) ran since it was saved; their new outputs are not in it" if since else "no cell ran since"
        header = f"Notebook {found.path} (found from {found.how}; saved {_age(time.time() - saved)} ago, {fresh})."
    else:
        header = f"Notebook from {found.how}"
        header += "" if header.endswith(".") else "."
    running_index = None
    if running is not None:
        for index, cell in enumerate(cells):
            if running.cell_id and cell.get("id") == running.cell_id:
                running_index = index
                break
        else:
            for index, cell in enumerate(cells):
                if _source(cell).strip() == running.source.strip():
                    running_index = index
    lines = [header + f" {len(cells)} cells."]
    if running is not None and running_index is None:
        lines.append("(The cell running the agent is not in the saved copy: it was added or edited since the last save.)")
    first = args.start - 1
    if first >= len(cells) and cells:
        raise ToolError(f"The notebook has {len(cells)} cells; start={args.start} is past its end.")
    used = 0
    shown_to = first
    for index in range(first, min(len(cells), first + args.limit)):
        cell = cells[index]
        kind = cell.get("cell_type", "code")
        source = _source(cell).rstrip()
        if len(source) > args.max_cell_chars:
            source = source[: args.max_cell_chars] + f"\n[... {len(source) - args.max_cell_chars} more characters]"
        facts = [kind]
        if kind == "code":
            count = cell.get("execution_count")
            state = "now" if live is not None else "when saved"
            facts.append(f"In [{count}] {state}" if count else f"not run {state}")
            cell_id = cell.get("id")
            run = runs.get(cell_id) if isinstance(cell_id, str) and cell_id else None
            if run is not None and run.execution_count != count:
                facts.append(f"last run here as In [{run.execution_count}]")
            outputs = _saved_outputs(cell)
            if outputs:
                facts.append(f"{'outputs' if live is not None else 'saved outputs'}: {outputs}")
        if cell.get("id"):
            facts.append(f"id {cell['id']}")
        if index == running_index:
            facts.append("THIS CELL IS RUNNING THE AGENT")
        elif live is not None and cell.get("id") and cell.get("id") == live.get("active_cell_id"):
            facts.append("the person's active cell")
        block = f"--- cell {index + 1} ({'; '.join(facts)})\n{source}" if source else f"--- cell {index + 1} ({'; '.join(facts)}) (empty)"
        if used + len(block) > MAX_TOTAL_CHARS and index > first:
            break
        lines.append(block)
        used += len(block)
        shown_to = index + 1
    if shown_to < len(cells):
        lines.append(f"[cells {shown_to + 1}–{len(cells)} not shown: call read_notebook with start={shown_to + 1}]")
    return "\n".join(lines)
