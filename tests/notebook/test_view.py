"""The notebook front without a kernel: transformer, widgets, throttling, the ask fallbacks."""

from __future__ import annotations

import ast
import asyncio
import re
import threading
import time

import pytest

from codingcode_jupyter.engine.approval.types import ApprovalRequest
from codingcode_jupyter.engine.events import (
    ApprovalAnswered,
    AuditRecorded,
    TextDelta,
    TodoItem,
    TodoUpdated,
    ToolCallFinished,
    ToolCallStarted,
    TurnDone,
    Usage,
)
from codingcode_jupyter.notebook import async_cell
from codingcode_jupyter.notebook.extension import _line_transformer
from codingcode_jupyter.notebook.view import TurnView, parse_text_answer, render_markdown
from codingcode_jupyter.notebook.widgets.approval import BUTTONS, ApprovalCard


def request(**over) -> ApprovalRequest:
    base = dict(session_id="s", turn_id=1, tool_use_id="toolu_1", tool="write_file",
                input={"path": "a.txt", "content": "hi"}, preview="--- a.txt\n+++ a.txt\n+hi", layer="mode",
                rule=None, reason="writes a file")
    return ApprovalRequest(**{**base, **over})


# -- the input transformers -------------------------------------------------------------


def test_transformer_rewrites_agent_cell_into_await_with_exact_text():
    body = 'Fix "this" and \'that\'\n\\n {braces} \u202e\n'
    out = async_cell.agent_cell_transformer(["%%agent --mode plan\n", *body.splitlines(keepends=True)])
    assert len(out) == 1 and out[0].startswith(f"await {async_cell.CELL_FUNCTION}(")
    call = ast.parse(out[0]).body[0].value.value
    assert [ast.literal_eval(a) for a in call.args] == ["--mode plan", body]


@pytest.mark.parametrize("cell", [["%%agent?\n"], ["%%agent??\n"], ["x = 1\n", "%%agent\n"], ["%%agentx\n", "hi"], ["%%bash\n", "%agent status\n"]])
def test_transformers_leave_help_and_other_cells_alone(cell):
    assert async_cell.agent_cell_transformer(list(cell)) == list(cell)
    assert _line_transformer(list(cell)) == list(cell)


def test_line_transformer_awaits_lone_agent_lines_only():
    out = _line_transformer(["x = 1\n", "%agent audit 5\n", "  %agent status\n", "%agent?\n"])
    assert out[1] == "await __codingcode_agent_line__('audit 5')\n"
    assert out[0] == "x = 1\n" and out[2] == "  %agent status\n" and out[3] == "%agent?\n"


# -- rendering ------------------------------------------------------------------------------


def test_markdown_escapes_html_and_reveals_hidden_characters():
    html = render_markdown("**bold** <img src=x onerror=alert(1)> [x](javascript:alert(1)) evil\u202etxt.exe")
    assert "<strong>bold</strong>" in html
    assert "<img" not in html and "&lt;img" in html
    assert "javascript:" not in html
    assert "\u202e" not in html and "\\u{202e}" in html


def test_text_answers():
    assert parse_text_answer(" Y ") == "allow" and parse_text_answer("v") == "never"
    assert parse_text_answer("a") == "always" and parse_text_answer("n") == "deny"
    # The Enter that ends a terminal cell is nobody's answer: an empty line asks again.
    assert parse_text_answer("") is None and parse_text_answer("  ") is None
    assert parse_text_answer("maybe") is None


# -- the approval card ---------------------------------------------------------------------


async def test_card_click_resolves_disables_and_collapses():
    card = ApprovalCard(request())
    assert set(card.buttons) == {"Allow", "Deny", "Always allow", "Never allow"} == set(BUTTONS)
    assert "+hi" in card.preview.value and "cc-diff-add" in card.preview.value
    assert "layer" not in card.why.value and "you decide" in card.why.value
    card.click("Always allow")
    assert await asyncio.wait_for(card.answer, 1) == "always"
    assert all(b.disabled for b in card.buttons.values())
    assert card.preview.layout.display == "none" and "Always allowed" in card.header.value
    card.click("Deny")  # a second click changes nothing
    assert card.state == "always"


async def test_card_click_from_another_thread():
    card = ApprovalCard(request())
    thread = threading.Thread(target=card.click, args=("Deny",))
    thread.start()
    assert await asyncio.wait_for(card.answer, 1) == "deny"
    thread.join()


