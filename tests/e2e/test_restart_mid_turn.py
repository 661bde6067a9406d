"""A kernel restart during an agent turn, in a real JupyterLab and Notebook 7 with Debian's Chromium.

The turn waits on a card; the person restarts the kernel. The page's extension turns the live
view into what it had shown plus the notice that the turn was cut off: no dead buttons stay.
Saved and reopened, the cell reads the same, never "Error displaying widget: model not found".
A notebook saved while the turn was still live, opened after its kernel is gone, shows the
kernel's fallback notice instead of the missing widget (a view whose model is alive is kept:
test_browser's reload test is that control).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_browser import CHROMIUM, _Browser, _notebook, _run_cells, lab, notebook7  # noqa: F401
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.polling import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (apt-get install chromium)"),
]

WIDGET = "application/vnd.jupyter.widget-view+json"
CUT_OFF = "This agent turn was cut off"
ARTIFACTS = Path("/tmp/codingcode-artifacts")


def _agent_outputs(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text())["cells"][1].get("outputs", [])
    except (ValueError, KeyError, IndexError):
        return []


def _html(output: dict) -> str:
    value = output.get("data", {}).get("text/html", "")
    return "".join(value) if isinstance(value, list) else value


def _restart_from_the_menu(page) -> None:
    """Kernel > Restart Kernel…, then confirm, as a person does."""
    page.locator(".jp-Notebook").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("0")
    page.keyboard.press("0")
    page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept").click()


@pytest.mark.parametrize("app", ["lab", "notebook7"])
def test_a_restart_mid_turn_leaves_a_record_not_dead_buttons(app, request, tmp_path):
    from playwright.sync_api import expect

    lab = request.getfixturevalue(app)
    where = "lab/tree" if app == "lab" else "notebooks"

    project: Path = lab["project"]
    lab["api"].add(
        Reply([text("Writing the file now."), tool_use("write_file", {"path": "never.txt", "content": "no\n"})]),
        Reply([text("This answer never comes.")]),
    )
    notebook = project / "cut.ipynb"
    notebook.write_text(json.dumps(_notebook(["%load_ext codingcode_jupyter", "%%agent\nwrite a file"])))
    with _Browser(tmp_path, f"restart-mid-turn-{app}") as page:
        page.goto(f"{lab['base']}/{where}/cut.ipynb?token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_function("document.body.dataset.codingcodeNotebook === '1'", timeout=60_000)
        _run_cells(page, lab, 2)
        allow = page.get_by_role("button", name="Allow", exact=True)
        expect(allow).to_be_visible(timeout=60_000)

        # Saved while live: the file holds the widget view (and the kernel's fallback beside it).
        page.keyboard.press("Control+s")
        wait_until(lambda: any(WIDGET in o.get("data", {}) for o in _agent_outputs(notebook)), 30,
                   "the notebook saved with the live view", interval=0.3)
        shutil.copy(notebook, project / "saved-live.ipynb")

        _restart_from_the_menu(page)
        agent_cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
        expect(agent_cell.get_by_text(CUT_OFF)).to_be_visible(timeout=30_000)
        # What the turn had shown stays readable; nothing in it can be clicked any more.
        expect(agent_cell.get_by_text("Writing the file now.")).to_be_visible()
        expect(agent_cell.locator(".cc-cut-off-snapshot")).to_have_count(1)
        expect(agent_cell.locator(".jp-OutputArea button")).to_have_count(0)
        expect(allow).to_have_count(0)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"restart-mid-turn-{app}.png"), full_page=True)

        page.keyboard.press("Control+s")
        wait_until(lambda: any(CUT_OFF in _html(o) for o in _agent_outputs(notebook))
                   and not any(WIDGET in o.get("data", {}) for o in _agent_outputs(notebook)), 30,
                   "the notebook saved with the cut-off record", interval=0.3)
        page.reload()
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        agent_cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
        expect(agent_cell.get_by_text(CUT_OFF)).to_be_visible(timeout=30_000)
        expect(agent_cell.get_by_text("Writing the file now.")).to_be_visible()
        expect(page.get_by_text("Error displaying widget")).to_have_count(0)

        # The copy saved while live, opened now that its widgets' kernel is gone: the fallback shows.
        page.goto(f"{lab['base']}/{where}/saved-live.ipynb?token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        agent_cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
        expect(agent_cell.get_by_text(CUT_OFF)).to_be_visible(timeout=60_000)
        expect(page.get_by_text("model not found")).to_have_count(0, timeout=10_000)
        expect(agent_cell.locator(".jp-OutputArea button")).to_have_count(0)
    assert not (project / "never.txt").exists()
