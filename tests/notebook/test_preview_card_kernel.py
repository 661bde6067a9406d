"""The Preview button on a command's card, in a real kernel, clicked as the browser clicks (issue 49,
item 2): the card shows what the command would change while the project stays as it was; Allow then
runs it for real. A command the preview cannot show faithfully (it needs the network) gets a disabled
button saying why."""

from __future__ import annotations

import json

import pytest

from tests.engine.sandbox_helpers import SANDBOX_PROBLEM
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.notebook.test_kernel import _button, _render, kernel  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.kernel,
    pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=f"no sandbox backend here: {SANDBOX_PROBLEM}"),
]


def _html(kernel, css: str) -> str:
    return "".join(kernel.widgets[cid].get("value", "") for cid in kernel.with_class(css))


def test_preview_shows_the_change_and_allow_makes_it(kernel):
    work = kernel.project / "work"
    work.mkdir()
    (work / "notes.txt").write_text("first\n")
    (work / "old.txt").write_text("bye\n")
    command = "cd work && echo added >> notes.txt && rm old.txt && echo made > new.txt && echo finished"
    kernel.fake.add(Reply([tool_use("execute_command", {"command": command}, id="toolu_cmd")]), Reply([text("Done.")]))
    msg_id = kernel.execute("%%agent\nchange the notes")
    _render(kernel, msg_id)
    preview = _button(kernel, "Preview")
    assert kernel.widgets[preview].get("disabled") is False
    kernel.click(preview)
    shown = kernel.wait_for(
        lambda: (
            'codingcode-preview"' in _html(kernel, "codingcode-preview-view")
            and _html(kernel, "codingcode-preview-view")
        ),
        60,
        "the preview's result",
    )
    assert "exit code 0" in shown and "1 created, 1 modified, 1 deleted" in shown, shown
    assert "work/new.txt" in shown and "work/old.txt" in shown and "added" in shown and "finished" in shown, shown
    # The project is untouched until Allow.
    assert (
        (work / "notes.txt").read_text() == "first\n"
        and (work / "old.txt").exists()
        and not (work / "new.txt").exists()
    )
    kernel.click(_button(kernel, "Allow"))
    assert kernel.reply(msg_id, timeout=90)["status"] == "ok", kernel.text_output(msg_id)
    assert (work / "notes.txt").read_text() == "first\nadded\n" and not (work / "old.txt").exists()
    assert (work / "new.txt").read_text() == "made\n"
    audit = [json.loads(line) for line in (kernel.project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    previews = [r for r in audit if r["event"] == "preview"]
    assert len(previews) == 1 and previews[0]["exit_code"] == 0, previews
    assert {f["path"]: f["change"] for f in previews[0]["files"]} == {
        "work/new.txt": "created",
        "work/notes.txt": "modified",
        "work/old.txt": "deleted",
    }
    assert audit.index(previews[0]) < max(i for i, r in enumerate(audit) if r["event"] == "decision")


def test_a_command_that_needs_the_network_says_why_it_cannot_be_previewed(kernel):
    kernel.fake.add(
        Reply([tool_use("execute_command", {"command": "pip install requests"}, id="toolu_pip")]), Reply([text("Ok.")])
    )
    msg_id = kernel.execute("%%agent\ninstall it")
    _render(kernel, msg_id)
    preview = _button(kernel, "Preview")
    kernel.wait_for(lambda: "Preview unavailable" in _html(kernel, "codingcode-preview-view"), 10, "the reason")
    assert kernel.widgets[preview].get("disabled") is True
    assert "network" in _html(kernel, "codingcode-preview-view") and "network" in kernel.widgets[preview]["tooltip"]
    kernel.click(_button(kernel, "Deny"))
    assert kernel.reply(msg_id, timeout=60)["status"] == "ok", kernel.text_output(msg_id)