async def test_card_escapes_preview_and_tool():
    card = ApprovalCard(request(tool="x<script>", preview="+<b>rm</b>\u200b"))
    assert "<script>" not in card.header.value and "<b>rm" not in card.preview.value
    assert "\\u{200b}" in card.preview.value


async def test_timeout_relabels_an_interrupted_card_but_not_an_answer():
    card = ApprovalCard(request())
    card.settle("interrupted")
    card.settle("timeout", by="timeout")
    assert card.state == "timeout"
    other = ApprovalCard(request())
    other.click("Allow")
    other.settle("timeout")
    assert other.state == "allow"


# -- the view ------------------------------------------------------------------------------


async def test_streamed_text_is_throttled_and_complete():
    view = TurnView(max_rate=20)
    words = [f"w{i} " for i in range(2000)]
    start = time.monotonic()
    for index, word in enumerate(words):
        view(TextDelta(text=word))
        if index % 50 == 0:
            await asyncio.sleep(0.01)
    elapsed = time.monotonic() - start
    view.finish()
    segment = view.main.children[0]
    assert segment.value.count("w") == 2000 and "w1999" in segment.value
    assert view.flushes <= elapsed * 20 + 3, (view.flushes, elapsed)
    assert view.flushes >= 2


async def test_events_build_tool_lines_todo_audit_and_footer():
    view = TurnView()
    view(TextDelta(text="Let me write it."))
    view(ToolCallStarted(tool_use_id="t1", tool="write_file", input={"path": "a.txt", "content": "x"}))
    view(AuditRecorded(record={"event": "decision", "tool_use_id": "t1", "tool": "write_file", "decision": "allow",
                               "layer": "confirm", "by": "user"}))
    view(AuditRecorded(record={"event": "outcome", "tool_use_id": "t1", "tool": "write_file", "decision": "allow",
                               "outcome": "ok"}))
    view(ToolCallFinished(tool_use_id="t1", tool="write_file", status="ok", result="wrote 1 line", duration_ms=12))
    view(TodoUpdated(items=[TodoItem(step="write a.txt", status="completed"), TodoItem(step="run it")]))
    view(TextDelta(text="Done."))
    view(TurnDone(stop_reason="end_turn", usage=Usage(input_tokens=1200, output_tokens=30), cost_usd=0.0042))
    view.finish()
    kinds = [type(w).__name__ for w in view.main.children]
    assert kinds == ["HTML", "ToolLine", "HTML"]
    line = view.main.children[1]
    assert "a.txt" in line.value and "ok" in line.value and "wrote 1 line" in line.value
    assert "Done." in view.main.children[2].value
    assert "(1/2)" in view.todo.value and "run it" in view.todo.value
    assert len(view.audit.records) == 1 and view.audit.records[0]["outcome"] == "ok"
    assert "1,200 in" in view.footer.value and "$0.0042" in view.footer.value


async def test_subagent_output_goes_into_its_own_section():
    view = TurnView()
    view(TextDelta(text="main text"))
    view(TextDelta(text="sub text", agent="main/explore#1"))
    view.finish()
    accordion = view.main.children[1]
    assert type(accordion).__name__ == "Accordion"
    assert "sub text" in accordion.children[0].children[0].value
    assert "sub text" not in view.main.children[0].value


async def test_ask_waits_for_a_click_once_a_frontend_rendered_the_cell():
    view = TurnView(frontend_wait=5)
    view.root._view_count = 1  # what the frontend reports when it renders the view
    task = asyncio.ensure_future(view.ask(request()))
    await asyncio.sleep(0.05)
    card = view.cards["toolu_1"]
    assert not task.done()
    card.click("Allow")
    assert await asyncio.wait_for(task, 1) == "allow"


async def test_ask_without_frontend_or_stdin_times_out_and_the_record_says_nobody_was_there():
    view = TurnView(frontend_wait=0.1, headless_timeout=0.3)
    start = time.monotonic()
    # A timeout, not an answer: the pipeline records it as decided by "timeout", not by a person.
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(view.ask(request()), 3)
    assert 0.25 <= time.monotonic() - start < 2
    assert view.cards["toolu_1"].state == "no_frontend"
    view.finish()
    assert "Nobody was there to answer" in view.record.text() and "write_file was not run" in view.record.text()


