"""Secrets never leave by value, in a real kernel (issue 45, item 5): run_python prints a token from
the kernel's environment; the model is sent a marker, and the cell (what the saved notebook keeps)
shows none of it. The control, a value of the same shape nobody made known, goes through."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel
from tests.notebook.test_native_kernel import SETUP, all_html, click_allow, tool_results

pytestmark = pytest.mark.kernel

TOKEN = "ghp_" + secrets.token_urlsafe(27)
CONTROL = "ghp_" + secrets.token_urlsafe(27)


@pytest.fixture
def kernel(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    # Code the agent runs gets the variables commands get: the token is passed as a person passes one.
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"sandbox": {"env": ["GITHUB_TOKEN"]}}))
    fake = FakeAnthropic().start()
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
           "GITHUB_TOKEN": TOKEN}
    k = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    k.fake = fake
    k.ok(SETUP)
    try:
        yield k
    finally:
        k.close()
        fake.stop()


def test_run_python_printing_a_token_from_the_environment(kernel):
    code = f"import os\nprint(os.environ['GITHUB_TOKEN'])\nprint('{CONTROL}')"
    kernel.fake.add(Reply([tool_use("run_python", {"code": code}, id="rp")]), Reply([text("Done.")]))
    msg_id = kernel.execute("%%agent\nWhat is my token?")
    root = kernel.wait_for(lambda: kernel.displayed_models(msg_id), 30, "the cell's widget")[0]
    kernel.render(root)
    click_allow(kernel, set(), msg_id)
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    ran = tool_results(kernel.fake.requests[1])["rp"]
    assert "[redacted: GITHUB_TOKEN]" in ran and CONTROL in ran and TOKEN not in ran
    shown = all_html(kernel) + kernel.text_output(msg_id)
    assert TOKEN not in shown and CONTROL in shown
