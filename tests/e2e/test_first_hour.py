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
