"""End to end in a real browser: JupyterLab (and Notebook 7) + Debian's Chromium, driven by Playwright.

A person's path through the product: open a notebook, run a `%%agent` cell, see the
approval card, click Allow, see the file change and the todo list; save, restart, reload
and still read what happened; read it in the dark theme; stop a turn.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.polling import wait_until

CHROMIUM = "/usr/bin/chromium"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (apt-get install chromium)"),
]

# The contrast WCAG asks of body text.
MIN_CONTRAST = 4.5

# Computes, in the page, the contrast of each diff row's text with what is painted under it
# (its own background composited over its ancestors'), by kind of row.
CONTRAST_JS = """
(rows) => {
  function parse(c) {
    let m = c.match(/^rgba?\\(([^)]+)\\)$/);
    if (m) { const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
    m = c.match(/^color\\(srgb ([^)]+)\\)$/);
    if (m) { const p = m[1].split(/[\\s\\/]+/).filter(Boolean).map(Number); return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1]; }
    return null;
  }
  function under(el) {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let out = [255, 255, 255];
    for (const l of layers.reverse()) out = out.map((v, i) => v * (1 - l[3]) + l[i] * l[3]);
    return out;
  }
  function lum(rgb) {
    const [r, g, b] = rgb.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }
  const worst = {};
  for (const row of rows) {
    const kind = row.className.replace('cc-diff-', '');
    const bg = under(row);
    const t = parse(getComputedStyle(row).color);
    const fg = bg.map((v, i) => v * (1 - t[3]) + t[i] * t[3]);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    worst[kind] = Math.min(worst[kind] ?? 99, ratio);
  }
  return worst;
}
"""


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


def _api(server: dict, path: str, method: str = "GET") -> object:
    request = urllib.request.Request(f"{server['base']}{path}?token={server['token']}", method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=10) as answer:
        body = answer.read()
    return json.loads(body) if body else None


def _wait_kernel_idle(server: dict, timeout: float = 60) -> str:
    """The id of the page's kernel once it is idle (the server's own view, whatever the frontend shows)."""
    def idle() -> str | None:
        sessions = _api(server, "/api/sessions")
        if sessions and sessions[0]["kernel"]["execution_state"] == "idle":
            return sessions[0]["kernel"]["id"]
        return None

    return wait_until(idle, timeout, "the notebook's kernel to be idle", interval=0.3)


def _run_cells(page, server: dict, count: int) -> None:
    """Run the first ``count`` cells in order, as a person would with Shift+Enter."""
    from playwright.sync_api import expect

    _wait_kernel_idle(server)
    first = page.locator(".jp-Notebook .jp-Cell").first
    for _ in range(3):
        first.click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(first.locator(".jp-InputPrompt")).to_contain_text("1", timeout=20_000)
            break
        except AssertionError:
            continue  # the kernel was not ready after all: run it again
    for _ in range(count - 1):
        page.keyboard.press("Shift+Enter")


def _start_server(tmp_path: Path, app: str, *, theme: str | None = None, python: str = sys.executable) -> dict:
    """``app`` (jupyterlab, notebook) from ``python``'s environment, on loopback."""
    project = tmp_path / "project"
    project.mkdir()
    api = FakeAnthropic().start()
    port = _free_port()
    token = "e2e-token"
    config = tmp_path / "jupyter-config"
    if theme:
        settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
        settings.parent.mkdir(parents=True)
        settings.write_text(json.dumps({"theme": theme}))
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
        "JUPYTER_PATH": str(Path(python).parent.parent / "share" / "jupyter"),
    }
    log = open(tmp_path / "server.log", "w")
    server = subprocess.Popen(
        [
            python, "-m", app, "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}", "--ServerApp.allow_root=True", f"--ServerApp.root_dir={project}",
            "--LabApp.news_url=", "--LabApp.collaborative=False", "--ServerApp.disable_check_xsrf=True",
        ],
        cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    def up() -> bool:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
            return True
        except OSError:
            return False

    try:
        wait_until(up, 180, f"{app} to start", interval=0.5)  # a first start on a loaded machine took over 60 s
    except AssertionError:
        server.terminate()
        raise RuntimeError(f"{app} did not start:\n" + (tmp_path / "server.log").read_text()[-3000:]) from None
    return {"base": base, "token": token, "project": project, "api": api, "process": server, "log": log, "env": env}


def _stop_server(server: dict) -> None:
    server["process"].terminate()
    try:
        server["process"].wait(10)
    except subprocess.TimeoutExpired:
        server["process"].kill()
    server["api"].stop()
    server["log"].close()


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on loopback, its root a fresh project, its kernels pointed at a fake API."""
    server = _start_server(tmp_path, "jupyterlab")
    try:
        yield server
    finally:
        _stop_server(server)


@pytest.fixture
def dark_lab(tmp_path):
    server = _start_server(tmp_path, "jupyterlab", theme="JupyterLab Dark")
    try:
        yield server
    finally:
        _stop_server(server)


@pytest.fixture
def notebook7(tmp_path):
    pytest.importorskip("notebook", minversion="7")
    server = _start_server(tmp_path, "notebook")
    try:
        yield server
    finally:
        _stop_server(server)


class _Browser:
    """A page in Chromium; on failure a screenshot is kept under /tmp."""

    def __init__(self, tmp_path: Path, name: str) -> None:
        self.tmp_path, self.name = tmp_path, name

    def __enter__(self):
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = _launch(self._pw)
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        return self.page

    def __exit__(self, kind, error, tb):
        if error is not None:
            self.page.screenshot(path=str(self.tmp_path / "failure.png"), full_page=True)
            shutil.copy(self.tmp_path / "failure.png", f"/tmp/codingcode-e2e-{self.name}-failure.png")
        self.browser.close()
        self._pw.stop()


def _greeting_script(api) -> None:
    api.add(
        Reply([text("I'll plan first."), tool_use("todo_write", {"plan": [{"step": "Write the greeting file", "status": "in_progress"}]})]),
        Reply([text("Now the file."), tool_use("write_file", {"path": "greeting.txt", "content": "hello from the agent\n"})]),
        Reply([text("All done: greeting.txt is written.")]),
    )


def test_agent_cell_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import expect

    project: Path = lab["project"]
    _greeting_script(lab["api"])
    (project / "e2e.ipynb").write_text(json.dumps(_notebook(["%load_ext codingcode_jupyter", "%%agent\nwrite a greeting file"])))

    with _Browser(tmp_path, "lab") as page:
        page.goto(f"{lab['base']}/lab/tree/e2e.ipynb?token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        _run_cells(page, lab, 2)

        allow = page.get_by_role("button", name="Allow", exact=True)
        expect(allow).to_be_visible(timeout=60_000)
        assert not (project / "greeting.txt").exists()  # nothing changes before the click
        expect(page.get_by_text("create greeting.txt (1 line)").first).to_be_visible()
        expect(page.locator(".cc-consequences >> visible=true")).to_contain_text("settings.local.json")
        allow.click()

        expect(page.get_by_text("All done: greeting.txt is written.")).to_be_visible(timeout=30_000)
        assert (project / "greeting.txt").read_text() == "hello from the agent\n"
        # the static record: todo list, who decided, the diff; no buttons left
        expect(page.locator("text=Write the greeting file >> visible=true").first).to_be_visible()
        expect(page.locator("text=allowed by you >> visible=true").first).to_be_visible()
        expect(page.locator(".codingcode-record .cc-diff-add >> visible=true").first).to_contain_text("hello from the agent")
        expect(allow).to_have_count(0)
        # the cost reads as money, not as LaTeX typeset between two dollar signs
        expect(page.locator(".codingcode-usage >> visible=true").first).to_contain_text(re.compile(r"\$0\.\d{4} · session"))
        page.screenshot(path=str(tmp_path / "e2e.png"), full_page=True)
    audit = [json.loads(line) for line in (project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    assert any(r.get("tool") == "write_file" and r.get("decision") == "allow" for r in audit)


def test_a_pending_card_survives_a_page_reload(lab, tmp_path):
    """Reload the page while a card waits: the card comes back live and its click still counts."""
    from playwright.sync_api import expect

    project: Path = lab["project"]
    lab["api"].add(
        Reply([text("Writing it."), tool_use("write_file", {"path": "after-reload.txt", "content": "still here\n"})]),
        Reply([text("Written after the reload.")]),
    )
    (project / "reload.ipynb").write_text(json.dumps(_notebook(["%load_ext codingcode_jupyter", "%%agent\nwrite a file"])))
    with _Browser(tmp_path, "reload") as page:
        page.goto(f"{lab['base']}/lab/tree/reload.ipynb?token={lab['token']}")
        _run_cells(page, lab, 2)
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


def _saved_as_record(path: Path) -> bool:
    """The agent cell's saved outputs are the static record, not a widget view."""
    try:
        outputs = json.loads(path.read_text())["cells"][1].get("outputs", [])
    except (ValueError, KeyError, IndexError):
        return False
    data = [o.get("data", {}) for o in outputs]
    return any("codingcode-record" in "".join(d.get("text/html", "")) for d in data) and \
        not any("application/vnd.jupyter.widget-view+json" in d for d in data)


def _record_readable(page) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text("All done: greeting.txt is written.")).to_be_visible(timeout=30_000)
    expect(page.locator("text=allowed by you >> visible=true").first).to_be_visible()
    expect(page.locator(".cc-diff-add >> visible=true").first).to_contain_text("hello from the agent")
    expect(page.get_by_text("Error displaying widget")).to_have_count(0)
    expect(page.get_by_text("model not found")).to_have_count(0)


