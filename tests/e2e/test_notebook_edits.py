"""The agent edits the open notebook, in a real JupyterLab / Notebook 7 with Debian's Chromium.

A person's path: type in a cell without saving, ask the agent; it reads the live notebook
(the unsaved text included), proposes to change one cell and add another; the proposals show
on the cells with Accept / Reject; rejecting one leaves the cell as it was, accepting the
other keeps it; the agent runs a cell and reads its output; saving writes exactly that; and
`%agent undo` takes the accepted edit back. Screenshots of the review are kept under
/tmp/codingcode-artifacts/ in the light and the dark theme.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# The servers (light, dark, Notebook 7) are test_browser's fixtures.
from tests.e2e.test_browser import CHROMIUM, _Browser, _run_cells, dark_lab, lab, notebook7  # noqa: F401
from tests.fakes.anthropic_server import Reply, text, tool_use

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (apt-get install chromium)"),
]

ARTIFACTS = Path("/tmp/codingcode-artifacts")


def _notebook(cells: list[tuple[str, str]]) -> dict:
    return {
        "cells": [
            {"id": cell_id, "cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
            for cell_id, source in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


CELLS = [
    ("c-load", "%load_ext codingcode_jupyter"),
    ("c-data", "x = 1\nx * 10"),
    ("c-agent", "%%agent\nchange the data cell and add a print"),
]


def _script(api) -> None:
    api.add(
        Reply([text("Reading the notebook."), tool_use("read_notebook", {})]),
        Reply([text("Proposing two changes."), tool_use("edit_notebook", {"changes": [
            {"action": "replace", "cell_id": "c-data", "source": "x = 2\nx * 10"},
            {"action": "insert", "cell_id": "c-data", "source": "print('inserted by the agent')"},
        ]})]),
        Reply([text("Running the data cell."), tool_use("run_cells", {"cell_id": "c-data"})]),
        Reply([text("Done.")]),
    )


def _tool_results(api) -> list[str]:
    found = []
    for request in api.requests:
        for message in request.get("messages", []):
            if message.get("role") != "user" or not isinstance(message.get("content"), list):
                continue
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    parts = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
                    found.append("\n".join(p.get("text", "") for p in parts if p.get("type") == "text"))
    return found


def _type_unsaved(page, index: int, extra: str) -> None:
    """Type at the end of a cell's editor, as a person would, without saving."""
    editor = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(extra)
    page.keyboard.press("Escape")


def _review_flow(server: dict, tmp_path: Path, name: str, url: str) -> None:
    from playwright.sync_api import expect

    project: Path = server["project"]
    (project / "edits.ipynb").write_text(json.dumps(_notebook(CELLS)))
    _script(server["api"])
    ARTIFACTS.mkdir(exist_ok=True)

    with _Browser(tmp_path, name) as page:
        page.goto(url)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_function("document.body.dataset.codingcodeNotebook === '1'", timeout=60_000)
        # Unsaved typing in the data cell: the agent must read it from the page, not the file.
        _type_unsaved(page, 1, "  # typed, not saved")
        _run_cells(page, server, 3)

        bars = page.locator(".cc-review-bar")
        expect(bars).to_have_count(2, timeout=60_000)
        # What the model read was the live text.
        assert any("typed, not saved" in result for result in _tool_results(server["api"]))
        replace_bar = page.locator(".cc-review-bar.cc-review-replace")
        expect(replace_bar.locator(".cc-diff-add").first).to_contain_text("x = 2")
        expect(replace_bar.locator(".cc-diff-del").first).to_contain_text("x = 1")
        expect(page.locator(".jp-Notebook .jp-Cell.cc-proposed-insert")).to_have_count(1)
        expect(page.locator(".cc-review-banner")).to_contain_text("The agent proposes 2 cell changes")
        expect(page.locator(".cc-review-banner").get_by_role("button", name="Accept all")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / f"review-{name}.png"), full_page=True)

        replace_bar.get_by_role("button", name="Reject").click()
        page.locator(".cc-review-bar.cc-review-insert").get_by_role("button", name="Accept").click()
        expect(bars).to_have_count(0, timeout=10_000)
        expect(page.locator(".cc-review-banner")).to_have_count(0)

        # run_cells is judged as run_python: a card asks; its output lands in the cell and reaches the model.
        allow = page.get_by_role("button", name="Allow", exact=True)
        expect(allow).to_be_visible(timeout=60_000)
        allow.click()
        data_cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
        expect(data_cell.locator(".jp-OutputArea-output")).to_contain_text("10", timeout=60_000)
        expect(page.locator(".jp-Notebook .jp-Cell", has_text="%%agent").locator(".jp-OutputArea")).to_contain_text(
            "Done.", timeout=60_000
        )
        results = _tool_results(server["api"])
        edit_result = next(result for result in results if result.startswith("Notebook changes"))
        assert "replace cell c-data: rejected by the person" in edit_result
        assert "insert a new code cell after cell c-data" in edit_result and ": accepted by the person" in edit_result
        assert any("[result] 10" in result for result in results)

        page.keyboard.press("Control+s")
        page.wait_for_timeout(1500)
        saved = json.loads((project / "edits.ipynb").read_text())
        sources = ["".join(cell["source"]) for cell in saved["cells"]]
        assert sources[0] == "%load_ext codingcode_jupyter"
        assert sources[1] == "x = 1\nx * 10  # typed, not saved"  # rejected: exactly what the person had
        assert sources[2] == "print('inserted by the agent')"  # accepted, below the cell it was anchored to
        assert sources[3].startswith("%%agent")


def test_review_cell_edits_in_jupyterlab(lab, tmp_path):
    _review_flow(lab, tmp_path, "lab-light", f"{lab['base']}/lab/tree/edits.ipynb?token={lab['token']}")


def test_review_cell_edits_in_the_dark_theme(dark_lab, tmp_path):
    _review_flow(dark_lab, tmp_path, "lab-dark", f"{dark_lab['base']}/lab/tree/edits.ipynb?token={dark_lab['token']}")


def test_review_cell_edits_in_notebook7(notebook7, tmp_path):
    _review_flow(notebook7, tmp_path, "nb7", f"{notebook7['base']}/notebooks/edits.ipynb?token={notebook7['token']}")
