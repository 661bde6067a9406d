"""A configured server's tools are in the model's FIRST request, in a real kernel: the servers start
with ``%load_ext``'s background loading, and the first ``%%agent`` cell waits (briefly) for
those still starting. Four real servers: server-everything, mcp-server-time and mcp-server-git
over stdio, server-everything over streamable HTTP; the first cell sent right after
``%load_ext`` (Run All) and two seconds after it.

The fake Messages API is scripted to call one tool of each server in its first answer, so a
tool missing from the first request fails the calls, not only the assertion on the tools offered.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.engine.mcp_real import EVERYTHING, NODE, PY_SERVERS, everything_http, needs, py_server
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel
from tests.notebook.test_kernel import _pythons

pytestmark = [
    pytest.mark.kernel,
    needs(EVERYTHING, "@modelcontextprotocol/server-everything"),
    needs(PY_SERVERS / "mcp-server-time", "mcp-server-time"),
    needs(PY_SERVERS / "mcp-server-git", "mcp-server-git"),
]

# One call to each server, as the model would make them in its first answer.
CALLS = {
    "everything__get-sum": ({"a": 40, "b": 2}, "42"),
    "time__get_current_time": ({"timezone": "Europe/Paris"}, "Europe/Paris"),
    "git__git_log": (None, "the first commit"),  # its repo_path is the test's
    "remote__get-sum": ({"a": 20, "b": 22}, "42"),
}


def _repo(path: Path) -> Path:
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "the first commit"], check=True)
    return path


@pytest.fixture(params=_pythons())
def configured(request, tmp_path: Path):
    """A kernel in a project whose .mcp.json has the four servers; the extension not loaded yet."""
    python = request.param
    if "ipykernel6" in request.node.callspec.id:
        version = subprocess.run([python, "-c", "import ipykernel; print(ipykernel.__version__)"],
                                 capture_output=True, text=True).stdout.strip()
        if not version.startswith("6."):
            pytest.skip(f"{python} has ipykernel {version or 'missing'}, not 6.x")
    project = tmp_path / "project"
    project.mkdir()
    repo = _repo(tmp_path / "repo")
    remote = everything_http("streamableHttp", log=tmp_path / "everything-http.log")
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "everything": {"command": NODE, "args": [str(EVERYTHING), "stdio"]},
        "time": {"command": py_server("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": py_server("mcp-server-git"), "args": ["--repository", str(repo)]},
        "remote": {"type": "http", "url": f"http://127.0.0.1:{remote.port}/mcp"},
    }}))
    fake = FakeAnthropic().start()
    # The four servers start beside the kernel's own loading on a machine other tests share: the
    # turn may wait for them up to 60 s here (Claude Code's MCP_TIMEOUT, in milliseconds), so the
    # test checks what happens, not how fast this machine is.
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
           "MCP_TIMEOUT": "60000"}
    kernel = Kernel(python, project, env, tmp_path / "jupyter")
    kernel.fake, kernel.project, kernel.repo = fake, project, repo
    try:
        yield kernel
    finally:
        kernel.close()
        fake.stop()
        remote.stop()


def _script(k: Kernel) -> dict:
    seen: dict = {}

    def first(body: dict) -> Reply:
        seen["tools"] = [tool["name"] for tool in body["tools"]]
        calls = []
        for number, (name, (args, _)) in enumerate(CALLS.items()):
            calls.append(tool_use(name, args if args is not None else {"repo_path": str(k.repo)}, id=f"toolu_{number}"))
        return Reply(calls)

    k.fake.add(first, Reply([text("All four answered.")]))
    return seen


@pytest.mark.parametrize("pause", [pytest.param(0.0, id="run-all"), pytest.param(2.0, id="after-2s")])
def test_the_first_cell_calls_a_tool_of_each_configured_server(configured: Kernel, pause: float):
    k = configured
    seen = _script(k)
    load_id = k.execute("%load_ext codingcode_jupyter")
    if pause:
        assert k.reply(load_id)["status"] == "ok"
        time.sleep(pause)  # a person typing the first cell
    cell_id = k.execute("%%agent --mode bypass\nCall one tool of each MCP server")
    reply = k.reply(cell_id, timeout=180)
    assert k.reply(load_id)["status"] == "ok"
    assert reply["status"] == "ok", k.text_output(cell_id)
    # The first request the model received offered every server's tools...
    offered = set(seen["tools"])
    for server in ("everything", "time", "git", "remote"):
        assert any(name.startswith(f"{server}__") for name in offered), (server, sorted(offered))
    assert set(CALLS) <= offered
    # ...and each call reached its server and came back with its answer.
    assert len(k.fake.requests) == 2
    results = {block["tool_use_id"]: block for block in k.fake.requests[1]["messages"][-1]["content"]
               if block.get("type") == "tool_result"}
    for number, (name, (_, expected)) in enumerate(CALLS.items()):
        block = results[f"toolu_{number}"]
        assert not block.get("is_error"), (name, block)
        assert expected in json.dumps(block["content"]), (name, block)
