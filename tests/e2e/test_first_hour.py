"""A newcomer's first hour, second pass (issue 46), in a real browser: the README's first command
(scripts/lab.sh) as a person runs it, and the cards and panels as they look.

lab.sh is run for real in this checkout (its install is the one scripts/test.sh already did, so it
changes nothing): the JupyterLab it opens is rooted at the repository, Notebook 7 is served beside
it, and the quickstart is open; the test tools the README names are installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.test_browser import CHROMIUM, _Browser, _free_port
from tests.polling import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (apt-get install chromium)"),
]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def lab_sh(tmp_path):
    """scripts/lab.sh, started as the README says, with a port and token a test can reach."""
    port, token = _free_port(), "first-hour"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "ANTHROPIC_API_KEY": "", "CODINGCODE_PREWARM": "0"}
    log = open(tmp_path / "lab.log", "w")
    process = subprocess.Popen(
        ["bash", "scripts/lab.sh", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", "--LabApp.news_url=", "--LabApp.collaborative=False"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError("lab.sh ended:\n" + (tmp_path / "lab.log").read_text()[-3000:])
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
            return True
        except OSError:
            return False

    try:
        wait_until(up, 600, "lab.sh's JupyterLab to answer", interval=0.5)  # it installs first
        yield {"base": base, "token": token}
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def _get(server: dict, path: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(f"{server['base']}{path}?token={server['token']}", timeout=10) as answer:
        return answer.status, answer.read()


def test_lab_sh_roots_lab_at_the_repository_serves_notebook_7_and_installs_the_test_tools(lab_sh, tmp_path):
    from playwright.sync_api import expect

    root = {item["name"] for item in json.loads(_get(lab_sh, "/api/contents")[1])["content"]}
    # The whole project can be browsed, not only notebooks/.
    assert {"README.md", "codingcode_jupyter", "notebooks", "scripts"} <= root, root
    assert _get(lab_sh, "/api/contents/notebooks/quickstart.ipynb")[0] == 200
    # The README's quick test path works after the first command alone.
    done = subprocess.run([str(REPO / ".venv" / "bin" / "pytest"), "--version"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with _Browser(tmp_path, "lab-sh") as page:
        page.goto(f"{lab_sh['base']}/lab/tree/notebooks/quickstart.ipynb?token={lab_sh['token']}")
        expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible(timeout=60_000)
        expect(page.locator(".jp-RenderedMarkdown h1").first).to_contain_text("codingcode-jupyter: quickstart", timeout=30_000)
        # The file browser's root is the repository: from the quickstart's folder, one click up shows it all.
        page.locator(".jp-BreadCrumbs-home").first.click()
        expect(page.locator(".jp-DirListing-content").get_by_text("README.md", exact=True)).to_be_visible(timeout=30_000)
        # Notebook 7 is installed and served beside Lab, on the same files.
        page.goto(f"{lab_sh['base']}/tree?token={lab_sh['token']}")
        expect(page.locator(".jp-DirListing-content").get_by_text("notebooks", exact=True)).to_be_visible(timeout=60_000)


# -- 3: a conflict on Accept shows on the cell; the diff follows the person's typing -----------------------

from tests.e2e.test_browser import _run_cells, dark_lab, lab, notebook7  # noqa: E402,F401 (fixtures)
from tests.e2e.test_notebook_edits import _notebook, _tool_results, _type_unsaved  # noqa: E402
from tests.fakes.anthropic_server import Reply, text, tool_use  # noqa: E402

ARTIFACTS = Path("/tmp/codingcode-artifacts")


def _conflict_flow(server: dict, tmp_path: Path, name: str, url: str) -> None:
    from playwright.sync_api import expect

    project: Path = server["project"]
    (project / "conflict.ipynb").write_text(json.dumps(_notebook([
        ("c-load", "%load_ext codingcode_jupyter"), ("c-data", "x = 1"), ("c-agent", "%%agent\nchange the data cell")])))
    server["api"].add(
        Reply([tool_use("read_notebook", {})]),
        Reply([tool_use("edit_notebook", {"changes": [{"action": "replace", "cell_id": "c-data", "source": "x = 2"}]})]),
        Reply([text("Noted.")]),
    )
    with _Browser(tmp_path, name) as page:
        page.goto(url)
        page.wait_for_function("document.body.dataset.codingcodeNotebook === '1'", timeout=60_000)
        _run_cells(page, server, 3)
        bar = page.locator(".cc-review-bar.cc-review-replace")
        expect(bar).to_have_count(1, timeout=60_000)
        accept = bar.get_by_role("button", name="Accept", exact=True)
        expect(accept).to_be_enabled()
        expect(bar.locator(".cc-review-conflict-note")).to_be_hidden()
        # The person types in the cell under review: the diff follows, the conflict is said, Accept is off.
        _type_unsaved(page, 1, "  # mine")
        expect(bar.locator(".cc-diff-del")).to_contain_text("x = 1  # mine", timeout=10_000)
        expect(bar.locator(".cc-review-conflict-note")).to_be_visible()
        expect(accept).to_be_disabled()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"conflict-{name}.png"), full_page=True)
        # Accept all anyway: nothing is overwritten, and the cell says why.
        page.locator(".cc-review-banner").get_by_role("button", name="Accept all").click()
        settled = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".cc-review-conflict-settled")
        expect(settled).to_be_visible(timeout=10_000)
        expect(settled).to_contain_text("Not applied")
        expect(page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".cm-content")).to_contain_text("x = 1  # mine")
        expect(page.locator(".jp-Notebook .jp-Cell", has_text="%%agent").locator(".jp-OutputArea")).to_contain_text(
            "conflict", timeout=60_000)
        settled.get_by_role("button", name="OK").click()
        expect(settled).to_have_count(0)
    assert any("not done, the cell changed since the agent read it" in r for r in _tool_results(server["api"]))


def test_a_conflict_on_accept_shows_on_the_cell_in_jupyterlab(lab, tmp_path):
    _conflict_flow(lab, tmp_path, "lab", f"{lab['base']}/lab/tree/conflict.ipynb?token={lab['token']}")


def test_a_conflict_on_accept_shows_on_the_cell_in_the_dark_theme(dark_lab, tmp_path):
    _conflict_flow(dark_lab, tmp_path, "dark", f"{dark_lab['base']}/lab/tree/conflict.ipynb?token={dark_lab['token']}")


def test_a_conflict_on_accept_shows_on_the_cell_in_notebook7(notebook7, tmp_path):
    _conflict_flow(notebook7, tmp_path, "nb7", f"{notebook7['base']}/notebooks/conflict.ipynb?token={notebook7['token']}")


# -- 5: undo puts a deleted cell back with its id and outputs --------------------------------------------


def test_undo_puts_a_deleted_cell_back_with_its_id_and_outputs(lab, tmp_path):
    from playwright.sync_api import expect

    project: Path = lab["project"]
    (project / "undo.ipynb").write_text(json.dumps(_notebook([
        ("c-load", "%load_ext codingcode_jupyter"), ("c-data", "x = 6 * 7\nx"),
        ("c-agent", "%%agent --mode bypass\ndelete the data cell"), ("c-undo", "%agent undo --yes")])))
    lab["api"].add(
        Reply([tool_use("read_notebook", {})]),
        Reply([tool_use("edit_notebook", {"changes": [{"action": "delete", "cell_id": "c-data"}]})]),
        Reply([text("Deleted.")]),
    )
    with _Browser(tmp_path, "undo") as page:
        page.goto(f"{lab['base']}/lab/tree/undo.ipynb?token={lab['token']}")
        page.wait_for_function("document.body.dataset.codingcodeNotebook === '1'", timeout=60_000)
        _run_cells(page, lab, 3)
        cells = page.locator(".jp-Notebook .jp-Cell")
        expect(cells).to_have_count(3, timeout=60_000)  # the data cell is gone
        expect(cells.nth(1).locator(".jp-OutputArea")).to_contain_text("Deleted.", timeout=60_000)
        cells.nth(2).click()
        page.keyboard.press("Shift+Enter")
        expect(cells).to_have_count(4, timeout=60_000)
        expect(cells.nth(3).locator(".jp-OutputArea")).to_contain_text("Restored 1 cell", timeout=30_000)
        expect(cells.nth(1).locator(".jp-OutputArea")).to_contain_text("42")  # its output, as it was
        before = (project / "undo.ipynb").stat().st_mtime_ns
        page.keyboard.press("Control+s")
        wait_until(lambda: (project / "undo.ipynb").stat().st_mtime_ns != before, 30, "the notebook saved", interval=0.3)
    saved = json.loads((project / "undo.ipynb").read_text())
    data = saved["cells"][1]
    assert data["id"] == "c-data" and "".join(data["source"]) == "x = 6 * 7\nx", data
    assert any("42" in "".join(o.get("data", {}).get("text/plain", "")) for o in data["outputs"]), json.dumps(data)


# -- 12: a long diff line scrolls inside the card; the side panel stays narrow ----------------------------


def _card_fits(server: dict, tmp_path: Path, name: str, url: str) -> None:
    from playwright.sync_api import expect

    project: Path = server["project"]
    long_line = "VALUE = '" + "x" * 600 + "'  # the end of a very long line"
    (project / "wide.ipynb").write_text(json.dumps(_notebook([
        ("c-load", "%load_ext codingcode_jupyter"), ("c-agent", "%%agent\nwrite wide.py")])))
    server["api"].add(
        Reply([tool_use("todo_write", {"plan": [{"step": "Write wide.py", "status": "in_progress"}]})]),
        Reply([tool_use("write_file", {"path": "wide.py", "content": long_line + "\n"})]),
        Reply([text("Written.")]),
    )
    with _Browser(tmp_path, name) as page:
        page.goto(url)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        _run_cells(page, server, 2)
        diff = page.locator(".codingcode-approval .cc-diff").first
        expect(diff).to_be_visible(timeout=60_000)
        sizes = diff.evaluate("""(box) => {
            const area = box.closest('.jp-OutputArea-output').getBoundingClientRect();
            const own = box.getBoundingClientRect();
            const row = box.closest('.codingcode-cell').getBoundingClientRect();
            const side = box.closest('.codingcode-cell').querySelector('.codingcode-todo').closest('.widget-vbox')
                .getBoundingClientRect();
            return {right: own.right, areaRight: area.right, scroll: box.scrollWidth, client: box.clientWidth,
                    side: side.width, row: row.width};
        }""")
        # The diff ends inside the output area and scrolls sideways to show the rest of the line.
        assert sizes["right"] <= sizes["areaRight"] + 1, sizes
        assert sizes["scroll"] > sizes["client"] + 100, sizes
        diff.evaluate("(box) => { box.scrollLeft = box.scrollWidth; }")
        expect(diff.get_by_text("the end of a very long line", exact=False)).to_be_in_viewport()
        assert sizes["side"] <= 0.2 * sizes["row"], sizes  # the todo and audit beside it, not a quarter
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"wide-card-{name}.png"), full_page=True)
        page.get_by_role("button", name="Allow", exact=True).click()
        expect(page.locator(".codingcode-record")).to_be_visible(timeout=60_000)


def test_a_long_diff_line_scrolls_in_the_card_in_jupyterlab(lab, tmp_path):
    _card_fits(lab, tmp_path, "lab", f"{lab['base']}/lab/tree/wide.ipynb?token={lab['token']}")


def test_a_long_diff_line_scrolls_in_the_card_in_the_dark_theme(dark_lab, tmp_path):
    _card_fits(dark_lab, tmp_path, "dark", f"{dark_lab['base']}/lab/tree/wide.ipynb?token={dark_lab['token']}")
