"""A newcomer's first hour, second pass (issue 46), in a real kernel: what the cell says is what
happened, the saved record is quiet, the limits are said plainly.

Each test drives the kernel as a person (or the notebook page, played by tests/notebook/fake_page.py)
does, and reads what the cell and the saved notebook keep.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.notebook.fake_page import FakePage
from tests.notebook.kernel_harness import Kernel
from tests.notebook.test_record_kernel import _outputs, _saved_text

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


def _live_buttons(k: Kernel, label: str) -> list[str]:
    closed = {m["content"]["comm_id"] for m in k.messages if m["msg_type"] == "comm_close"}
    return [cid for cid in k.find(_model_name="ButtonModel", description=label)
            if cid not in closed and not k.widgets[cid].get("disabled")]


def _render(k: Kernel, msg_id: str) -> None:
    root = k.wait_for(lambda: k.displayed_models(msg_id), 30, "the cell's widget")[0]
    k.render(root)


def _turn(k: Kernel, prompt: str, *, page: FakePage | None = None, until=None, head: str = "%%agent",
          timeout: float = 60) -> str:
    msg_id = k.execute(f"{head}\n{prompt}")
    rendered = []

    def done() -> bool:
        if page is not None:
            page.step()
        if not rendered and k.displayed_models(msg_id):
            k.render(k.displayed_models(msg_id)[0])
            rendered.append(True)
        if until is not None:
            until()
        return k._idle(msg_id)

    k.wait_for(done, timeout, "the turn to end")
    return msg_id


def _card_text(k: Kernel) -> str:
    return " ".join(str(state.get("value", "")) for state in k.widgets.values()
                    if "codingcode-approval" in json.dumps(state) or "Allow the agent" in str(state.get("value", "")))


# -- 6: a division in a cell is not a path ------------------------------------------------------


def test_run_cells_card_does_not_read_a_division_as_a_path_outside_the_project(kernel):
    kernel.ok("total = 30.0\nrows = [1, 2, 3]")
    page = FakePage(kernel, _cells(("a", "mean_amount = total / len(rows)\nmean_amount"), ("b", "%%agent\nrun it")))
    kernel.fake.add(Reply([tool_use("run_cells", {"cell_id": "a"})]), Reply([text("done")]))
    cards: list[str] = []

    def person() -> None:
        allow = _live_buttons(kernel, "Allow")
        if allow and not cards:
            cards.append(json.dumps(kernel.widgets))
            kernel.click(allow[0])

    _turn(kernel, "run the cell", page=page, until=person)
    shown = cards[0] if cards else ""
    # Asked or not, no reason may say the code reads outside the project: `/` here divides.
    assert "outside the project" not in shown, re.findall(r"[^<>]{0,120}outside the project[^<>]{0,60}", shown)
    assert any(o.get("data", {}).get("text/plain") == "10.0" for o in page.cells[0]["outputs"]), page.cells[0]


# -- 13: an unknown option lists the options; an unknown subcommand suggests the nearest --------------


def test_an_unknown_option_lists_the_options_and_a_typo_gets_the_nearest(kernel):
    msg_id = kernel.execute("%%agent --frobnicate\nhello")
    assert kernel.reply(msg_id)["status"] == "error"
    said = kernel.text_output(msg_id)
    assert "--frobnicate" in said and "unrecognized" not in said, said
    for option in ("--new", "--model", "--mode", "--agent", "--project", "--approval-timeout", "--approval-policy"):
        assert option in said, (option, said)
    msg_id = kernel.execute("%%agent --aproval-policy rules\nhello")
    kernel.reply(msg_id)
    assert "did you mean --approval-policy?" in kernel.text_output(msg_id), kernel.text_output(msg_id)
    msg_id = kernel.execute("%agent stauts")
    assert kernel.reply(msg_id)["status"] == "error"
    assert "Did you mean %agent status?" in kernel.text_output(msg_id), kernel.text_output(msg_id)
    msg_id = kernel.execute("%agent help undoo")
    kernel.reply(msg_id)
    assert "Did you mean %agent undo?" in kernel.text_output(msg_id), kernel.text_output(msg_id)
    assert not kernel.fake.requests, "nothing was sent to the model"


# -- 10: .codingcode/ keeps itself out of the person's git status ------------------------------------


def _git(project: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True).stdout


def test_the_agents_own_folder_stays_out_of_git_status_and_shared_settings_do_not(kernel):
    project = kernel.project
    _git(project, "init", "-q")
    kernel.fake.add(Reply([tool_use("write_file", {"path": "notes.txt", "content": "hi\n"}, id="w1")]), Reply([text("Written.")]))
    msg_id = kernel.execute("%%agent --mode acceptEdits\nwrite notes.txt")
    assert kernel.reply(msg_id)["status"] == "ok", kernel.text_output(msg_id)
    own = project / ".codingcode"
    # (Undo's checkpoints live in the person's own directory, outside the project.)
    assert (own / "audit.jsonl").exists() and (own / "sessions").is_dir()
    status = _git(project, "status", "--porcelain", "--untracked-files=all")
    # The control: git status sees the file the agent wrote; the agent's own folder is not in it.
    assert "notes.txt" in status and ".codingcode" not in status, status
    # What a project shares from the folder is not ignored: it can be committed as before.
    (own / "settings.json").write_text("{}\n")
    (own / "agents").mkdir()
    (own / "agents" / "reviewer.md").write_text("---\nname: reviewer\n---\nReview.\n")
    shared = _git(project, "status", "--porcelain", "--untracked-files=all")
    assert ".codingcode/settings.json" in shared and ".codingcode/agents/reviewer.md" in shared, shared
    assert "audit.jsonl" not in shared and "sessions" not in shared and "checkpoints" not in shared, shared


# -- 7, 8: each turn its own plan; panels only when they have something; one line for a Stop ---------


def test_each_turn_shows_its_own_plan_and_a_trivial_turn_no_empty_panels(kernel):
    plan = [{"step": "Read the data", "status": "completed"}, {"step": "Plot it", "status": "in_progress"}]
    kernel.fake.add(Reply([tool_use("todo_write", {"plan": plan}, id="t1")]), Reply([text("Planned.")]))
    first = _turn(kernel, "make a plan")
    saved = _saved_text(kernel, first)
    assert "Plot it" in saved and "Todo" in saved, saved[:2000]  # the control: a plan is shown
    kernel.fake.add(Reply([text("Hello.")]))
    second = _turn(kernel, "hi")
    saved = _saved_text(kernel, second)
    assert "Hello." in saved
    assert "Plot it" not in saved and "Read the data" not in saved, saved[:2000]  # not the previous turn's plan
    for empty in ("Todo", "no steps yet", "Audit", "no decisions yet"):
        assert empty not in saved, (empty, saved[:2000])
    # Live, too: the side column of this turn's view was never displayed.
    sides = [cid for cid, state in kernel.widgets.items() if state.get("_model_name") == "LayoutModel"
             and state.get("flex") == "0 1 14em"]
    assert len(sides) >= 2 and kernel.widgets[sides[-1]].get("display") == "none", [kernel.widgets[c] for c in sides]
    assert not kernel.widgets[sides[-2]].get("display"), "the first turn (a plan) showed its side column"


def test_stop_is_one_line_and_no_error_output(kernel):
    kernel.fake.add(Reply([text("too late")], delay=8.0))
    msg_id = kernel.execute("%%agent\nthink slowly")
    _render(kernel, msg_id)
    stop = kernel.wait_for(lambda: (_live_buttons(kernel, "Stop") or [None])[0], 30, "the Stop button")
    kernel.wait_for(lambda: "thinking" in "".join(kernel.widgets[c].get("value", "") for c in kernel.with_class("codingcode-thinking")),
                    20, "the thinking indicator")
    kernel.click(stop)
    reply = kernel.reply(msg_id, timeout=30)
    assert reply["status"] == "ok", kernel.text_output(msg_id)  # Stop ends the turn, not the run
    outputs = _outputs(kernel, msg_id)
    assert [o["type"] for o in outputs] == ["display_data"], outputs  # the record alone: no error output saved
    plain = outputs[0]["data"]["text/plain"]
    assert "Interrupted." not in plain and "too late" not in plain, plain
    assert len(re.findall(r"stopped", plain, re.I)) == 1, plain


# -- 4: the record and the audit name each reviewed change and its answer ------------------------------


def test_the_record_and_the_audit_name_each_change_and_its_answer(kernel):
    page = FakePage(kernel, _cells(("a", "x = 1"), ("b", "y = 2")))
    kernel.fake.add(
        Reply([tool_use("read_notebook", {})]),
        Reply([tool_use("edit_notebook", {"changes": [
            {"action": "replace", "cell_id": "a", "source": "x = 10"},
            {"action": "insert", "cell_id": "b", "source": "print(x + y)"},
            {"action": "replace", "cell_id": "b", "source": "y = 20"},
            {"action": "delete", "cell_id": "a"},
        ]}, id="edit1")]),
        Reply([text("done")]),
    )

    def person() -> None:
        if any(r["op"] == "propose" for r in page.requests) and not page.answers:
            page.cells[1]["source"] = "y = 2  # typed meanwhile"
            page.answers.update({"c1": "accepted", "c2": "accepted", "c3": "accepted", "c4": "rejected"})

    msg_id = _turn(kernel, "change the cells", page=page, until=person)
    (record,) = _outputs(kernel, msg_id)
    html, plain = record["data"]["text/html"], record["data"]["text/plain"]
    expected = ["replace cell a: accepted", "insert a new code cell after cell b: accepted",
                "replace cell b: conflict", "delete cell a: rejected"]
    for line in expected:
        assert line in plain, (line, plain)
    # On the collapsed row itself (outside its <details>), one line a change.
    row = html[html.index("<code>edit_notebook</code>"):]
    below = row[row.index("</details>"):].split('class="cc-tool ')[0].split("codingcode-audit")[0]
    assert below.count("cc-review-answer") == 4, below
    assert not re.search(r"reviewed on the cells:\s*$", plain, re.M), plain
    # The audit panel says what became of each change, not "done".
    audit = html[html.index("codingcode-audit"):]
    audit = audit[audit.index("<code>edit_notebook</code>"):].split('class="audit-row"')[0]
    assert "replace cell b: conflict" in audit and "delete cell a: rejected" in audit and "→ done" not in audit, audit
    records = [json.loads(line) for line in (kernel.project / ".codingcode" / "audit.jsonl").read_text().splitlines()]
    (review,) = [r for r in records if r.get("event") == "review"]
    assert review["tool_use_id"] == "edit1"
    assert [c["answer"] for c in review["changes"]] == ["accepted", "accepted", "conflict", "rejected"], review
    listed = kernel.ok("%agent audit 5")["output"]
    assert "conflict" in listed and "rejected" in listed and "sent for your review" in listed, listed


# -- 11: a command's last lines show without expanding its row ------------------------------------------


def test_a_commands_last_lines_show_under_its_row(kernel):
    command = "printf 'collected 3 items\\ntest_a.py .\\ntest_b.py .\\ntest_c.py .\\n\\n3 passed in 0.02s\\n'"
    kernel.fake.add(Reply([tool_use("execute_command", {"command": command}, id="c1")]), Reply([text("Tests pass.")]))
    msg_id = _turn(kernel, "run the tests", head="%%agent --mode bypass")
    (record,) = _outputs(kernel, msg_id)
    html, plain = record["data"]["text/html"], record["data"]["text/plain"]
    row = html[html.index("<code>execute_command</code>"):]
    collapsed = row[row.index("</details>"):].split('class="cc-tool ')[0].split("codingcode-audit")[0]
    assert "3 passed in 0.02s" in collapsed and "exit code 0" in collapsed, collapsed
    assert "collected 3 items" not in collapsed  # the last lines only
    assert "| 3 passed in 0.02s" in plain, plain


# -- 14: the demo does not contradict itself ----------------------------------------------------------


def test_the_demo_says_what_it_does_and_counts_what_its_search_found(kernel):
    (kernel.project / "cli.py").write_text("def main():\n    pass\n")
    first = _turn(kernel, "add a docstring to main", head="%%agent --model demo --mode bypass")
    said = _saved_text(kernel, first)
    # It writes a file of its own; it says so rather than "edit a file".
    assert "For this request: write a new file and run it." in re.sub(r"\*\*|<[^>]+>", "", said), said[:1500]
    assert "edit a file" not in said
    assert (kernel.project / "codingcode_demo.py").exists()
    second = _turn(kernel, "what files are in this project?", head="%%agent --model demo")
    said = _saved_text(kernel, second)
    found = re.search(r"(\d+) files? match", said)
    answered = re.search(r"The project has (\d+) Python files?", said)
    assert found and answered and found.group(1) == answered.group(1) == "2", said[:3000]


# -- 5: undo of cell edits keeps ids and outputs, asks by what it restores, says what happened ---------


def test_undo_of_cell_edits_keeps_ids_and_outputs_and_says_what_it_did(kernel):
    (kernel.user / "settings.json").write_text(json.dumps({"permissions": {"allow": ["edit_notebook"]}}))
    mine = [{"output_type": "stream", "name": "stdout", "text": "what the person's run showed\n"}]
    page = FakePage(kernel, [
        {"id": "a", "cell_type": "code", "source": "x = 1\nprint(x)", "outputs": list(mine), "execution_count": 3},
        {"id": "b", "cell_type": "code", "source": "y = 2", "outputs": [{"output_type": "stream", "name": "stdout",
                                                                           "text": "b's output\n"}], "execution_count": 4},
    ])
    kernel.fake.add(
        Reply([tool_use("read_notebook", {})]),
        Reply([tool_use("edit_notebook", {"changes": [
            {"action": "replace", "cell_id": "a", "source": "x = 2\nprint(x)"},
            {"action": "delete", "cell_id": "b"},
            {"action": "insert", "source": "print('added')"},
        ]})]),
        Reply([text("done")]),
    )
    _turn(kernel, "edit the cells", page=page)
    assert [c["id"] for c in page.cells] == ["a", "new1"]
    # The agent ran its edited cell since: its output is in the cell now.
    page.cells[0]["outputs"], page.cells[0]["execution_count"] = [{"output_type": "stream", "name": "stdout",
                                                                   "text": "the agent's run\n"}], None

    def undo(line: str) -> str:
        msg_id = kernel.execute(line)
        kernel.wait_for(lambda: (page.step(), kernel._idle(msg_id))[1], 60, line)
        return kernel.text_output(msg_id)

    asked = undo("%agent undo")  # nobody can answer here: the question is kept as text
    question = re.search(r"Restore ([^?]*)\?", asked)
    assert question and question.group(1) == "3 notebook cells as before the turn", asked
    done = undo("%agent undo --yes")
    assert "Restored 3 cells in page.ipynb" in done and "Asked the notebook page" not in done, done
    assert "0 file" not in done, done
    assert [c["id"] for c in page.cells] == ["a", "b"], page.cells  # b is b again, the added cell gone
    assert page.cells[0]["source"] == "x = 1\nprint(x)" and page.cells[0]["outputs"] == mine, page.cells[0]
    assert page.cells[0]["execution_count"] == 3
    assert page.cells[1]["outputs"][0]["text"] == "b's output\n" and page.cells[1]["execution_count"] == 4
    # The agent's next edit by id finds the restored cell.
    kernel.fake.add(Reply([tool_use("read_notebook", {})]),
                    Reply([tool_use("edit_notebook", {"changes": [{"action": "replace", "cell_id": "b", "source": "y = 3"}]})]),
                    Reply([text("edited b")]))
    _turn(kernel, "edit b", page=page)
    assert page.cells[1]["source"] == "y = 3", page.cells


# -- 9: a notebook run headless keeps its records, not the live widgets' state ------------------------------


def test_nbconvert_keeps_the_records_and_no_widget_state(tmp_path):
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    project = tmp_path / "project"
    project.mkdir()
    (project / "cli.py").write_text("def main():\n    pass\n")
    spec = tmp_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("%load_ext codingcode_jupyter"),
                      nbformat.v4.new_code_cell("%%agent --model demo\nwhat files are in this project?"),
                      nbformat.v4.new_code_cell("%%agent --model demo\nadd a docstring to main")]
    NotebookClient(notebook, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(project)}},
                   kernel_manager_kwargs={"kernel_spec_manager": KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])},
                   ).execute()
    saved = nbformat.writes(notebook)
    assert "widget-state" not in saved and "widget-view" not in saved, json.loads(saved).get("metadata", {}).keys()
    looked = "\n".join(str((out.get("data") or {}).get("text/html", "")) for out in notebook.cells[1].outputs)
    asked = "\n".join(str((out.get("data") or {}).get("text/plain", "")) for out in notebook.cells[2].outputs)
    # The records are all there: the answer, each call, who decided; a question nobody could answer, said so.
    assert "codingcode-record" in looked and "The project has 1 Python file" in looked, looked[:2000]
    assert "a runner such as nbconvert or papermill sent this cell" in asked and "write_file" in asked, asked[:3000]
    assert not (project / "codingcode_demo.py").exists()
    assert len(saved) < 45_000, len(saved)  # was 88 KB, 65 KB of it the widgets' state


# -- 2: doctor and status with broken settings files: every one, where, and what holds meanwhile -----------


def test_doctor_and_status_name_every_broken_file_with_line_and_column_and_what_holds_meanwhile(kernel):
    own = kernel.project / ".codingcode"
    own.mkdir()
    (own / "settings.json").write_text('{\n  "permissions": {"allow": ["read_file(*)"],}\n}\n')  # a JSON error
    (kernel.user / "settings.json").write_text('{\n  "model": "claude-test",\n  "permisions": {"deny": []}\n}\n')  # a typo
    (own / "settings.local.json").write_text(json.dumps({"permissions": {"allow": ["execute_command(pytest *)"]}}))
    for first in (True, False):
        if not first:  # the same with a session already open
            (own / "settings.json").write_text("{}")
            (kernel.user / "settings.json").write_text("{}")
            kernel.fake.add(Reply([text("Hello.")]))
            assert kernel.reply(kernel.execute("%%agent\nhi"))["status"] == "ok"
            (own / "settings.json").write_text('{\n  "permissions": {"allow": ["read_file(*)"],}\n}\n')
            (kernel.user / "settings.json").write_text('{\n  "model": "claude-test",\n  "permisions": {"deny": []}\n}\n')
        doctor = " ".join(kernel.ok("%agent doctor")["output"].split())  # as read, not as wrapped
        assert "Broken settings files" in doctor and "In force meanwhile" in doctor, doctor
        assert re.search(r"\.codingcode/settings\.json: not valid JSON \(line 2, column \d+\)", doctor), doctor
        assert re.search(r"settings\.json: entry 'permisions' \(line 3, column 3\)", doctor), doctor
        assert "nothing runs" in doctor
        # The full report of what the other files say follows.
        assert "Rules in force" in doctor and "execute_command(pytest *)" in doctor, doctor
        status = " ".join(kernel.ok("%agent status")["output"].split())
        assert status.count("broken") >= 2 and "line 2" in status and "line 3" in status, status
        assert "nothing runs" in status and "%agent doctor" in status, status
    msg_id = kernel.execute("%%agent\nhello")  # and a cell still stops in one line
    kernel.reply(msg_id)
    assert "settings.json" in kernel.text_output(msg_id) and "Traceback" not in kernel.text_output(msg_id)


# -- 1: a request too long for the window is said before sending, never cut -------------------------


def test_a_request_too_long_for_the_window_is_refused_with_its_size_and_the_conversation_kept(kernel):
    kernel.fake.add(Reply([text("Hello.")]))
    assert kernel.reply(kernel.execute("%%agent\nhi"))["status"] == "ok"
    sent = len(kernel.fake.requests)
    line = "2026-12-05 07:00:00 INFO worker-3 processed batch 1234 of 9999 in 0.123 s\n"
    pasted = (line * (1_048_576 // len(line) + 1))[:1_048_576]  # 1 MB of a log, pasted
    msg_id = kernel.execute("%%agent\nwhat went wrong in this log?\n" + pasted)
    kernel.reply(msg_id, timeout=120)
    said = " ".join(kernel.text_output(msg_id).split())
    assert "too long for the model's context window, so nothing was sent" in said, said[:2000]
    size = re.search(r"it is ([\d,]+) tokens \(([\d,]+) characters\).*?claude-test takes ([\d,]+) tokens", said)
    assert size is not None, said[:2000]
    tokens, chars, limit = (int(n.replace(",", "")) for n in size.groups())
    assert chars > 1_048_576 and tokens > limit and 150_000 < limit < 200_000, said[:2000]
    assert "Context compacted" not in said and "clipped" not in said, said[:2000]
    assert len(kernel.fake.requests) == sent  # nothing went to the model, no summary either

    # The conversation goes on as it was: the earlier turn whole, the refused text not in it.
    kernel.fake.add(Reply([text("Still here.")]))
    assert kernel.reply(kernel.execute("%%agent\nand now?"))["status"] == "ok"
    messages = json.dumps(kernel.fake.requests[-1]["messages"])
    assert '"hi"' in messages and "Hello." in messages and "and now?" in messages, messages[:2000]
    assert "worker-3" not in messages and "Summary of the earlier conversation" not in messages


# -- 16: a configured server's warm-ups wait for the loading a first cell waits for ------------------


_LOADING_STATE = """
import json, sys
from codingcode_jupyter.notebook import prewarm as __p
from codingcode_jupyter.engine import runtime as __r
__l = __p.current()
__servers = {name: server.state for deps in __r._EARLY.values() for name, server in deps.mcp._servers.items()}
print(json.dumps({"done": __l.done, "all_done": __l.all_done, "timings": list(__l.timings), "servers": __servers,
                  "validation": "jsonschema.validators" in sys.modules}))
