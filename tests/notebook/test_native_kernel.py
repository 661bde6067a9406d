"""Notebook-native powers in a real kernel, through the local Messages API server.

The model (scripted) looks at live variables, the history and the last error, runs code in
the user's namespace after an Allow click, proposes a cell, fixes the last error; then a
turn's file changes are undone after a kernel restart; and an interrupt stops run_python.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.kernel_harness import Kernel

pytestmark = pytest.mark.kernel

SETUP = "%load_ext codingcode_jupyter\n%config CodingCode.frontend_wait = 1.0\n%config CodingCode.headless_timeout = 4.0"


@pytest.fixture
def kernel(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    fake = FakeAnthropic().start()
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test"}
    k = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    k.fake = fake
    k.project = project
    k.ok(SETUP)
    try:
        yield k
    finally:
        k.close()
        fake.stop()


def click_allow(k: Kernel, clicked: set[str], msg_id: str) -> None:
    def fresh():
        return [c for c in k.find(_model_name="ButtonModel", description="Allow") if c not in clicked and not k.widgets[c].get("disabled")]

    button = k.wait_for(lambda: fresh(), 30, "a new Allow button")[0]
    clicked.add(button)
    k.click(button)


def tool_results(request: dict) -> dict[str, str]:
    """tool_use_id -> the text of its result, from the last user message of a request."""
    out = {}
    for block in request["messages"][-1]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            out[block["tool_use_id"]] = "\n".join(c.get("text", "") for c in block["content"])
    return out


def all_html(k: Kernel) -> str:
    return "".join(s.get("value", "") for s in k.widgets.values() if isinstance(s.get("value"), str))


def test_variables_history_run_python_insert_cell_and_fix(kernel):
    kernel.ok("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})\ncounter = 0")
    failing = kernel.execute("def divide(a, b):\n    return a / b\n\nresult = divide(1, 0)")
    assert kernel.reply(failing)["status"] == "error"

    kernel.fake.add(
        Reply([
            tool_use("list_variables", {}, id="lv"),
            tool_use("inspect_variable", {"name": "df"}, id="iv"),
            tool_use("notebook_history", {"cells": 5}, id="nh"),
        ]),
        # The code runs in a confined copy of the kernel: the counter comes back because it is kept.
        Reply([tool_use("run_python", {"code": "counter += 41\nprint('side effect')\ncounter + 1",
                                       "keep": ["counter"]}, id="rp")]),
        Reply([tool_use("insert_cell", {"code": "result = divide(1, 1)"}, id="ic")]),
        Reply([text("Done.")]),
    )
    msg_id = kernel.execute("%%agent\nLook at {df} and {{literal}}, then bump the counter.")
    root = kernel.wait_for(lambda: kernel.displayed_models(msg_id), 30, "the cell's widget")[0]
    kernel.render(root)
    clicked: set[str] = set()
    click_allow(kernel, clicked, msg_id)  # run_python
    click_allow(kernel, clicked, msg_id)  # insert_cell
    reply = kernel.reply(msg_id)
    assert reply["status"] == "ok", kernel.text_output(msg_id)

    requests = kernel.fake.requests
    prompt = requests[0]["messages"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
    assert "`df` (pandas.DataFrame, 3×2" in prompt and "{literal}" in prompt
    offered = {t["name"] for t in requests[0]["tools"]}
    assert {"list_variables", "inspect_variable", "notebook_history", "run_python", "insert_cell"} <= offered

    looked = tool_results(requests[1])
    assert "df: pandas.DataFrame" in looked["lv"] and "counter: int" in looked["lv"]
    assert "3 rows × 2 columns" in looked["iv"] and "a: int64" in looked["iv"]
    assert "ZeroDivisionError: division by zero" in looked["nh"] and "return a / b" in looked["nh"]

    ran = tool_results(requests[2])["rp"]
    assert "[stdout]\nside effect" in ran and "[result] 42" in ran
    # The approval card showed the code that was about to run.
    assert "counter += 41" in all_html(kernel)

    assert "Proposed a new cell below" in tool_results(requests[3])["ic"]
    payloads = [p for p in reply.get("payload", []) if p.get("source") == "set_next_input"]
    assert payloads == [{"source": "set_next_input", "text": "result = divide(1, 1)", "replace": False}]

    assert "41" in kernel.ok("print(counter)")["output"]

    # %agent fix: the failing cell and its traceback go to the model.
    kernel.fake.add(Reply([text("The divisor is zero.")]))
    kernel.ok("%agent fix")
    fix = json.dumps(kernel.fake.requests[-1]["messages"][-1]["content"], ensure_ascii=False)
    assert "Fix the error in cell" in fix and "divide(1, 0)" in fix and "ZeroDivisionError" in fix


def test_undo_after_kernel_restart_restores_files_and_audits(kernel):
    (kernel.project / "app.py").write_text("def greet():\n    return 'hi'\n")
    kernel.fake.add(
        Reply([tool_use("read_file", {"path": "app.py"}, id="r1")]),
        Reply([
            tool_use("edit_file", {"path": "app.py", "old_string": "'hi'", "new_string": "'hello'"}, id="e1"),
            tool_use("write_file", {"path": "docs/notes.md", "content": "# Notes\n"}, id="w1"),
        ]),
        Reply([text("Changed.")]),
    )
    kernel.ok("%%agent --mode acceptEdits\nChange the greeting and add notes.")
    assert "'hello'" in (kernel.project / "app.py").read_text()
    assert (kernel.project / "docs" / "notes.md").exists()

    kernel.km.restart_kernel(now=True)
    kernel.kc.wait_for_ready(timeout=60)
    kernel.ok(SETUP)

    dry = kernel.ok("%agent undo --dry-run")["output"]
    assert "-    return 'hello'" in dry and "+    return 'hi'" in dry and "delete" in dry
    assert "'hello'" in (kernel.project / "app.py").read_text()

    done = kernel.ok("%agent undo --yes")["output"]
    assert "restored" in done
    assert (kernel.project / "app.py").read_text() == "def greet():\n    return 'hi'\n"
    assert not (kernel.project / "docs" / "notes.md").exists()
    audit = [json.loads(line) for line in (kernel.project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["event"] == "undo" and len(audit[-1]["files"]) == 2

    again = kernel.execute("%agent undo")
    assert kernel.reply(again)["status"] == "error" and "Nothing to undo" in kernel.text_output(again)

    # Undo within the same session: the model hears of it with the next prompt.
    kernel.fake.add(Reply([tool_use("write_file", {"path": "x.txt", "content": "x\n"}, id="w2")]), Reply([text("ok")]))
    kernel.ok("%%agent --mode acceptEdits\nWrite x.txt")
    kernel.ok("%agent undo --yes")
    assert not (kernel.project / "x.txt").exists()
    kernel.fake.add(Reply([text("Understood.")]))
    kernel.ok("%%agent\nWhat now?")
    sent = json.dumps(kernel.fake.requests[-1]["messages"][-1]["content"])
    assert "the user undid your changes" in sent and "x.txt" in sent and "What now?" in sent


def test_interrupt_stops_run_python_and_the_kernel_goes_on(kernel):
    (kernel.project / "work").mkdir()
    marker = kernel.project / "work" / "started"
    code = f"import time\nopen({str(marker)!r}, 'w').close()\ntime.sleep(60)\nslept = True"
    kernel.fake.add(Reply([tool_use("run_python", {"code": code}, id="rp")]), Reply([text("never")]))
    msg_id = kernel.execute("%%agent --mode bypass\nSleep a minute.")
    kernel.wait_for(marker.exists, 30, "run_python to start")
    started = time.monotonic()
    kernel.km.interrupt_kernel()
    reply = kernel.reply(msg_id, timeout=20)
    assert time.monotonic() - started < 10
    assert reply["status"] == "error" and reply["ename"] == "AgentInterrupted", kernel.text_output(msg_id)
    out = kernel.ok("print('slept' in dir())")["output"]
    assert "False" in out
