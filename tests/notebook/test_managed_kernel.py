"""The organisation's managed settings in a real kernel: the person sees the policy, cannot switch to a
mode it forbids, and a card about a call it asks about offers no "Always allow"."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.notebook.kernel_harness import agent_kernel

pytestmark = pytest.mark.kernel

POLICY = {"permissions": {"ask": ["Bash(pytest:*)"], "deny": ["Bash(curl:*)"],
                          "disableBypassPermissionsMode": "disable"},
          "availableModels": ["claude-test"]}


@pytest.fixture
def policy() -> Path:
    path = Path(os.environ["CODINGCODE_MANAGED_DIR"]) / "managed-settings.json"
    path.write_text(json.dumps(POLICY))
    return path


def test_the_policy_shows_holds_the_mode_and_offers_no_always(tmp_path, policy):
    with agent_kernel(sys.executable, tmp_path) as k:
        # The project would allow pytest; the policy asks about it every time.
        (k.project / ".codingcode").mkdir()
        (k.project / ".codingcode" / "settings.json").write_text(json.dumps(
            {"permissions": {"allow": ["execute_command(pytest *)"]}}))
        out = k.ok("%agent mode bypass")["output"]
        assert "The mode stays default" in out and "disableBypassPermissionsMode" in out
        assert len(out.strip().splitlines()) == 1, out
        status = k.ok("%agent status")["output"]
        assert "policy" in status and str(policy) in status
        doctor = k.ok("%agent doctor")["output"]
        assert "Managed policy" in doctor and "allowManaged" not in doctor.split("Managed policy")[0]

        k.fake.add(Reply([tool_use("execute_command", {"command": "pytest -q"})]), Reply([text("Left it.")]))
        cell = k.execute("%%agent\nrun the tests")
        allow = k.wait_for(lambda: (k.find(_model_name="ButtonModel", description="Allow", disabled=False) or [None])[-1],
                           60, "the card's Allow button")
        # The card makes all four buttons (their models arrive one by one) and shows two.
        always = k.wait_for(lambda: k.find(_model_name="ButtonModel", description="Always allow"), 30, "Always allow")
        # The card's row of buttons (its model may arrive just after the buttons').
        row = k.wait_for(lambda: next((state for state in k.widgets.values()
                                       if f"IPY_MODEL_{allow}" in (state.get("children") or [])), None), 30, "the row")
        assert always and not any(f"IPY_MODEL_{cid}" in row["children"] for cid in always)
        k.click(k.find(_model_name="ButtonModel", description="Deny", disabled=False)[-1])
        assert k.reply(cell, 60)["status"] == "ok"

        # A model the policy does not list is not sent to.
        cell = k.execute("%%agent --model claude-opus-4-5\nhello")
        k.reply(cell, 60)
        assert "availableModels" in k.text_output(cell)
        assert all(request["model"] != "claude-opus-4-5" for request in k.fake.requests)