def test_the_record_survives_save_restart_reload_and_nbconvert(lab, tmp_path):
    from playwright.sync_api import expect

    project: Path = lab["project"]
    _greeting_script(lab["api"])
    (project / "kept.ipynb").write_text(json.dumps(_notebook(["%load_ext codingcode_jupyter", "%%agent\nwrite a greeting file"])))
    with _Browser(tmp_path, "kept") as page:
        page.goto(f"{lab['base']}/lab/tree/kept.ipynb?token={lab['token']}")
        _run_cells(page, lab, 2)
        page.get_by_role("button", name="Allow", exact=True).click(timeout=60_000)
        expect(page.get_by_text("All done: greeting.txt is written.")).to_be_visible(timeout=30_000)
        # The live widgets show the answer first; save once the turn's record has replaced them.
        expect(page.locator(".codingcode-record").first).to_be_attached(timeout=30_000)
        page.keyboard.press("Control+s")
        wait_until(lambda: _saved_as_record(project / "kept.ipynb"), 30, "the notebook saved with the record", interval=0.3)
        kernel = _wait_kernel_idle(lab)
        _api(lab, f"/api/kernels/{kernel}/restart", "POST")
        _wait_kernel_idle(lab)
        page.reload()
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        _record_readable(page)

        saved = json.loads((project / "kept.ipynb").read_text())
        outputs = saved["cells"][1]["outputs"]
        assert all("application/vnd.jupyter.widget-view+json" not in o.get("data", {}) for o in outputs)
        subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", str(project / "kept.ipynb")], check=True,
                       env=lab["env"], capture_output=True, timeout=120)
        record = "".join(next(o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})))
        assert "codingcode-record" in record and "<script" not in record.lower()
        page.goto((project / "kept.html").as_uri())
        _record_readable(page)


