"""What importing the package and opening a session load: only what the session needs.

Each check runs in a fresh interpreter, since this process has long since imported
everything. The heavy modules are named: each costs from tens of milliseconds (numpy, bs4,
the sandbox proxy) to most of a second (the ``mcp`` SDK with its server side, the anthropic
SDK), and each has a moment it is needed, which the counterpart tests show.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Heavy for `import codingcode_jupyter` and its public names (tool, ToolDefinition, ...).
HEAVY_FOR_IMPORT = (
    "anthropic", "mcp", "mcp_types", "httpx", "httpx2", "numpy", "rank_bm25", "bs4", "markdownify",
    "bashlex", "ipywidgets", "IPython",
)
# What opening a session on a project with nothing configured must not load, and why each
# waits: the MCP client (a configured server), httpx and the HTML parsers (the first
# fetch_url or web_search), rank_bm25 and numpy (the first tool_search), the sandbox proxy
# (a network allowlist), the anthropic SDK (the first request).
HEAVY_FOR_EMPTY_SESSION = (
    "mcp", "mcp_types", "codingcode_jupyter.engine.mcp.client", "codingcode_jupyter.engine.mcp.oauth",
    "starlette", "uvicorn", "cryptography",
    "httpx", "bs4", "markdownify",
    "rank_bm25", "numpy",
    "codingcode_jupyter.engine.sandbox.proxy",
    "anthropic", "httpx2",
    "IPython", "ipywidgets",
)

OPEN_SESSION = textwrap.dedent('''
    import asyncio, json, sys
    from codingcode_jupyter.engine import runtime

    async def main():
        session = runtime.open_session(sys.argv[1])
        await session.start()
        await session.aclose()

    asyncio.run(main())
    print(json.dumps(sorted(sys.modules)))
''')


def _loaded(code: str, *args: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code`` (which prints them as JSON)."""
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True,
                         env={**os.environ}).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def _heavy(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in loaded]


