"""The cell as a document, in a real kernel: the static record, Stop, one "Interrupted." after an interrupt,
policies, projects, login, subcommands that display wherever they stand."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.notebook.test_kernel import _audit, _button, _render, _write_script, kernel  # noqa: F401 (fixture)

pytestmark = pytest.mark.kernel


def _outputs(kernel, msg_id: str) -> list[dict]:
    """The cell's outputs as a saved notebook would keep them: displays replaced by their updates."""
    shown: dict[str, dict] = {}
    order: list[str] = []
    for m in kernel.messages:
        content = m["content"]
        if m["msg_type"] != "update_display_data" and m["parent_header"].get("msg_id") != msg_id:
            continue
        # An update may come from a click after the cell (its parent is the click): matched by display id.
        if m["msg_type"] in ("display_data", "execute_result", "stream", "error"):
            key = (content.get("transient") or {}).get("display_id") or f"{len(order)}"
            shown[key] = {"type": m["msg_type"], **content}
            order.append(key)
        elif m["msg_type"] == "update_display_data":
            key = content["transient"]["display_id"]
            if key in shown:
                shown[key] = {"type": "display_data", **content}
    return [shown[k] for k in dict.fromkeys(order)]


def _saved_text(kernel, msg_id: str) -> str:
    parts = []
    for out in _outputs(kernel, msg_id):
        data = out.get("data") or {}
        parts += [out.get("text", ""), data.get("text/plain", ""), data.get("text/html", ""), "\n".join(out.get("traceback", []))]
    return "\n".join(parts)