def test_the_diff_is_readable_in_the_dark_theme(dark_lab, tmp_path):
    from playwright.sync_api import expect

    project: Path = dark_lab["project"]
    (project / "cli.py").write_text("import sys\n\n\ndef main():\n    print('hello')\n")
    dark_lab["api"].add(
        Reply([tool_use("read_file", {"path": "cli.py"})]),
        Reply([text("Editing it."), tool_use("edit_file", {"path": "cli.py", "old_string": "print('hello')",
                                                             "new_string": "print('hello', sys.argv)"})]),
        Reply([text("Edited.")]),
    )
    (project / "dark.ipynb").write_text(json.dumps(_notebook(["%load_ext codingcode_jupyter", "%%agent\nedit cli.py"])))
    with _Browser(tmp_path, "dark") as page:
        page.goto(f"{dark_lab['base']}/lab/tree/dark.ipynb?token={dark_lab['token']}")
        _run_cells(page, dark_lab, 2)
        allow = page.get_by_role("button", name="Allow", exact=True)
        expect(allow).to_be_visible(timeout=60_000)
        assert page.evaluate("document.body.dataset.jpThemeLight") == "false"  # the dark theme really applies
        for where in (".codingcode-approval", ".codingcode-record"):
            if where == ".codingcode-record":
                allow.click()
                expect(page.get_by_text("Edited.")).to_be_visible(timeout=30_000)
            rows = page.locator(f"{where} .cc-diff-add, {where} .cc-diff-del, {where} .cc-diff-ctx")
            expect(rows.first).to_be_visible()
            worst = rows.evaluate_all(CONTRAST_JS)
            assert set(worst) == {"add", "del", "ctx"}, worst
            assert all(ratio >= MIN_CONTRAST for ratio in worst.values()), (where, worst)
        page.screenshot(path=str(tmp_path / "dark.png"), full_page=True)