def test_the_public_api_imports_without_heavy_modules():
    loaded = _loaded(
        "import json, sys\n"
        "import codingcode_jupyter as c\n"
        "from codingcode_jupyter import tool, pre_tool_use, on_approval, Image, ToolDefinition, ToolContext, ToolError\n"
        "assert callable(c.load_ipython_extension) and callable(tool)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    assert "codingcode_jupyter.engine.tools.custom" in loaded  # the names did resolve
    assert _heavy(loaded, HEAVY_FOR_IMPORT) == []


def test_opening_a_session_on_an_empty_project_loads_none_of_the_heavy_modules(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    loaded = _loaded(OPEN_SESSION, str(project))
    assert "codingcode_jupyter.engine.session" in loaded and "codingcode_jupyter.engine.mcp.manager" in loaded
    assert _heavy(loaded, HEAVY_FOR_EMPTY_SESSION) == []


FIRST_ANSWER = textwrap.dedent('''
    import asyncio, json, sys, threading

    class Watch:
        """Which thread imports the MCP client."""
        threads = []

        def find_spec(self, name, path=None, target=None):
            if name == "codingcode_jupyter.engine.mcp.client":
                self.threads.append(threading.current_thread() is threading.main_thread())
            return None

    sys.meta_path.insert(0, Watch())
    from codingcode_jupyter.engine import runtime

    async def main():
        session = runtime.open_session(sys.argv[1], model="demo")
        await session.start()
        opened = "codingcode_jupyter.engine.mcp.client" in sys.modules
        await session.run_turn("hello")
        await session.mcp.wait_ready(30)
        await session.aclose()
        return opened

    opened = asyncio.run(main())
    print(json.dumps({"at_open": opened, "on_main_thread": Watch.threads}))
    print(json.dumps(sorted(sys.modules)))
''')


@pytest.mark.slow
def test_a_configured_mcp_server_loads_the_mcp_client_off_the_event_loop_as_the_session_opens(tmp_path: Path):
    # The counterpart of the empty-project check: it would pass vacuously if nothing could load the client.
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": ["-c", "pass"]}}}))
    out = subprocess.run([sys.executable, "-c", FIRST_ANSWER, str(project)], capture_output=True, text=True, check=True,
                         env={**os.environ, "CODINGCODE_TRUST": "1"}).stdout
    state, loaded = (json.loads(line) for line in out.strip().splitlines()[-2:])
    assert {"mcp", "codingcode_jupyter.engine.mcp.client"} <= set(loaded)
    # Not imported on the event loop while the session opened; imported on a worker thread.
    assert state == {"at_open": False, "on_main_thread": [False]}


@pytest.mark.slow
def test_a_network_allowlist_loads_the_sandbox_proxy_with_the_first_command(tmp_path: Path):
    project = tmp_path / "project"
    (project / ".codingcode").mkdir(parents=True)
    (project / ".codingcode" / "settings.json").write_text(
        json.dumps({"sandbox": {"network": {"allowedDomains": ["example.org"]}}}))
    code = textwrap.dedent('''
        import asyncio, json, sys
        from pathlib import Path
        from codingcode_jupyter.engine import runtime

        session = runtime.open_session(sys.argv[1])
        sandbox = session.deps.sandbox()
        before = "codingcode_jupyter.engine.sandbox.proxy" in sys.modules
        if sandbox is not None and sandbox.active:
            sandbox.argv_for("true", Path(sys.argv[1]))
            asyncio.run(sandbox.aclose())
        print(json.dumps({"active": bool(sandbox and sandbox.active), "before": before,
                          "after": "codingcode_jupyter.engine.sandbox.proxy" in sys.modules}))
        print(json.dumps(sorted(sys.modules)))
    ''')
    out = subprocess.run([sys.executable, "-c", code, str(project)], capture_output=True, text=True, check=True).stdout
    state = json.loads(out.strip().splitlines()[0])
    assert state["before"] is False
    if not state["active"]:
        pytest.skip("the bubblewrap sandbox is not available here, so no command needs the proxy")
    assert state["after"] is True


@pytest.mark.slow
def test_warm_up_does_not_import_the_mcp_client_even_for_a_project_that_configures_servers(tmp_path: Path):
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / ".mcp.json").write_text(json.dumps({"mcpServers": {"t": {"command": "true"}}}))
    code = ("import json, sys\nfrom codingcode_jupyter.engine import runtime\nruntime.warm_up(sys.argv[1])\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = _loaded(code, str(configured))
    assert "codingcode_jupyter.engine.runtime" in loaded
    assert "codingcode_jupyter.engine.mcp.client" not in loaded and "mcp" not in loaded


@pytest.mark.slow
def test_the_sdk_warm_up_streams_in_memory_without_opening_a_connection():
    code = textwrap.dedent('''
        import json, socket, sys, threading
        attempts = []

        def refuse(self, address):
            attempts.append(repr(address))
            raise OSError("no network in this test")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        from codingcode_jupyter.engine.models.anthropic import warm_up

        errors = []
        def run():
            try:
                warm_up()
            except BaseException as error:
                errors.append(repr(error))
        worker = threading.Thread(target=run)  # as the notebook runs it: off the main thread
        worker.start()
        worker.join()
        print(json.dumps({"errors": errors, "attempts": attempts, "sdk": "anthropic" in sys.modules}))
    ''')
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == {"errors": [], "attempts": [], "sdk": True}


EARLY = textwrap.dedent('''
    import asyncio, json, sys, threading

    class Watch:
        """Which thread imports the MCP client."""
        threads = []

        def find_spec(self, name, path=None, target=None):
            if name == "codingcode_jupyter.engine.mcp.client":
                self.threads.append(threading.current_thread() is threading.main_thread())
            return None

    sys.meta_path.insert(0, Watch())
    from codingcode_jupyter.engine import runtime

    async def main():
        loop = asyncio.get_running_loop()
        # As the notebook's background loading does it: on its own thread, the servers on the loop.
        early = await asyncio.to_thread(runtime.start_servers_early, sys.argv[1], loop)
        await asyncio.sleep(0)  # the loop runs what the thread handed it
        session = runtime.open_session(sys.argv[1], model="demo")
        await session.mcp.wait_ready(30)
        state = session.mcp.connection("t").state
        taken = not runtime._EARLY
        await session.aclose()
        return {"early": early, "taken": taken, "state": state}

    print(json.dumps({**asyncio.run(main()), "on_main_thread": Watch.threads}))
''')


@pytest.mark.slow
@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
def test_servers_started_early_load_the_client_off_the_loop_and_the_first_session_takes_them(tmp_path: Path,
                                                                                             trusted: bool):
    project = tmp_path / "project"
    project.mkdir()
    marker = tmp_path / "spawned"
    code = f"open({str(marker)!r}, 'w').close()"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": ["-c", code]}}}))
    env = {**os.environ, "CODINGCODE_TRUST": "1" if trusted else "", "CODINGCODE_USER_DIR": str(tmp_path / "user")}
    out = subprocess.run([sys.executable, "-c", EARLY, str(project)], capture_output=True, text=True, check=True,
                         env=env).stdout
    state = json.loads(out.strip().splitlines()[-1])
    assert state["early"] is True and state["taken"] is True and state["on_main_thread"] == [False]
    # Trusted: it was spawned (and exited at once: failed); untrusted: nothing of it ran.
    assert (state["state"], marker.exists()) == (("failed", True) if trusted else ("untrusted", False))
