"""Editing the open notebook, in a real kernel, with the page played over the kernel protocol.

The page (tests/notebook/fake_page.py) does what the extension does in the browser; the browser
itself is tested in tests/e2e/test_notebook_edits.py. Here: what happens without a page, the
review answers and a conflict with the person's typing, rules that allow edits without review,
run_cells judged and its outputs in the cell, and undo.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.fake_page import FakePage
from tests.notebook.kernel_harness import Kernel

pytestmark = pytest.mark.kernel


@pytest.fixture
def kernel(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    user = tmp_path / "user"
    user.mkdir()
    fake = FakeAnthropic().start()
    env = {
        "ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
        "CODINGCODE_USER_DIR": str(user),
    }
    k = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    k.fake, k.project, k.user = fake, project, user
    reply = k.run("%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0\n%config CodingCode.headless_timeout = 4.0")
    assert reply["status"] == "ok"
    try:
        yield k
    finally:
        k.close()
        fake.stop()


def _cells(*sources: tuple[str, str]) -> list[dict]:
    return [{"id": cell_id, "cell_type": "code", "source": source, "outputs": [], "execution_count": None}
            for cell_id, source in sources]


def _results(k: Kernel) -> list[str]:
    found = []
    for request in k.fake.requests:
        for message in request.get("messages", []):
            if message.get("role") == "user" and isinstance(message.get("content"), list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        content = block["content"]
                        found.append("\n".join(p.get("text", "") for p in content if isinstance(p, dict)))
    return found


def _run_turn(k: Kernel, page: FakePage | None, prompt: str = "go", until=None, timeout: float = 60) -> str:
    msg_id = k.execute(f"%%agent\n{prompt}")

    def done() -> bool:
        if page is not None:
            page.step()
        if until is not None:
            until()
        return k._idle(msg_id)

    k.wait_for(done, timeout, "the turn to end")
    return msg_id


def _button(k: Kernel, label: str) -> str | None:
    return (k.find(_model_name="ButtonModel", description=label) or [None])[0]


def test_without_the_extension_the_tools_say_so_and_read_notebook_falls_back(kernel):
    kernel.fake.add(
        Reply([tool_use("edit_notebook", {"changes": [{"action": "insert", "source": "print(1)"}]})]),
        Reply([tool_use("read_notebook", {})]),
        Reply([text("ok")]),
    )
    # No page answers the kernel's ping (a terminal, nbconvert, VS Code): nothing pretends.
    _run_turn(kernel, None, until=lambda: (lambda b: b and kernel.click(b))(_button(kernel, "Allow")))
    edit, read = _results(kernel)[-2:]
    assert edit.startswith("Cannot edit the notebook: the live notebook cannot be reached") and "insert_cell" in edit
    # read_notebook went on to the saved-file path (no file is known for this kernel either).
    assert "No notebook is known for this kernel" in read


def test_review_answers_reach_the_model_and_a_cell_typed_in_since_is_a_conflict(kernel):
    page = FakePage(kernel, _cells(("a", "x = 1"), ("b", "y = 2")))
    kernel.fake.add(
        Reply([tool_use("read_notebook", {})]),
        Reply([tool_use("edit_notebook", {"changes": [
            {"action": "replace", "cell_id": "a", "source": "x = 10"},
            {"action": "insert", "cell_id": "b", "source": "print(x + y)"},
            {"action": "replace", "cell_id": "b", "source": "y = 20"},
            {"action": "delete", "cell_id": "a"},
        ]})]),
        Reply([text("done")]),
    )

    def person() -> None:
        proposal = next((r for r in page.requests if r["op"] == "propose"), None)
        if proposal is not None and not page.answers:
            assert proposal["review"] is True  # default mode, no rule: the person reviews
            page.cells[1]["source"] = "y = 2  # the person typed here meanwhile"
            page.answers.update({"c1": "accepted", "c2": "accepted", "c3": "accepted", "c4": "rejected"})

    _run_turn(kernel, page, until=person)
    result = _results(kernel)[-1]
    assert "replace cell a: accepted by the person" in result
    assert "insert a new code cell after cell b" in result and "new1" in result
    assert "replace cell b: not done, the cell changed since the agent read it" in result
    assert "delete cell a: rejected by the person" in result
    assert [cell["source"] for cell in page.cells] == ["x = 10", "y = 2  # the person typed here meanwhile", "print(x + y)"]
    # No card: the person answered on the cells, and the audit says so.
    assert _button(kernel, "Allow") is None
    audit = [json.loads(line) for line in (kernel.project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    edits = [record for record in audit if record.get("tool") == "edit_notebook" and record.get("by")]
    assert edits and all(record["by"] == "in_place" for record in edits), edits


def test_an_allow_rule_applies_edits_without_review_and_undo_puts_them_back(kernel):
    (kernel.user / "settings.json").write_text(json.dumps({"permissions": {"allow": ["edit_notebook"]}}))
    page = FakePage(kernel, _cells(("a", "x = 1")))
    kernel.fake.add(
        Reply([tool_use("read_notebook", {})]),
        Reply([tool_use("edit_notebook", {"changes": [
            {"action": "replace", "cell_id": "a", "source": "x = 2"},
            {"action": "insert", "source": "print(x)", "cell_type": "code"},
        ]})]),
        Reply([text("done")]),
    )
    _run_turn(kernel, page)
    proposal = next(r for r in page.requests if r["op"] == "propose")
    assert proposal["review"] is False
    assert [cell["source"] for cell in page.cells] == ["x = 2", "print(x)"]
    assert "applied (allowed without review)" in _results(kernel)[-1]

    msg_id = kernel.execute("%agent undo --yes")
    kernel.wait_for(lambda: (page.step(), kernel._idle(msg_id))[1], 30, "undo")
    kernel.wait_for(lambda: (page.step(), [cell["source"] for cell in page.cells] == ["x = 1"])[1], 10, "cells restored")
    assert "Restored 2 cells in page.ipynb" in kernel.text_output(msg_id), kernel.text_output(msg_id)


def test_run_cells_is_judged_on_the_cells_code_and_puts_outputs_in_the_cell(kernel):
    page = FakePage(kernel, _cells(("a", "y = 6 * 7\nprint('hi from the cell')\ny"), ("b", "%%agent\nrun it")))
    kernel.fake.add(Reply([tool_use("run_cells", {"cell_id": "a"})]), Reply([text("done")]))
    seen_code = []

    def person() -> None:
        allow = _button(kernel, "Allow")
        if allow and not seen_code:
            # The card shows the cell's code, read from the page before anyone decided.
            seen_code.extend(state for state in kernel.widgets.values() if "y = 6 * 7" in json.dumps(state))
            kernel.click(allow)

    _run_turn(kernel, page, until=person)
    assert seen_code, "the approval card did not show the cell's code"
    outputs = page.cells[0]["outputs"]
    assert {"output_type": "stream", "name": "stdout", "text": "hi from the cell\n"} in outputs
    assert any(o["output_type"] == "execute_result" and o["data"]["text/plain"] == "42" for o in outputs)
    result = _results(kernel)[-1]
    assert "[stdout]\nhi from the cell" in result and "[result] 42" in result


def test_run_cells_never_runs_agent_cells(kernel):
    page = FakePage(kernel, _cells(("a", "z = 1"), ("b", "%%agent\nagain")))
    kernel.fake.add(Reply([tool_use("run_cells", {"cell_id": "b"})]), Reply([text("done")]))
    _run_turn(kernel, page)
    assert "That is an %%agent cell" in _results(kernel)[-1]


def test_undo_puts_the_cells_back_after_a_kernel_restart(kernel):
    """The accepted edits are kept beside the turn's checkpoint, with their notebook: a restart loses nothing."""
    (kernel.user / "settings.json").write_text(json.dumps({"permissions": {"allow": ["edit_notebook"]}}))
    page = FakePage(kernel, _cells(("a", "x = 1"), ("b", "y = 1")), path="work/analysis.ipynb")
    kernel.fake.add(
        Reply([tool_use("read_notebook", {})]),
        Reply([tool_use("edit_notebook", {"changes": [{"action": "replace", "cell_id": "a", "source": "x = 2"}]})]),
        Reply([tool_use("edit_notebook", {"changes": [{"action": "delete", "cell_id": "b"}]})]),
        Reply([text("done")]),
    )
    _run_turn(kernel, page)
    assert [cell["source"] for cell in page.cells] == ["x = 2"]

    kernel.km.restart_kernel(now=True)
    kernel.kc.wait_for_ready(timeout=60)
    page.comm_id = None  # the page's comms die with the kernel, as in the browser
    # Another notebook's page on the same kernel must not receive the undo.
    other = FakePage(kernel, _cells(("a", "x = 2")), path="other.ipynb")
    assert kernel.run("%load_ext codingcode_jupyter")["status"] == "ok"
    msg_id = kernel.execute("%agent undo --yes")
    kernel.wait_for(lambda: (page.step(), other.step(), kernel._idle(msg_id))[2], 30, "undo")
    kernel.wait_for(lambda: (page.step(), other.step(), [c["source"] for c in page.cells] == ["x = 1", "y = 1"])[2],
                    10, "cells restored")
    out = kernel.text_output(msg_id)
    assert "Restored 2 cells in work/analysis.ipynb" in out, out
    assert "cell a: its source" in out and "cell b put back at position 2" in out, out
    assert [c["source"] for c in other.cells] == ["x = 2"]
    assert not any(r["op"] == "propose" for r in other.requests)
    # Undone once: a second undo does not put them back again.
    msg_id = kernel.execute("%agent undo --yes")
    kernel.wait_for(lambda: (page.step(), kernel._idle(msg_id))[1], 30, "second undo")
    assert "Restored" not in kernel.text_output(msg_id)


def test_undo_puts_back_the_variables_run_cells_changed(kernel):
    """Issue 49: cells the agent runs change the person's variables; %agent undo restores them."""
    kernel.ok("scores = {'a': 1}\nrate = 0.5")
    page = FakePage(kernel, _cells(("a", "scores['b'] = 2\nrate = 9.0\nfresh = 1"), ("b", "%%agent\nrun it")))
    kernel.fake.add(Reply([tool_use("run_cells", {"cell_id": "a"})]), Reply([text("done")]))
    _run_turn(kernel, page, until=lambda: (lambda b: b and kernel.click(b))(_button(kernel, "Allow")))
    assert "['a', 'b'] 9.0 1" in kernel.ok("print(sorted(scores), rate, fresh)")["output"]  # the cell ran
    done = kernel.ok("%agent undo --yes")["output"]
    assert "variables restored: rate, scores; removed: fresh" in done, done
    assert "['a'] 0.5 False" in kernel.ok("print(sorted(scores), rate, 'fresh' in dir())")["output"]
