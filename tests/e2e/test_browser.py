"""End to end in a real browser: JupyterLab + Debian's Chromium, driven by Playwright.

A person's path through the product: open a notebook, run a `%%agent` cell, see the
approval card, click Allow, see the file change and the todo list.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use

CHROMIUM = "/usr/bin/chromium"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (apt-get install chromium)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(cells: list[str]) -> dict:
    return {
        "cells": [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None} for src in cells],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _launch(pw):
    """Debian's Chromium, headless, with nothing reaching beyond loopback."""
    return pw.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", "--disable-quic"],
    )


def _run_both_cells(page) -> None:
    """Run `%load_ext` and the `%%agent` cell, as a person would with Shift+Enter."""
    from playwright.sync_api import expect

    # The kernel must be connected and idle before a cell is run, or the run is lost.
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    first = page.locator(".jp-Notebook .jp-Cell").first
    for _ in range(3):
        first.click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(first.locator(".jp-InputPrompt")).to_contain_text("1", timeout=20_000)
            break
        except AssertionError:
            continue  # the kernel was not ready after all: run it again
    page.keyboard.press("Shift+Enter")


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on loopback, its root a fresh project, its kernels pointed at a fake API."""
    project = tmp_path / "project"
    project.mkdir()
    api = FakeAnthropic().start()
    port = _free_port()
    token = "e2e-token"
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
        "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"),
    }
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}", "--ServerApp.allow_root=True", f"--ServerApp.root_dir={project}",
            "--LabApp.news_url=", "--LabApp.collaborative=False", "--ServerApp.disable_check_xsrf=True",
        ],
        cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-3000:])
        yield {"base": base, "token": token, "project": project, "api": api}
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        api.stop()
        log.close()


def test_agent_cell_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    project: Path = lab["project"]
    lab["api"].add(
        Reply([text("I'll plan first."), tool_use("todo_write", {"plan": [{"step": "Write the greeting file", "status": "in_progress"}]})]),
        Reply([text("Now the file."), tool_use("write_file", {"path": "greeting.txt", "content": "hello from the agent\n"})]),
        Reply([text("All done: greeting.txt is written.")]),
    )
    (project / "e2e.ipynb").write_text(json.dumps(_notebook(["%load_ext codingcode_jupyter", "%%agent\nwrite a greeting file"])))

    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{lab['base']}/lab/tree/e2e.ipynb?token={lab['token']}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            _run_both_cells(page)

            allow = page.get_by_role("button", name="Allow", exact=True)
            expect(allow).to_be_visible(timeout=60_000)
            assert not (project / "greeting.txt").exists()  # nothing changes before the click
            expect(page.get_by_text("greeting.txt").first).to_be_visible()
            allow.click()

            expect(page.get_by_text("All done: greeting.txt is written.")).to_be_visible(timeout=30_000)
            assert (project / "greeting.txt").read_text() == "hello from the agent\n"
            # the todo widget beside the output (the tool line's collapsed input holds the same words, hidden)
            expect(page.locator("text=Write the greeting file >> visible=true").first).to_be_visible()
            # the card collapsed to its decision
            expect(page.locator("text=Allowed >> visible=true").first).to_be_visible()
            expect(allow).to_have_count(0)
            page.screenshot(path=str(tmp_path / "e2e.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            shutil.copy(tmp_path / "failure.png", "/tmp/codingcode-e2e-failure.png")
            raise
        finally:
            browser.close()
    audit = [json.loads(line) for line in (project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    assert any(r.get("tool") == "write_file" and r.get("decision") == "allow" for r in audit)


def test_a_pending_card_survives_a_page_reload(lab, tmp_path):
    """Reload the page while a card waits: the card comes back live and its click still counts."""
    from playwright.sync_api import expect, sync_playwright

    project: Path = lab["project"]
    lab["api"].add(
        Reply([text("Writing it."), tool_use("write_file", {"path": "after-reload.txt", "content": "still here\n"})]),
        Reply([text("Written after the reload.")]),
    )
    (project / "reload.ipynb").write_text(json.dumps(_notebook(["%load_ext codingcode_jupyter", "%%agent\nwrite a file"])))
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            url = f"{lab['base']}/lab/tree/reload.ipynb?token={lab['token']}"
            page.goto(url)
            _run_both_cells(page)
            expect(page.get_by_role("button", name="Allow", exact=True)).to_be_visible(timeout=60_000)
            page.keyboard.press("Control+s")
            time.sleep(1.5)
            page.reload()
            allow = page.get_by_role("button", name="Allow", exact=True)
            expect(allow).to_be_visible(timeout=60_000)
            assert not (project / "after-reload.txt").exists()
            allow.click()
            expect(page.get_by_text("Written after the reload.")).to_be_visible(timeout=30_000)
            assert (project / "after-reload.txt").read_text() == "still here\n"
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            shutil.copy(tmp_path / "failure.png", "/tmp/codingcode-e2e-reload-failure.png")
            raise
        finally:
            browser.close()
