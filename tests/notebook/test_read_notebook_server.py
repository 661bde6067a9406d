"""read_notebook in a kernel started by a real jupyter-server, the way JupyterLab starts one.

The server runs on 127.0.0.1 with a token in a temp root; a session is created through its
REST API for a saved notebook, and the test talks to that session's kernel with
jupyter_client through the connection file in the server's runtime dir. The agent cell is
sent with the cell id JupyterLab puts in an execute request's metadata. A kernel no server
started gets a clear error instead.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client import BlockingKernelClient

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel
from tests.polling import wait_until

pytestmark = pytest.mark.kernel

TOKEN = "test-token-not-secret"
EXTENSIONS = ("jupyterlab", "notebook", "jupyter_lsp", "notebook_shim", "jupyter_server_terminals")
SETUP = "%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0\n%config CodingCode.headless_timeout = 4.0"


class ServerKernel(Kernel):
    """The harness's browser-like client, on a kernel someone else (the server) started."""

    def __init__(self, client: BlockingKernelClient) -> None:
        self.km = None
        self.kc = client
        self.messages, self.widgets, self.updates, self.stdin_requests, self.replies = [], {}, {}, [], {}

    def close(self) -> None:
        self.kc.stop_channels()

    def execute_in_cell(self, code: str, cell_id: str) -> str:
        """An execute_request as JupyterLab sends it, naming the cell in its metadata."""
        msg = self.kc.session.msg("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True,
        })
        msg["metadata"]["cellId"] = cell_id
        self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def api(base: str, method: str, path: str, body: dict | None = None) -> Any:
    request = urllib.request.Request(
        f"{base}{path}", method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        data = response.read()
    return json.loads(data) if data else None


@pytest.fixture
def server(tmp_path: Path):
    root, runtime = tmp_path / "root", tmp_path / "runtime"
    root.mkdir()
    fake = FakeAnthropic().start()
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
    }
    env.pop("JPY_SESSION_NAME", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={root}", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
         "--ServerApp.open_browser=False", "--ServerApp.allow_root=True",
         # The bare server: JupyterLab and the other server extensions are not what is tested.
         *(f"--ServerApp.jpserver_extensions={name}=False" for name in EXTENSIONS)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"jupyter server exited with {process.returncode}")
        try:
            api(base, "GET", "/api/status")
            return True
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    try:
        wait_until(up, 60, "jupyter server to start", interval=0.2)
    except AssertionError:
        process.kill()
        raise
    try:
        yield {"base": base, "root": root, "runtime": runtime, "fake": fake}
    finally:
        try:
            api(base, "POST", "/api/shutdown")
            process.wait(timeout=30)
        except Exception:
            process.kill()
            process.wait(timeout=10)
        fake.stop()


def open_session(server: dict, path: str) -> ServerKernel:
    session = api(server["base"], "POST", "/api/sessions", {
        "path": path, "name": Path(path).name, "type": "notebook", "kernel": {"name": "python3"},
    })
    connection = server["runtime"] / f"kernel-{session['kernel']['id']}.json"
    wait_until(connection.exists, 30, f"the connection file {connection}", interval=0.1)
    client = BlockingKernelClient(connection_file=str(connection))
    client.load_connection_file()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return ServerKernel(client)


def tool_text(request: dict, tool_use_id: str) -> str:
    for block in request["messages"][-1]["content"]:
        if isinstance(block, dict) and block.get("tool_use_id") == tool_use_id:
            return "\n".join(c.get("text", "") for c in block["content"])
    raise AssertionError(f"no result for {tool_use_id}")


def test_read_notebook_in_a_kernel_the_server_started(server):
    folder = server["root"] / "analysis"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook()
    agent_cell = nbformat.v4.new_code_cell("%%agent\nWhat is this notebook about?")
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Rainfall study\nMonthly totals for Bergen."),
        nbformat.v4.new_code_cell("totals = [190, 150, 140]", execution_count=1),
        nbformat.v4.new_markdown_cell("## Next: plot them"),
        nbformat.v4.new_code_cell("plot(totals)"),
        agent_cell,
    ]
    nbformat.write(notebook, str(folder / "rain.ipynb"))
    kernel = open_session(server, "analysis/rain.ipynb")
    try:
        assert kernel.run(SETUP)["status"] == "ok"
        server["fake"].add(Reply([tool_use("read_notebook", {}, id="nb")]), Reply([text("About rainfall.")]))
        msg_id = kernel.execute_in_cell("%%agent\nWhat is this notebook about?", agent_cell["id"])
        assert kernel.reply(msg_id, timeout=90)["status"] == "ok", kernel.text_output(msg_id)
    finally:
        kernel.close()
    seen = tool_text(server["fake"].requests[1], "nb")
    assert str(folder / "rain.ipynb") in seen and "JPY_SESSION_NAME" in seen and "5 cells" in seen
    order = [seen.index(part) for part in
             ("# Rainfall study", "totals = [190, 150, 140]", "## Next: plot them", "plot(totals)", "What is this notebook")]
    assert order == sorted(order)
    lines = {line.split(" (")[0]: line for line in seen.splitlines() if line.startswith("--- cell")}
    assert "markdown" in lines["--- cell 1"] and "In [1] when saved" in lines["--- cell 2"]
    assert "not run when saved" in lines["--- cell 4"]
    assert "THIS CELL IS RUNNING THE AGENT" in lines["--- cell 5"]
    assert not any("RUNNING" in lines[f"--- cell {n}"] for n in range(1, 5))


def test_read_notebook_in_a_bare_kernel_is_a_clear_error(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    fake = FakeAnthropic().start()
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
           "JPY_SESSION_NAME": ""}
    kernel = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    try:
        assert kernel.run(SETUP)["status"] == "ok"
        fake.add(Reply([tool_use("read_notebook", {}, id="nb")]), Reply([text("No notebook.")]))
        msg_id = kernel.execute("%%agent\nRead the notebook.")
        assert kernel.reply(msg_id, timeout=90)["status"] == "ok", kernel.text_output(msg_id)
    finally:
        kernel.close()
        fake.stop()
    result = next(b for b in fake.requests[1]["messages"][-1]["content"] if b.get("tool_use_id") == "nb")
    assert result.get("is_error") is True
    assert "No notebook is known for this kernel" in result["content"][0]["text"]