def test_the_turn_leaves_a_static_record_in_place_of_its_widgets(kernel):
    _write_script(kernel)
    msg_id = kernel.execute("%%agent\nWrite notes.txt")
    _render(kernel, msg_id)
    kernel.click(_button(kernel, "Allow"))
    assert kernel.reply(msg_id)["status"] == "ok"
    outputs = _outputs(kernel, msg_id)
    assert len(outputs) == 1
    data = outputs[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" not in data  # nothing needs a widget manager any more
    html, plain = data["text/html"], data["text/plain"]
    for page in (html, plain):
        assert "All done." in page and "allowed by you" in page and "hello" in page  # answer, decision, diff
    assert "<script" not in html
    # The live widgets are closed; the root keeps only the record (for a page reloaded mid-turn).
    closed = {m["content"]["comm_id"] for m in kernel.messages if m["msg_type"] == "comm_close"}
    assert set(kernel.with_class("codingcode-approval")) <= closed and set(kernel.with_class("codingcode-tool")) <= closed
    root = kernel.widgets[kernel.displayed_models(msg_id)[0]]
    (child,) = [c.removeprefix("IPY_MODEL_") for c in root["children"]]
    assert "codingcode-final" in kernel.widgets[child]["_dom_classes"] and "All done." in kernel.widgets[child]["value"]


def test_stop_ends_a_turn_waiting_for_the_model(kernel):
    kernel.fake.add(Reply([text("too late")], delay=6.0))
    msg_id = kernel.execute("%%agent\nThink slowly")
    _render(kernel, msg_id)
    stop = _button(kernel, "Stop")
    kernel.wait_for(lambda: "thinking" in "".join(kernel.widgets[c].get("value", "") for c in kernel.with_class("codingcode-thinking")),
                    10, "the thinking indicator")
    start = time.monotonic()
    kernel.click(stop)
    reply = kernel.reply(msg_id, timeout=20)
    assert reply["status"] == "ok"  # Stop ends the turn; the kernel's interrupt (below) ends the run
    assert time.monotonic() - start < 3  # well before the model would have answered
    saved = _saved_text(kernel, msg_id)
    assert "Interrupted." not in saved and "stopped before it finished" in saved and "too late" not in saved
    kernel.fake.script.clear()
    kernel.fake.add(Reply([text("Next turn.")]))
    second = kernel.execute("%%agent\nAgain")
    assert kernel.reply(second)["status"] == "ok", kernel.text_output(second)


def test_stop_ends_a_running_command_and_the_audit_says_so(kernel):
    started = kernel.project / "started.txt"
    kernel.fake.add(Reply([tool_use("execute_command", {"command": f"touch {started}; sleep 30"}, id="toolu_sleep")]))
    msg_id = kernel.execute("%%agent --mode bypass\nRun it")
    _render(kernel, msg_id)
    kernel.wait_for(started.exists, 30, "the command to start")
    kernel.wait_for(lambda: "running" in "".join(kernel.widgets[c].get("value", "") for c in kernel.with_class("codingcode-tool")),
                    10, "the running row")
    kernel.click(_button(kernel, "Stop"))
    reply = kernel.reply(msg_id, timeout=20)
    assert reply["status"] == "ok"
    outcomes = [r for r in _audit(kernel) if r.get("event") == "outcome" and r.get("tool_use_id") == "toolu_sleep"]
    assert outcomes and outcomes[-1]["outcome"] == "interrupted"
    assert "interrupted" in _saved_text(kernel, msg_id)


def test_one_interrupted_line_after_an_interrupt(kernel):
    _write_script(kernel)
    msg_id = kernel.execute("%%agent\nWrite notes.txt")
    _render(kernel, msg_id)
    _button(kernel, "Allow")
    kernel.km.interrupt_kernel()
    assert kernel.reply(msg_id, timeout=20)["ename"] == "AgentInterrupted"
    saved = _saved_text(kernel, msg_id)
    assert saved.count("Interrupted.") == 1, saved
    assert "interrupted while waiting for an answer" in saved


def test_headless_approval_times_out_as_nobody_and_the_record_says_so(kernel):
    _write_script(kernel)
    msg_id = kernel.execute("%%agent\nWrite notes.txt")  # nothing renders it, stdin not allowed
    assert kernel.reply(msg_id, timeout=30)["status"] == "ok"
    decision = [r for r in _audit(kernel) if r.get("event") == "decision"][-1]
    assert decision["by"] == "timeout" and "declined" not in decision["reason"]
    saved = _saved_text(kernel, msg_id)
    assert "nobody answered in time" in saved and "Nobody was there to answer" in saved
    assert "denied by you" not in saved


@pytest.mark.parametrize("policy, runs", [("rules", True), ("deny", False)])
def test_an_approval_policy_decides_without_a_person(kernel, policy, runs):
    settings = kernel.project / ".codingcode" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"allow": ["execute_command(touch made.txt)"]}}))
    # A scheduled run the person set up trusts the project's rules (nobody is there to trust them).
    assert kernel.run("import os; os.environ['CODINGCODE_TRUST'] = '1'")["status"] == "ok"
    kernel.fake.add(Reply([tool_use("execute_command", {"command": "touch made.txt"}, id="toolu_e")]),
                    Reply([tool_use("write_file", {"path": "n.txt", "content": "x"}, id="toolu_w")]),
                    Reply([text("Finished.")]))
    # The clock starts once the engine is loaded: on a slow machine its loading alone nears the 4 s.
    assert kernel.run("from codingcode_jupyter.notebook import prewarm; prewarm.wait()")["status"] == "ok"
    start = time.monotonic()
    msg_id = kernel.execute(f"%%agent --approval-policy {policy}\nTouch then write")
    assert kernel.reply(msg_id, timeout=30)["status"] == "ok", kernel.text_output(msg_id)
    assert time.monotonic() - start < 3.5  # nobody was waited for (the headless wait is 4 s here)
    decisions = {r["tool_use_id"]: r for r in _audit(kernel) if r.get("event") == "decision"}
    assert (decisions["toolu_e"]["decision"] == "allow") is runs
    assert (kernel.project / "made.txt").exists() is runs
    assert decisions["toolu_w"]["decision"] == "deny" and decisions["toolu_w"]["by"] in ("nobody", "mode")
    assert not (kernel.project / "n.txt").exists()


