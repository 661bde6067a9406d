"""Egress is asked: fetch_url reaches only domains the person allowed without a card."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from codingcode_jupyter.engine.agent import AgentLoop, Conversation
from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import ToolCall
from codingcode_jupyter.engine.tools.web import fetch_url_tool
from tests.engine.approval_helpers import context
from tests.engine.helpers import Recorder, StaticTools, make_deps, write_settings
from tests.fakes.model import call, scripted

FETCH = fetch_url_tool()


async def _kind(project: Path, url: str, mode: str = "default") -> str:
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    result = await pipeline.evaluate(ToolCall(tool_use_id="t", tool=FETCH, input={"url": url}), context(project, mode=mode))
    return result.kind


async def test_an_unknown_domain_is_asked_in_default_acceptedits_and_plan(project):
    for mode in ("default", "acceptEdits", "plan"):
        assert await _kind(project, "https://attacker.example/?d=secret", mode) == "ask", mode
    assert await _kind(project, "https://attacker.example/", "bypass") == "allow"


async def test_always_allow_this_domain_saves_a_domain_rule(project):
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    seen = []

    async def always(request):
        seen.append(request)
        return "always"

    first = ToolCall(tool_use_id="t", tool=FETCH, input={"url": "https://docs.python.org/3/library/?q=x#frag"})
    assert (await pipeline.decide(first, context(project), always)).kind == "allow"
    # The card set apart what would leave the machine.
    assert "query (sent to docs.python.org): q=x" in seen[0].preview and "fragment: frag" in seen[0].preview
    local = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert local["permissions"]["allow"] == ["fetch_url(domain:docs.python.org)"]
    assert await _kind(project, "https://docs.python.org/3/tutorial/") == "allow"
    assert await _kind(project, "https://evil.example/") == "ask"
    assert await _kind(project, "https://docs.python.org.evil.example/") == "ask"


async def test_a_plain_fetch_url_rule_restores_the_whitelist(project):
    write_settings(project, {"permissions": {"allow": ["fetch_url"]}})
    assert await _kind(project, "https://anything.example/") == "allow"


async def test_the_sandboxs_allowed_domains_are_the_same_list(project):
    write_settings(project, {"sandbox": {"network": {"allowedDomains": ["*.pythonhosted.org"]}},
                             "permissions": {"allow": ["fetch_url(domain:pypi.org)"]}})
    assert ProjectSettings(project).current().allowed_domains == ("*.pythonhosted.org", "pypi.org")
    assert await _kind(project, "https://files.pythonhosted.org/x") == "allow"
    assert await _kind(project, "https://pypi.org/simple/") == "allow"


def test_a_bad_domain_rule_is_a_clear_error(project):
    # Left out with a warning naming it; the file's other rules apply (it used to switch the file off).
    write_settings(project, {"permissions": {"deny": ["fetch_url(domain:exa mple.com/path)", "fetch_url(domain:x.io)"]}})
    effective = ProjectSettings(project).current()
    assert [r.text for r in effective.rules] == ["fetch_url(domain:x.io)"]
    assert any("permissions.deny.0" in w and "domain" in w for w in effective.warnings)
    # The same in an allow rule is left out, with a warning naming it (it would allow nothing).
    write_settings(project, {"permissions": {"allow": ["fetch_url(domain:exa mple.com/path)"]}})
    effective = ProjectSettings(project).current()
    assert not effective.rules and any("permissions.allow.0" in w and "domain" in w for w in effective.warnings)


@pytest.fixture
def two_hosts():
    """One server answering as 127.0.0.1 and as localhost: /go redirects from one name to the other."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/go"):
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{self.server.server_port}/landed")
                self.end_headers()
                return
            body = b"landed here"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield server.server_port
    server.shutdown()
    server.server_close()


async def _run(project: Path, url: str, answer: str) -> tuple[list, list]:
    asked: list = []

    async def ask(request):
        asked.append(request)
        return answer

    model = scripted([call("fetch_url", {"url": url})])
    loop = AgentLoop(model=model, tools=StaticTools([FETCH]), approver=ApprovalPipeline(project, python_hooks=[]), session_id="s", state=SessionState(), emit=Recorder(), ask=ask,
                     deps=make_deps(project))
    await loop.run(Conversation(), "go", 1)
    return asked, model.requests[1].messages[-1]["content"]


async def test_a_redirect_to_another_domain_is_asked_again(project, two_hosts):
    write_settings(project, {"permissions": {"allow": ["fetch_url(domain:127.0.0.1)"]}})
    asked, result = await _run(project, f"http://127.0.0.1:{two_hosts}/go", "deny")
    # The allowed first hop ran without a card; the redirect to localhost was asked, and refused.
    assert [r.input["url"] for r in asked] == [f"http://localhost:{two_hosts}/landed"]
    assert result[0]["is_error"] and "was not allowed" in result[0]["content"][0]["text"]
    asked, result = await _run(project, f"http://127.0.0.1:{two_hosts}/go", "allow")
    assert len(asked) == 1 and "landed here" in result[0]["content"][0]["text"]