"""


def test_a_ready_server_does_not_slow_the_loading_of_the_first_cell(tmp_path):
    # The server's result validation (jsonschema, 1 to 2 s of CPU) was imported on a thread as soon as
    # the server ran, beside the SDK's import: a first cell 2 s after %load_ext waited 2 to 3 times as long.
    project = tmp_path / "project"
    project.mkdir()
    server = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"tools": {"command": sys.executable,
                                                                            "args": [str(server), "stdio"]}}}))
    fake = FakeAnthropic().start()
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
           "CODINGCODE_USER_DIR": str(tmp_path / "user"), "CODINGCODE_TRUST": "1"}
    k = Kernel(sys.executable, project, env, tmp_path / "jupyter")
    try:
        assert k.run("%load_ext codingcode_jupyter")["status"] == "ok"
        seen: list[dict] = []

        def state() -> bool:
            msg_id = k.execute(_LOADING_STATE)
            k.reply(msg_id)
            seen.append(json.loads(k.text_output(msg_id).strip().splitlines()[-1]))
            if not seen[-1]["done"]:
                assert not seen[-1]["validation"], seen[-1]  # not while the loading a first cell waits for runs
            time.sleep(0.3)  # idle, so that the later steps run
            return bool(seen[-1]["all_done"])

        k.wait_for(state, 120, "the loading's later steps")
        last = seen[-1]
        assert last["servers"] == {"tools": "running"}, last
        # Taken as later work (once no cell runs), not on a thread beside the loading.
        assert "jsonschema" in last["timings"] and last["validation"], last
        assert last["timings"].index("jsonschema") > last["timings"].index("anthropic SDK"), last
    finally:
        k.close()
        fake.stop()
