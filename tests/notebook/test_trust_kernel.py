"""The trust boundary in a real kernel: a cloned project asks, item by item, before it loosens anything."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel

pytestmark = pytest.mark.kernel


def _clone(project: Path, markers: Path) -> None:
    """What a repository can commit: allow everything in bypass, a hook and an MCP server that write markers."""
    hooks = project / ".codingcode" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "approve.py").write_text(
        f"import json, pathlib\npathlib.Path({str(markers / 'hook.txt')!r}).write_text('ran')\n"
        "print(json.dumps({'decision': 'continue'}))\n")
    (project / ".codingcode" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["execute_command(*)"], "defaultMode": "bypass"},
        "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": f"{sys.executable} .codingcode/hooks/approve.py"}]}]},
    }))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"helper": {
        "command": sys.executable, "args": ["-c", f"open({str(markers / 'server.txt')!r}, 'w').write('ran')"]}}}))
    agents = project / ".codingcode" / "agents"
    agents.mkdir()
    (agents / "yolo.md").write_text("---\ndescription: does anything\npermission_mode: bypass\n---\nGo.\n")


@pytest.fixture
def cloned(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    markers = tmp_path / "markers"
    markers.mkdir()
    _clone(project, markers)
    fake = FakeAnthropic().start()
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
           # As a person who just cloned it: nothing trusted by the environment.
           "CODINGCODE_TRUST": "", "CODINGCODE_USER_DIR": str(tmp_path / "user")}
    kernel = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    kernel.fake, kernel.project, kernel.markers = fake, project, markers
    reply = kernel.run("%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0\n"
                       "%config CodingCode.headless_timeout = 3.0")
    assert reply["status"] == "ok"
    yield kernel
    kernel.close()
    fake.stop()


def _button(k: Kernel, label: str) -> str:
    return k.wait_for(lambda: (k.find(_model_name="ButtonModel", description=label, disabled=False) or [None])[-1],
                      30, f"button {label}")


def _render_all(k: Kernel, msg_id: str) -> None:
    for model in k.wait_for(lambda: k.displayed_models(msg_id), 30, "the cell's widgets"):
        k.render(model)


def _trust_card_text(k: Kernel, index: int = -1) -> str:
    cards = k.with_class("codingcode-trust")
    if not cards:
        return ""
    children = [c.removeprefix("IPY_MODEL_") for c in k.widgets[cards[index]].get("children", [])]
    return "".join(k.widgets[c].get("value", "") for c in children if c in k.widgets)


def _command_turn(k: Kernel, command: str, call_id: str) -> None:
    k.fake.add(Reply([tool_use("execute_command", {"command": command}, id=call_id)]), Reply([text("done")]))


def test_the_card_lists_everything_and_nothing_runs_until_trusted(cloned):
    k = cloned
    _command_turn(k, "echo one > one.txt", "c1")
    first = k.execute("%%agent\nrun it")
    _render_all(k, first)
    not_now = _button(k, "Not now")
    card = _trust_card_text(k)
    # A profile's mode looser than the session's could loosen it: it is asked about too.
    for expected in ("execute_command(*)", "bypass", "approve.py", "MCP server <code>helper</code>", ".mcp.json",
                     ".codingcode/settings.json", "agent profile <code>yolo</code>", "yolo.md"):
        assert expected in card, (expected, card)
    assert not (k.markers / "hook.txt").exists() and not (k.markers / "server.txt").exists()
    k.click(not_now)
    # Untrusted: the command is asked (no bypass, no allow rule); the hook did not run.
    k.click(_button(k, "Deny"))
    assert k.reply(first)["status"] == "ok"
    assert not (k.project / "one.txt").exists()
    assert not (k.markers / "hook.txt").exists() and not (k.markers / "server.txt").exists()

    # %agent trust asks again; trusting applies the hook, the server and the mode.
    asked = k.execute("%agent trust")
    _render_all(k, asked)
    k.click(_button(k, "Trust this project"))
    assert k.reply(asked)["status"] == "ok"
    k.wait_for(lambda: (k.markers / "server.txt").exists(), 20, "the trusted server to start")
    _command_turn(k, "echo two > two.txt", "c2")
    second = k.execute("%%agent\nrun it again")
    assert k.reply(second)["status"] == "ok", k.text_output(second)
    assert (k.project / "two.txt").exists()  # bypass and the allow rule apply: no card
    assert (k.markers / "hook.txt").exists()
    audit = [json.loads(line) for line in (k.project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    assert [r["decision"] for r in audit if r.get("event") == "trust"] == ["not now", "trust"]

    # Editing the hook script brings the card back, for it alone.
    script = k.project / ".codingcode" / "hooks" / "approve.py"
    script.write_text(script.read_text() + "# edited\n")
    _command_turn(k, "echo three > three.txt", "c3")
    third = k.execute("%%agent --new\nonce more")
    _render_all(k, third)
    _button(k, "Trust this project")
    texts = _trust_card_text(k)
    assert "approve.py" in texts and "execute_command(*)" not in texts and "helper" not in texts
    k.click(_button(k, "Trust this project"))
    assert k.reply(third)["status"] == "ok"


def test_headless_the_project_stays_untrusted_with_one_line(cloned):
    k = cloned
    _command_turn(k, "echo one > one.txt", "c1")
    msg = k.execute("%%agent\nrun it")  # nobody renders the widgets: as under nbconvert
    assert k.reply(msg, timeout=60)["status"] == "ok"
    output = k.text_output(msg)
    assert output.count("nobody could be asked here, so they are ignored") == 1, output
    assert not (k.project / "one.txt").exists()
    assert not (k.markers / "hook.txt").exists() and not (k.markers / "server.txt").exists()
