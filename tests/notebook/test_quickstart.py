"""notebooks/quickstart.ipynb runs top to bottom with the offline demo model (no API key)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.kernel


def _outputs_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append(output["text"])
        for mime in ("text/plain", "text/markdown", "text/html"):
            if mime in output.get("data", {}):
                parts.append(output["data"][mime])
    return "\n".join(parts)


def test_quickstart_runs_with_the_demo_model(tmp_path, monkeypatch):
    work = tmp_path / "notebooks"
    work.mkdir()
    shutil.copy(ROOT / "notebooks" / "quickstart.ipynb", work / "quickstart.ipynb")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    # The kernel is this venv's Python, whatever kernelspecs the machine has.
    spec_dir = tmp_path / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python",
    }))
    notebook = nbformat.read(work / "quickstart.ipynb", as_version=4)
    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(work)}},
        kernel_manager_kwargs={"kernel_spec_manager": KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])},
    )
    client.execute()  # raises CellExecutionError on any failing cell

    texts = [_outputs_text(cell) for cell in notebook.cells if cell.cell_type == "code"]
    everything = "\n".join(texts)
    assert "ANTHROPIC_API_KEY" in everything  # the one-line notice naming the key
    # Nobody can click under nbclient: the edit was asked, then denied after the timeout, and the
    # audit trail shows both the read-only calls and the denial.
    project = work / "demo_project"
    assert (project / "cli.py").exists()
    audit = [json.loads(line) for line in (project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    decisions = {(r["tool"], r["decision"]) for r in audit if "decision" in r}
    assert ("search_files", "allow") in decisions and ("write_file", "deny") in decisions
    assert not (project / "codingcode_demo.py").exists()
    # Nobody decided: the audit and the saved notebook say so, and do not blame the person.
    write = next(r for r in audit if r.get("tool") == "write_file" and r.get("event") == "decision")
    assert write["by"] == "timeout" and "declined" not in write["reason"]
    agent_cell = next(cell for cell in notebook.cells if cell.source.startswith("%%agent"))
    assert all("application/vnd.jupyter.widget-view+json" not in o.get("data", {}) for o in agent_cell.outputs)
    saved = _outputs_text(agent_cell)
    assert "nobody answered in time" in saved and "Nobody was there to answer" in saved and "denied by you" not in saved
    assert "codingcode_demo.py" in saved and "+import ast" in saved  # the diff that was not applied
    assert "word_count" in everything and "custom" in everything
    assert os.environ.get("ANTHROPIC_API_KEY") is None