def test_stop_ends_a_turn_waiting_for_the_model_and_one_running_a_command(lab, tmp_path):
    from playwright.sync_api import expect

    project: Path = lab["project"]
    started = project / "started.txt"
    lab["api"].add(
        Reply([text("much too late")], delay=20.0),
    )
    (project / "stop.ipynb").write_text(json.dumps(_notebook([
        "%load_ext codingcode_jupyter",
        "%%agent\nthink for a long time",
        "%%agent --mode bypass\nrun the slow command",
    ])))
    with _Browser(tmp_path, "stop") as page:
        page.goto(f"{lab['base']}/lab/tree/stop.ipynb?token={lab['token']}")
        _run_cells(page, lab, 2)
        expect(page.get_by_text("thinking…").first).to_be_visible(timeout=60_000)
        page.get_by_role("button", name="Stop", exact=True).click()
        stopped = page.get_by_text("The turn was stopped before it finished.", exact=True)
        expect(stopped).to_have_count(1, timeout=15_000)
        expect(page.get_by_text("Interrupted.", exact=True)).to_have_count(0)  # one line for a Stop, no error output
        expect(page.get_by_text("much too late")).to_have_count(0)

        lab["api"].script.clear()
        lab["api"].add(Reply([tool_use("execute_command", {"command": f"touch {started}; sleep 60"})]))
        page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        wait_until(started.exists, 60, "the command to start", interval=0.2)
        expect(page.locator(".codingcode-tool >> text=running").first).to_be_visible(timeout=10_000)
        page.get_by_role("button", name="Stop", exact=True).click()
        expect(stopped).to_have_count(2, timeout=15_000)
        expect(page.get_by_text("Interrupted.", exact=True)).to_have_count(0)
    outcomes = [json.loads(line) for line in (project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    assert any(r.get("event") == "outcome" and r.get("outcome") == "interrupted" for r in outcomes)


def test_notebook7_card_click_and_record(notebook7, tmp_path):
    from playwright.sync_api import expect

    project: Path = notebook7["project"]
    _greeting_script(notebook7["api"])
    (project / "nb7.ipynb").write_text(json.dumps(_notebook(["%load_ext codingcode_jupyter", "%%agent\nwrite a greeting file"])))
    with _Browser(tmp_path, "nb7") as page:
        page.goto(f"{notebook7['base']}/notebooks/nb7.ipynb?token={notebook7['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        _run_cells(page, notebook7, 2)
        allow = page.get_by_role("button", name="Allow", exact=True)
        expect(allow).to_be_visible(timeout=60_000)
        allow.click()
        _record_readable(page)
        assert (project / "greeting.txt").read_text() == "hello from the agent\n"