async def test_a_question_about_what_a_command_left_says_what_no_answer_did_not_that_it_did_not_run():
    # The command ran; the question is whether to keep the files it left that the host runs.
    view = TurnView(frontend_wait=0.05, headless_timeout=0.1)
    refused = "the command ran, and the files it left that the host runs were moved out of the project"
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(view.ask(request(tool="execute_command", refused=refused)), 3)
    view.finish()
    assert refused in view.record.text() and "was not run" not in view.record.text()


async def test_ask_without_frontend_still_takes_a_late_click():
    view = TurnView(frontend_wait=0.05, headless_timeout=5)
    task = asyncio.ensure_future(view.ask(request()))
    await asyncio.sleep(0.2)
    view.cards["toolu_1"].click("Deny")
    assert await asyncio.wait_for(task, 1) == "deny"
    assert view.cards["toolu_1"].state == "deny"


async def test_cancelled_ask_marks_the_card_interrupted_and_timeout_event_relabels():
    view = TurnView(frontend_wait=5)
    view.root._view_count = 1
    task = asyncio.ensure_future(view.ask(request()))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert view.cards["toolu_1"].state == "interrupted"
    view(ApprovalAnswered(tool_use_id="toolu_1", answer="timeout", by="timeout"))
    assert view.cards["toolu_1"].state == "timeout"