def test_a_project_given_once_stays_and_sessions_resume_after_a_restart(kernel):
    other = kernel.project / "other"
    other.mkdir()
    kernel.fake.add(Reply([text("In the other project.")]))
    assert kernel.run(f"%%agent --project {other}\nhello there")["status"] == "ok"
    status = kernel.execute("%agent status\nprint('after')")
    kernel.reply(status)
    out = kernel.text_output(status)
    # A long value wraps at spaces under its column: read the rows with their line breaks folded.
    flat = re.sub(r"\s+", " ", out)
    assert f"project {other} (set with --project" in flat and "after" in out  # displayed though not the cell's last line
    assert re.search(r"^reads +the project \(elsewhere asked; permissions.additionalDirectories\)", out, re.M)
    sessions = kernel.execute("%agent sessions")
    kernel.reply(sessions)
    listed = kernel.text_output(sessions)
    assert "hello there" in listed
    session_id = next(word for word in listed.split() if word.count("-") == 2 and word[:8].isdigit())
    kernel.km.restart_kernel(now=True)
    kernel.kc.wait_for_ready(timeout=60)
    assert kernel.run("%load_ext codingcode_jupyter")["status"] == "ok"
    everything = kernel.execute("%agent sessions --all")
    kernel.reply(everything)
    assert session_id in kernel.text_output(everything)
    resumed = kernel.execute(f"%agent resume {session_id} --project {other}")
    assert kernel.reply(resumed)["status"] == "ok" and "resumed" in kernel.text_output(resumed)
    kernel.fake.add(Reply([text("Still the other project.")]))
    assert kernel.run("%%agent\nand now?")["status"] == "ok"
    sent = json.dumps(kernel.fake.requests[-1]["messages"])
    assert "hello there" in sent  # the resumed conversation, in the project it belongs to
    assert (other / ".codingcode" / "sessions").is_dir() and not (kernel.project / ".codingcode" / "sessions").exists()


def test_login_keeps_the_key_out_of_every_output(kernel):
    msg_id = kernel.execute("%agent login")
    assert kernel.reply(msg_id)["status"] == "ok"
    field = kernel.wait_for(lambda: (kernel.find(_model_name="PasswordModel") or [None])[0], 10, "the password field")
    secret = "sk-ant-test-" + "9" * 20
    kernel.send_comm(field, {"method": "update", "state": {"value": secret}, "buffer_paths": []})
    kernel.click(_button(kernel, "Use this key"))
    check = kernel.execute("import os; print(os.environ.get('ANTHROPIC_API_KEY') == %r)" % secret)
    kernel.reply(check)
    kernel.wait_for(lambda: "True" in kernel.text_output(check), 10, "the key in the kernel")
    saved = _saved_text(kernel, msg_id)
    assert secret not in saved and "API key set" in saved
    assert kernel.widgets[field].get("value") == ""


def test_subcommand_text_is_aligned_complete_and_the_help_names_the_cell_magic(kernel):
    kernel.fake.add(*[Reply([tool_use("read_file", {"path": f"f{i}.txt"}, id=f"toolu_r{i}")]) for i in range(12)],
                    Reply([text("Read them all.")]))
    for i in range(12):
        (kernel.project / f"f{i}.txt").write_text("x\n")
    assert kernel.run("%%agent\nRead twelve files")["status"] == "ok"
    audit = kernel.execute("%agent audit 10")
    kernel.reply(audit)
    lines = kernel.text_output(audit).strip().splitlines()
    assert len(lines) == 11 and lines[0].split() == ["time", "call", "decision", "outcome"]
    assert all("allowed: it changes nothing" in line and line.rstrip().endswith("done") for line in lines[1:])
    column = lines[0].index("decision")
    assert all(line[column:].startswith("allowed") for line in lines[1:])  # aligned, not cut mid-word
    payload = json.dumps(kernel.run("%%agent?"))  # help comes back as the reply's pager payload
    assert "%%agent [--mode MODE]" in payload and "%agent_cell" not in payload and "::" not in payload
