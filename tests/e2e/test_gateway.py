"""JupyterLab behind a Jupyter Enterprise Gateway on loopback, in Debian's Chromium.

The gateway (its own venv, `.venv-gateway`, made by scripts/test.sh: it pins jupyter-server<2
and jupyter-client<7, which would break Lab 4) starts the kernels in a directory of its own,
not the notebook's; it drops JPY_SESSION_NAME and passes KERNEL_WORKING_DIR. Through it: the
agent reads the live notebook (unsaved typing included) over the extension's comm, proposes a
cell change that is accepted on the cell, asks on a card before writing a file, and the turn's
record stays after a save and reload; `%agent status` says that the kernel's directory is not
the notebook's, and the file lands in the kernel's directory as it says.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.test_browser import CHROMIUM, _Browser, _free_port, _stop_server, _wait_kernel_idle
from tests.e2e.test_notebook_edits import _tool_results, _type_unsaved
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
GATEWAY_VENV = Path(os.environ.get("CODINGCODE_GATEWAY_VENV", ROOT / ".venv-gateway"))
GATEWAY = GATEWAY_VENV / "bin" / "jupyter-enterprisegateway"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (apt-get install chromium)"),
    pytest.mark.skipif(not GATEWAY.exists(), reason=f"no Enterprise Gateway at {GATEWAY} (scripts/test.sh makes it)"),
]

KERNEL = "cc-gateway"
# Variables the kernel needs from the person's side: named in Lab's allowed_envs and the gateway's client_envs.
CLIENT_ENVS = "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,CODINGCODE_USER_DIR"


def _up(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
        return True
    except OSError:
        return False


def _start(command: list[str], cwd: Path, env: dict[str, str], log_path: Path, url: str, what: str) -> tuple:
    log = open(log_path, "w")
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: _up(url), 90, f"{what} to start", interval=0.5)
    except AssertionError:
        process.terminate()
        raise RuntimeError(f"{what} did not start:\n" + log_path.read_text()[-3000:]) from None
    return process, log


@pytest.fixture
def gateway_lab(tmp_path):
    """Enterprise Gateway (kernels start in kernel-home/) and a JupyterLab that uses it (root project/)."""
    project, kernel_home, user = tmp_path / "project", tmp_path / "kernel-home", tmp_path / "user"
    for folder in (project, kernel_home, user):
        folder.mkdir()
    spec = tmp_path / "gateway-data" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (gateway)", "language": "python",
    }))
    api = FakeAnthropic().start()
    gateway_port, lab_port, token = _free_port(), _free_port(), "e2e-token"
    base_env = {key: value for key, value in os.environ.items() if not key.startswith(("JUPYTER", "JPY_"))}
    gateway_env = {
        **base_env,
        "JUPYTER_PATH": str(tmp_path / "gateway-data"),
        "JUPYTER_DATA_DIR": str(tmp_path / "gateway-data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "gateway-runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "gateway-config"),
        # Lists as the gateway reads them from its environment (its --client_envs=A,B would be one name).
        "EG_CLIENT_ENVS": CLIENT_ENVS,
        "EG_INHERITED_ENVS": "PATH,HOME,LANG",
    }
    gateway = _start(
        [str(GATEWAY), "--ip=127.0.0.1", f"--port={gateway_port}", "--EnterpriseGatewayApp.list_kernels=True",
         ],
        kernel_home, gateway_env, tmp_path / "gateway.log", f"http://127.0.0.1:{gateway_port}/api/kernelspecs", "the gateway",
    )
    lab_env = {
        **base_env,
        "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_USER_DIR": str(user),
        # The gateway refuses kernels for root unless a user is named (KERNEL_* variables always travel).
        "KERNEL_USERNAME": "tester",
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
        "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"),
    }
    base = f"http://127.0.0.1:{lab_port}"
    try:
        lab = _start(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={lab_port}",
             f"--IdentityProvider.token={token}", "--ServerApp.allow_root=True", f"--ServerApp.root_dir={project}",
             "--LabApp.news_url=", "--ServerApp.disable_check_xsrf=True",
             f"--GatewayClient.url=http://127.0.0.1:{gateway_port}", f"--GatewayClient.allowed_envs={CLIENT_ENVS}",
             "--GatewayClient.request_timeout=60"],
            project, lab_env, tmp_path / "server.log", f"{base}/api/status?token={token}", "JupyterLab",
        )
    except RuntimeError:
        gateway[0].terminate()
        api.stop()
        raise
    server = {"base": base, "token": token, "project": project, "kernel_home": kernel_home, "api": api,
              "process": lab[0], "log": lab[1], "env": lab_env}
    try:
        yield server
    finally:
        _stop_server(server)
        gateway[0].terminate()
        try:
            gateway[0].wait(10)
        except subprocess.TimeoutExpired:
            gateway[0].kill()
        gateway[1].close()


def _notebook(cells: list[tuple[str, str]]) -> dict:
    return {
        "cells": [{"id": cell_id, "cell_type": "code", "metadata": {}, "source": source, "outputs": [],
                   "execution_count": None} for cell_id, source in cells],
        "metadata": {"kernelspec": {"name": KERNEL, "display_name": "Python 3 (gateway)", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _run_first_cells(page, count: int) -> None:
    """Shift+Enter through the first cells, once the first one is seen to run (a message sent while
    the gateway still connects the kernel is dropped: run it again)."""
    from playwright.sync_api import expect

    first = page.locator(".jp-Notebook .jp-Cell").first
    for _ in range(5):
        first.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(first.locator(".jp-InputPrompt")).to_contain_text(re.compile(r"\[\d+\]"), timeout=30_000)
            break
        except AssertionError:
            continue
    for _ in range(count - 1):
        page.keyboard.press("Shift+Enter")


def test_lab_behind_enterprise_gateway(gateway_lab, tmp_path):
    from playwright.sync_api import expect

    project: Path = gateway_lab["project"]
    kernel_home: Path = gateway_lab["kernel_home"]
    gateway_lab["api"].add(
        Reply([text("Reading the notebook."), tool_use("read_notebook", {})]),
        Reply([text("Changing the data cell."), tool_use("edit_notebook", {"changes": [
            {"action": "replace", "cell_id": "c-data", "source": "x = 2"},
        ]})]),
        Reply([text("Writing a note."), tool_use("write_file", {"path": "note.txt", "content": "from the gateway\n"})]),
        Reply([text("All done behind the gateway.")]),
    )
    notebook = project / "remote.ipynb"
    notebook.write_text(json.dumps(_notebook([
        ("c-load", "%load_ext codingcode_jupyter"),
        ("c-data", "x = 1"),
        ("c-agent", "%%agent\nchange the data cell and write a note"),
        ("c-status", "%agent status"),
    ])))
    # The kernel is started before the page opens: when the page's first connection races the
    # kernel's start, the gateway (jupyter-server 1.24) may hold the second one for a minute.
    request = urllib.request.Request(
        f"{gateway_lab['base']}/api/sessions?token={gateway_lab['token']}", method="POST",
        data=json.dumps({"path": "remote.ipynb", "type": "notebook", "name": "remote.ipynb",
                         "kernel": {"name": KERNEL}}).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=90) as answer:
        assert answer.status == 201
    with _Browser(tmp_path, "gateway") as page:
        page.goto(f"{gateway_lab['base']}/lab/tree/remote.ipynb?token={gateway_lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_function("document.body.dataset.codingcodeNotebook === '1'", timeout=60_000)
        _wait_kernel_idle(gateway_lab, timeout=90)
        _type_unsaved(page, 1, "  # typed here")
        _run_first_cells(page, 3)

        # The edit shows on its cell and is accepted there.
        bar = page.locator(".cc-review-bar.cc-review-replace")
        expect(bar).to_have_count(1, timeout=90_000)
        assert any("typed here" in result for result in _tool_results(gateway_lab["api"]))
        bar.get_by_role("button", name="Accept").click()
        expect(page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".cm-content")).to_have_text("x = 2", timeout=10_000)

        # The card asks before the file is written; the click travels through the gateway.
        allow = page.get_by_role("button", name="Allow", exact=True)
        expect(allow).to_be_visible(timeout=60_000)
        assert not (kernel_home / "note.txt").exists()
        allow.click()
        agent_cell = page.locator(".jp-Notebook .jp-Cell").nth(2)
        expect(agent_cell.get_by_text("All done behind the gateway.")).to_be_visible(timeout=60_000)
        expect(agent_cell.locator(".codingcode-record").first).to_be_attached(timeout=30_000)
        edit_result = next(r for r in _tool_results(gateway_lab["api"]) if r.startswith("Notebook changes"))
        assert "replace cell c-data: accepted by the person" in edit_result

        # %agent status (run by the person now that the turn is over) says where the agent works.
        page.locator(".jp-Notebook .jp-Cell").nth(3).click()
        page.keyboard.press("Escape")
        page.keyboard.press("Shift+Enter")
        status_cell = page.locator(".jp-Notebook .jp-Cell").nth(3)
        expect(status_cell.locator(".jp-OutputArea-output")).to_contain_text("not in the kernel's directory", timeout=60_000)
        status = " ".join(status_cell.locator(".jp-OutputArea-output").inner_text().split())  # long rows wrap
        assert f"project {kernel_home}" in status, status
        assert f"notebook in {project}, not in the kernel's directory, which is the project" in status, status
        assert f"`%agent project {project}` works beside the notebook" in status, status

        page.keyboard.press("Control+s")
        wait_until(lambda: "x = 2" in notebook.read_text() and "codingcode-record" in notebook.read_text(), 30,
                   "the notebook saved", interval=0.3)
        page.reload()
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        agent_cell = page.locator(".jp-Notebook .jp-Cell").nth(2)
        expect(agent_cell.get_by_text("All done behind the gateway.")).to_be_visible(timeout=30_000)
        expect(page.get_by_text("Error displaying widget")).to_have_count(0)

    # The file landed in the kernel's directory, as status said; the decision is in its audit log.
    assert (kernel_home / "note.txt").read_text() == "from the gateway\n"
    assert not (project / "note.txt").exists()
    audit = [json.loads(line) for line in (kernel_home / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    assert any(r.get("tool") == "write_file" and r.get("decision") == "allow" for r in audit)
    saved = json.loads(notebook.read_text())
    assert "".join(saved["cells"][1]["source"]) == "x = 2"
