"""The session's sandbox honours the person's settings: allowed .env files stay visible."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from codingcode_jupyter.engine.runtime import open_session

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


async def _run(sandbox, command: str, cwd) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *sandbox.argv_for(command, cwd), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    out, _ = await process.communicate()
    return process.returncode, out.decode()


async def test_an_allowed_env_file_is_visible_and_the_others_are_not(tmp_path):
    (tmp_path / ".env").write_text("SECRET=1\n")
    (tmp_path / ".env.example").write_text("SECRET=changeme\n")
    (tmp_path / ".codingcode").mkdir()
    (tmp_path / ".codingcode" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["read_file(.env.example)"]}})
    )
    session = open_session(tmp_path)
    try:
        assert session.sandbox().active, session.sandbox().unavailable_reason
        code, out = await _run(session.sandbox(), "cat .env.example", tmp_path)
        assert code == 0 and "changeme" in out
        code, out = await _run(session.sandbox(), "cat .env", tmp_path)
        assert "SECRET=1" not in out
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_network_decisions_of_sandboxed_commands_are_audited(tmp_path):
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    port = server.server_address[1]
    (tmp_path / ".codingcode").mkdir()
    (tmp_path / ".codingcode" / "settings.json").write_text(
        json.dumps({"sandbox": {"network": {"allowedDomains": ["localhost"]}}})
    )
    session = open_session(tmp_path)
    fetch = "import urllib.request, sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())"
    try:
        code, out = await _run(session.sandbox(), f"python3 -c '{fetch}' http://localhost:{port}/", tmp_path)
        assert code == 0 and "ok" in out, out
        code, out = await _run(session.sandbox(), f"python3 -c '{fetch}' http://127.0.0.1:{port}/", tmp_path)
        assert code != 0 and "403" in out
    finally:
        await session.aclose()
        server.shutdown()
    records = [json.loads(line) for line in (tmp_path / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    network = [(r["host"], r["decision"]) for r in records if r.get("event") == "network"]
    assert network == [("localhost", "allow"), ("127.0.0.1", "deny")]
