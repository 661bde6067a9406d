"""The agent's cell edits with real-time collaboration (jupyter-collaboration), two pages on one notebook.

jupyter-collaboration changes how every notebook is opened (a shared document over a websocket),
so it lives in a venv of its own (`.venv-collab`, made by scripts/test.sh with the same JupyterLab
as `.venv`) and the other browser tests keep their plain Lab. Two pages show one notebook; the
agent proposes to change a cell; while the review waits, the person on the other page types in
another cell. The edit reaches that page only when it is accepted, and at once; nobody's typing
is lost, on either page or in the saved file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.test_browser import CHROMIUM, _launch, _run_cells, _start_server, _stop_server
from tests.e2e.test_notebook_edits import _notebook, _tool_results
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
COLLAB_PYTHON = Path(os.environ.get("CODINGCODE_COLLAB_PYTHON", ROOT / ".venv-collab" / "bin" / "python"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (apt-get install chromium)"),
    pytest.mark.skipif(not COLLAB_PYTHON.exists(), reason=f"no venv with jupyter-collaboration at {COLLAB_PYTHON} "
                       "(scripts/test.sh makes it)"),
]


@pytest.fixture
def collab_lab(tmp_path):
    server = _start_server(tmp_path, "jupyterlab", python=str(COLLAB_PYTHON))
    try:
        yield server
    finally:
        _stop_server(server)


def _cell(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def test_a_second_page_sees_the_accepted_edit_and_nobody_loses_typing(collab_lab, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    project: Path = collab_lab["project"]
    notebook = project / "shared.ipynb"
    notebook.write_text(json.dumps(_notebook([
        ("c-load", "%load_ext codingcode_jupyter"),
        ("c-data", "x = 1"),
        ("c-notes", "# notes"),
        ("c-agent", "%%agent\nchange the data cell"),
    ])))
    collab_lab["api"].add(
        Reply([text("Reading."), tool_use("read_notebook", {})]),
        Reply([text("Changing it."), tool_use("edit_notebook", {"changes": [
            {"action": "replace", "cell_id": "c-data", "source": "x = 2"},
        ]})]),
        Reply([text("Changed.")]),
    )
    url = f"{collab_lab['base']}/lab/tree/shared.ipynb?token={collab_lab['token']}"
    with sync_playwright() as pw:
        browser = _launch(pw)
        try:
            pages = [browser.new_context().new_page() for _ in range(2)]
            for page in pages:
                page.set_viewport_size({"width": 1400, "height": 1000})
                page.goto(url)
                page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
                page.wait_for_function("document.body.dataset.codingcodeNotebook === '1'", timeout=60_000)
            _run_cells(pages[0], collab_lab, 4)

            bar = ".cc-review-bar.cc-review-replace"
            wait_until(lambda: any(page.locator(bar).count() for page in pages), 90, "the review bar", interval=0.3)
            reviewer = next(page for page in pages if page.locator(bar).count())
            other = pages[1] if reviewer is pages[0] else pages[0]
            # Not accepted yet: nobody's copy has changed.
            for page in pages:
                expect(_cell(page, 1).locator(".cm-content")).to_have_text("x = 1")

            # The person on the other page types in the notes cell while the review waits.
            _cell(other, 2).locator(".cm-content").click()
            other.keyboard.press("Control+End")
            other.keyboard.type("\nprint('typed meanwhile')")
            expect(_cell(reviewer, 2).locator(".cm-content")).to_contain_text("typed meanwhile", timeout=15_000)

            reviewer.locator(bar).get_by_role("button", name="Accept").click()
            for page in pages:
                expect(_cell(page, 1).locator(".cm-content")).to_have_text("x = 2", timeout=15_000)
                expect(_cell(page, 2).locator(".cm-content")).to_contain_text("typed meanwhile")
                expect(_cell(page, 2).locator(".cm-content")).to_contain_text("# notes")
            expect(_cell(reviewer, 3).get_by_text("Changed.")).to_be_visible(timeout=60_000)
            edit_result = next(r for r in _tool_results(collab_lab["api"]) if r.startswith("Notebook changes"))
            assert "replace cell c-data: accepted by the person" in edit_result

            other.keyboard.press("Escape")
            other.keyboard.press("Control+s")
            wait_until(lambda: "typed meanwhile" in notebook.read_text() and "x = 2" in notebook.read_text(), 30,
                       "the notebook saved", interval=0.3)
        finally:
            browser.close()
    saved = json.loads(notebook.read_text())
    sources = {cell.get("id"): "".join(cell["source"]) for cell in saved["cells"]}
    assert sources["c-data"] == "x = 2"
    assert sources["c-notes"] == "# notes\nprint('typed meanwhile')"
