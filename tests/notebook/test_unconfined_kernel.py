"""No sandbox at all, in a real kernel: the once-per-session card, clicked as the browser clicks.

The kernel runs on a machine where neither backend can start (tests/no_sandbox_machine.py: an
outer bubblewrap refusing user namespaces as a container does, and Landlock's system calls
refused as on a kernel without it), so the real probes find none. Cells run in bypass mode:
there, before this card, every command but a read-only one was asked.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests import no_sandbox_machine
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel, agent_kernel
from tests.notebook.test_record_kernel import _outputs, _saved_text

pytestmark = pytest.mark.kernel

ASK_EACH, SESSION, NEVER = ("Ask for each command", "Run ordinary commands unconfined for this session",
                            "Never on this machine")


@pytest.fixture
def kernel(tmp_path):
    machine = tmp_path / "machine"
    problem = no_sandbox_machine.problem(machine)
    if problem is not None:
        pytest.skip(problem)
    with agent_kernel(sys.executable, tmp_path, env={"CODINGCODE_USER_DIR": str(tmp_path / "user")},
                      prefix=no_sandbox_machine.prefix(machine), headless_timeout=3.0) as k:
        k.user = tmp_path / "user"
        yield k


def _commands(k: Kernel, *commands: str) -> None:
    for number, command in enumerate(commands):
        k.fake.add(Reply([tool_use("execute_command", {"command": command}, id=f"c{len(k.fake.requests)}-{number}")]))
    k.fake.add(Reply([text("Finished.")]))


def _button(k: Kernel, label: str) -> str:
    return k.wait_for(lambda: (k.find(_model_name="ButtonModel", description=label, disabled=False) or [None])[-1],
                      30, f"button {label}")


def _render(k: Kernel, msg_id: str) -> None:
    root = k.wait_for(lambda: k.displayed_models(msg_id), 30, "the cell's widget")[0]
    k.render(root)


def _decisions(k: Kernel) -> list[dict]:
    path = k.project / ".codingcode" / "audit.jsonl"
    return [r for r in map(json.loads, path.read_text().splitlines())
            if r.get("event") == "decision" and r["tool"] == "execute_command"]


def test_the_kernel_has_no_sandbox(kernel):
    msg_id = kernel.execute("%agent status")
    kernel.reply(msg_id)
    out = kernel.text_output(msg_id)
    assert "Creating new namespace failed" in out and "no Landlock" in out, out


def test_run_ordinary_commands_unconfined_for_this_session(kernel):
    _commands(kernel, "ls", "touch one.txt", "touch two.txt")
    msg_id = kernel.execute("%%agent --mode bypass\nmake the files")
    _render(kernel, msg_id)
    kernel.click(_button(kernel, SESSION))
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    assert (kernel.project / "one.txt").exists() and (kernel.project / "two.txt").exists()
    assert len(kernel.with_class("codingcode-unconfined")) == 1, "one card for the session"
    assert kernel.with_class("codingcode-approval") == [], "no command card: bypass mode, unconfined for the session"
    ls, one, two = _decisions(kernel)
    assert ls["layer"] == "readonly" and one["layer"] == "sandbox" and one["by"] == "user"
    assert "ordinary commands run unconfined for this session" in _saved_text(kernel, msg_id)
    # The next cell of the session: no card again.
    _commands(kernel, "touch three.txt")
    msg_id = kernel.execute("%%agent --mode bypass\none more")
    assert kernel.reply(msg_id)["status"] == "ok"
    assert (kernel.project / "three.txt").exists() and len(kernel.with_class("codingcode-unconfined")) == 1


def test_ask_for_each_command_keeps_the_cards(kernel):
    # The control of the test above: the same cell, the other answer, a card per command.
    _commands(kernel, "touch one.txt", "touch two.txt")
    msg_id = kernel.execute("%%agent --mode bypass\nmake the files")
    _render(kernel, msg_id)
    kernel.click(_button(kernel, ASK_EACH))
    kernel.click(_button(kernel, "Allow"))
    kernel.wait_for(lambda: (kernel.project / "one.txt").exists(), 30, "one.txt")
    kernel.click(_button(kernel, "Deny"))
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    assert not (kernel.project / "two.txt").exists()
    assert len(kernel.with_class("codingcode-approval")) == 2
    assert [d["by"] for d in _decisions(kernel)] == ["user", "user"]


def test_never_on_this_machine_is_saved_in_the_user_settings(kernel):
    settings = kernel.user / "settings.json"
    _commands(kernel, "touch one.txt", "git status", "touch two.txt")
    msg_id = kernel.execute("%%agent --mode bypass\nmake the files")
    _render(kernel, msg_id)
    kernel.click(_button(kernel, NEVER))
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    assert json.loads(settings.read_text())["sandbox"]["failIfUnavailable"] is True
    assert not (kernel.project / "one.txt").exists() and not (kernel.project / "two.txt").exists()
    one, status, two = _decisions(kernel)
    assert one["decision"] == two["decision"] == "deny" and status["decision"] == "allow"  # read-only still runs
    msg_id = kernel.execute("%agent status")
    kernel.reply(msg_id)
    assert "failIfUnavailable" in kernel.text_output(msg_id)


def test_headless_run_says_in_one_line_what_applied(kernel):
    _commands(kernel, "touch one.txt", "touch two.txt")
    msg_id = kernel.execute("%%agent --mode bypass --approval-policy rules\nmake the files")
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    saved = "\n".join((out.get("data") or {}).get("text/plain", "") + out.get("text", "") for out in _outputs(kernel, msg_id))
    assert saved.count("No command sandbox here") == 1 and "Nobody could answer" in saved, saved[:3000]
    assert not (kernel.project / "one.txt").exists()
    assert kernel.with_class("codingcode-unconfined") == []