def test_package_import_stays_light():
    import subprocess
    import sys

    code = ("import sys, codingcode_jupyter as c; heavy = [m for m in ('anthropic', 'mcp', 'ipywidgets', 'IPython') "
            "if m in sys.modules]; print(heavy, callable(c.load_ipython_extension))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True"


async def test_events_fold_into_one_row_per_call_and_a_static_record(tmp_path):
    """Card in place of the row while it waits, the row back with who decided; the end replaces the widgets."""
    from codingcode_jupyter.engine.events import ApprovalRequested

    class _Session:
        project = tmp_path
        usage = Usage()
        cost = 0.0

    view = TurnView(frontend_wait=5, session=_Session())
    view.root._view_count = 1
    view(ToolCallStarted(tool_use_id="toolu_1", tool="write_file", input={"path": "a.txt", "content": "hi"}, key="a.txt"))
    exact, broader = [f"write_file({tmp_path}/a.txt)"], [f"write_file({tmp_path}/**)"]
    req = request(preview="--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi\n", allow_choices=[exact, broader],
                  deny_choices=[exact])
    view(ApprovalRequested.carrying(req))
    async def answer():
        await asyncio.sleep(0.05)
        card = view.cards["toolu_1"]
        assert card in view.main.children and view.lines["toolu_1"] not in view.main.children
        assert "create <code>a.txt</code> (1 line)" in card.header.value
        # What the buttons save, in words (issue 36.12): no rule syntax, no tool name in the header.
        assert "settings.local.json" in card.consequences.value and "write <code>" in card.consequences.value
        assert "<code>write_file</code>" not in card.header.value
        # The rule's syntax only as the small note after the words, and as the dropdown's tooltip.
        assert "write_file(" not in re.sub(r'<small class="cc-rule".*?</small>', "", card.consequences.value)
        assert [label for label, _ in card.choice.options] == [f"write {tmp_path}/a.txt from now on",
                                                               f"write files under {tmp_path}/ from now on"]
        card.choice.value = 1  # the broader rule the pipeline offered
        assert "write files under <code>" in card.consequences.value and card.choice.tooltip == broader[0]
        card.click("Always allow")
    asyncio.ensure_future(answer())
    reply = await asyncio.wait_for(view.ask(req), 2)
    assert reply.answer == "always" and reply.rules == broader
    view(ApprovalAnswered(tool_use_id="toolu_1", answer="always", by="user"))
    assert view.lines["toolu_1"] in view.main.children and view.cards["toolu_1"] not in view.main.children
    view(AuditRecorded(record={"event": "decision", "tool_use_id": "toolu_1", "tool": "write_file", "decision": "allow",
                               "layer": "confirm", "by": "user", "reason": "The user allowed it."}))
    view(ToolCallFinished(tool_use_id="toolu_1", tool="write_file", status="ok", duration_ms=80,
                          result="--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi\n"))
    view(TurnDone(stop_reason="end_turn", usage=Usage(input_tokens=5, output_tokens=2)))
    row = view.lines["toolu_1"].value
    assert "always allowed by you; from now on it may write files under" in row and "cc-diff-add" in row
    assert re.search(r'<small class="cc-rule"[^>]*>\(rule <code>write_file\([^<]*/\*\*\)</code>\)</small>', row), row
    html, text = view.record.html(), view.record.text()
    assert "always allowed by you" in html and "<script" not in html and "+hi" in text
    assert str(tmp_path) + "/a.txt" not in text  # paths relative to the project


async def test_the_stop_button_calls_back_once_and_the_thinking_indicator_counts(monkeypatch):
    from codingcode_jupyter.notebook import view as view_module

    monkeypatch.setattr(view_module, "TICK", 0.05)
    monkeypatch.setattr(view_module, "IDLE_AFTER", 0.05)
    stops = []
    view = TurnView(on_stop=lambda: stops.append(1))
    view._tick()
    await asyncio.sleep(0.15)
    assert "thinking" in view.thinking.value
    view(TextDelta(text="Hello"))
    assert view.thinking.value == ""
    assert view.stop_button.description == "Stop"
    view.stop_button.click()
    view.stop_button.click()
    await asyncio.sleep(0.01)
    assert stops == [1]
    view.finish(interrupted=True)
    assert "stopped before it finished" in view.record.text()


def test_tool_line_shows_result_images():
    from codingcode_jupyter.notebook.widgets.tool_line import ToolLine

    line = ToolLine("everything:image", {})
    line.finish("ok", "[image]", 12.0, [{"media_type": "image/png", "data": "iVBORw0KGgo="}])
    assert '<img src="data:image/png;base64,iVBORw0KGgo="' in line.value
    assert line.value.index("<img") > line.value.index("</details>")  # visible without expanding


async def test_running_command_output_shows_live_and_is_throttled():
    from codingcode_jupyter.notebook.widgets.tool_line import PROGRESS_INTERVAL, ToolLine

    line = ToolLine("execute_command", {"command": "pytest"})
    renders = []
    line.observe(lambda change: renders.append(change["new"]), names="value")
    for i in range(200):
        line.set_progress(f"test_{i} PASSED")
    assert len(renders) <= 2  # 200 lines at once: one render now, at most one scheduled
    await asyncio.sleep(PROGRESS_INTERVAL + 0.1)
    visible = line.value.split("</details>", 1)[1]
    assert "test_199 PASSED" in visible and "test_193 PASSED" not in visible  # the last six lines, unexpanded
    line.finish("ok", "exit code 0", 1200.0)
    assert "tool-progress" not in line.value


def test_audit_rows_for_records_that_are_not_tool_calls():
    from codingcode_jupyter.notebook.widgets.audit import audit_fields

    network = {"event": "network", "host": "files.example.org", "port": 443, "decision": "deny", "by": "sandbox.network.allowedDomains"}
    assert audit_fields(network)["tool"] == "network files.example.org:443" and audit_fields(network)["decision"] == "deny"
    assert audit_fields({"event": "undo", "files": ["a.py"]})["tool"] == "undo"


def test_a_terminal_keeps_reading_the_request_after_the_magic_line():
    """In terminal IPython `%%agent` + Enter must not run at once with an empty request."""
    from IPython.core.inputtransformer2 import TransformerManager

    manager = TransformerManager()
    manager.cleanup_transforms.append(async_cell.agent_cell_transformer)
    assert manager.check_complete("%%agent\n")[0] == "incomplete"
    assert manager.check_complete("%%agent --mode plan\n")[0] == "incomplete"
    assert manager.check_complete("%%agent\nfix the test\n\n")[0] == "complete"
    assert async_cell.agent_cell_transformer(["%%agent\n", "   \n"]) == ["%%agent\n", "   \n"]


def test_text_question_reasks_on_an_empty_line_and_speaks_plainly(monkeypatch):
    from codingcode_jupyter.notebook import text_view

    typed = iter(["", "  ", "y"])
    prompts = []
    monkeypatch.setattr("builtins.input", lambda prompt="": prompts.append(prompt) or next(typed))
    answer = text_view.ask_by_text(request(allow_choices=[["write_file(/p/a.txt)"]], layer="confirm", reason="No rule allows write_file here"))
    assert answer == "allow" and len(prompts) == 3
    assert "[y/n/a/v]" in prompts[0] and "write `/p/a.txt` from now on" in prompts[0] and "layer" not in prompts[0]


def test_terminal_text_renders_markdown_a_block_at_a_time():
    import io

    from codingcode_jupyter.notebook.text_view import TextView

    out = io.StringIO()
    view = TextView(out=out)
    view(TextDelta(text="Some **bold** words.\n\n- one\n- tw"))
    first = out.getvalue()
    assert "bold" in first and "**" not in first and "one" not in first  # the unfinished list waits
    view(TextDelta(text="o\n"))
    view.finish()
    assert "two" in out.getvalue() and "- one" not in out.getvalue()  # rendered as a list, not raw


async def test_other_fronts_can_render_event_types_of_their_own(monkeypatch):
    import ipywidgets as widgets

    from codingcode_jupyter.engine.events import Notice
    from codingcode_jupyter.notebook import view as view_module

    class FormAsked(Notice):
        type: str = "form_asked"

    monkeypatch.setattr(view_module, "EXTRA_HANDLERS", {})
    view_module.register_event(FormAsked, lambda view, event: view.add(event.agent, widgets.HTML(f"form: {event.text}")))
    view = TurnView()
    view(FormAsked(text="your name?"))
    view(Notice(text="plain"))
    assert [w.value for w in view.main.children][0] == "form: your name?" and "plain" in view.main.children[1].value


def test_a_key_saved_in_the_keyring_comes_back_in_a_later_kernel(monkeypatch):
    import os
    import sys
    import types

    from codingcode_jupyter.notebook import login

    saved: dict = {}
    fake = types.SimpleNamespace(set_password=lambda s, n, k: saved.__setitem__((s, n), k),
                                 get_password=lambda s, n: saved.get((s, n)))
    monkeypatch.setitem(sys.modules, "keyring", fake)
    monkeypatch.delenv(login.KEY_NAME, raising=False)
    form = login.LoginForm(keyring=True)
    form.field.value = "sk-ant-kept"
    form.button.click()
    assert form.field.value == "" and "sk-ant-kept" not in form.message.value and "keyring" in form.message.value
    assert saved[(login.KEYRING_SERVICE, login.KEY_NAME)] == "sk-ant-kept"
    monkeypatch.delenv(login.KEY_NAME)
    assert login.key_from_keyring() and os.environ[login.KEY_NAME] == "sk-ant-kept"


def test_terminal_shows_one_row_per_call():
    import io

    from codingcode_jupyter.engine.events import ToolCallFinished, ToolCallStarted
    from codingcode_jupyter.notebook.text_view import TextView

    out = io.StringIO()
    view = TextView(out=out)
    view(ToolCallStarted(tool_use_id="t1", tool="read_file", input={"path": "a.txt"}, key="a.txt"))
    view(ToolCallFinished(tool_use_id="t1", tool="read_file", status="ok", result="x", duration_ms=5))
    view.finish()
    rows = [line for line in out.getvalue().splitlines() if "a.txt" in line]
    assert len(rows) == 1 and "→" not in out.getvalue() and "card" not in out.getvalue(), out.getvalue()


async def test_a_terminal_offers_a_commands_preview_before_its_question(monkeypatch):
    """Preview in a terminal (issue 49): asked before the command's question, the preview printed when
    wanted, the question asked after it; where none can be faithful, the reason is printed instead."""
    import io
    import sys

    from codingcode_jupyter.engine.command_preview import CommandPreview, PreviewedFile, PreviewOffer
    from codingcode_jupyter.notebook.text_view import TextView

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Tty())
    typed = iter(["maybe", "y", "n"])
    prompts: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt="": prompts.append(prompt) or next(typed))
    ran: list[bool] = []

    async def run() -> CommandPreview:
        ran.append(True)
        return CommandPreview(exit_code=0, method="copy", files=[PreviewedFile(path="out.txt", change="created")])

    asked = request(tool="execute_command", input={"command": "make"}, key="make")
    asked.with_preview(PreviewOffer(available=True, reason="in a throwaway copy"), run)
    out = io.StringIO()
    answer = await TextView(out=out).ask(asked)
    assert answer == "deny" and ran == [True]
    assert prompts[0].startswith("Preview it first") and prompts[1].startswith("Please type y or n")
    assert "[y/n/a/v]" in prompts[2] and "created  out.txt" in out.getvalue()

    typed = iter(["n"])
    prompts.clear()
    asked.with_preview(PreviewOffer(available=False, reason="`pip install` reaches the network"), None)
    out = io.StringIO()
    assert await TextView(out=out).ask(asked) == "deny"
    assert len(prompts) == 1 and "No preview: `pip install` reaches the network." in out.getvalue()
