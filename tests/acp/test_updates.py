"""The translation between the engine and ACP, without a kernel or a process."""

from __future__ import annotations

from pathlib import Path

from acp import image_block, resource_block, resource_link_block, text_block
from acp.helpers import embedded_text_resource
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    SseMcpServer,
)

from codingcode_jupyter.acp.kernel_front import history, planned_edit
from codingcode_jupyter.acp.updates import (
    RESULT_LIMIT,
    answer_of,
    approval_permission,
    engine_prompt,
    event_updates,
    mcp_entries,
    question_permission,
    stop_reason,
)
from codingcode_jupyter.engine.approval.types import UNCONFINED_CHOICES, ApprovalRequest
from codingcode_jupyter.engine.events import TextDelta, TodoItem, TodoUpdated, ToolCallFinished, ToolCallStarted

PROJECT = Path("/work/project")


def _updates(event, extra=None):
    return event_updates(event.model_dump(mode="json"), extra, PROJECT)


def test_the_prompt_keeps_text_pictures_and_attached_files():
    assert engine_prompt([text_block("fix it"), text_block("please")]) == "fix it\n\nplease"
    blocks = engine_prompt([text_block("what is this?"), image_block("AAAA", "image/png"),
                            resource_block(embedded_text_resource("file:///p/a.py", "x = 1\n")),
                            resource_link_block("b.py", "file:///p/b.py")])
    assert blocks == [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "text", "text": '<file uri="file:///p/a.py">\nx = 1\n</file>'},
        {"type": "text", "text": "@file:///p/b.py"},
    ]


def test_a_command_call_shows_its_command_and_an_edit_its_diff():
    [command] = _updates(ToolCallStarted(tool_use_id="t1", tool="execute_command",
                                         input={"command": "pytest -q", "cwd": "src"}, key="pytest -q"),
                         {"title": "Run `pytest -q` in `src/`"})
    assert (command.session_update, command.kind, command.status, command.title) == (
        "tool_call", "execute", "pending", "Run `pytest -q` in `src/`")
    assert command.content[0].content.text == "```sh\n# in src\npytest -q\n```"
    diff = {"path": "/work/project/a.py", "old_text": "a\n", "new_text": "b\n"}
    [edit] = _updates(ToolCallStarted(tool_use_id="t2", tool="edit_file", input={"path": "a.py"}), {"diff": diff})
    assert edit.kind == "edit" and [loc.path for loc in edit.locations] == ["/work/project/a.py"]
    assert (edit.content[0].type, edit.content[0].old_text, edit.content[0].new_text) == ("diff", "a\n", "b\n")
    [done] = _updates(ToolCallFinished(tool_use_id="t2", tool="edit_file", status="ok", result="edited"), {"diff": diff})
    assert (done.session_update, done.status, done.content[0].type) == ("tool_call_update", "completed", "diff")


def test_an_allowed_call_is_under_way_and_a_denied_one_waits_for_its_end():
    from codingcode_jupyter.engine.events import ApprovalAnswered

    [running] = _updates(ApprovalAnswered(tool_use_id="t4", answer="always"))
    assert (running.tool_call_id, running.status) == ("t4", "in_progress")
    assert _updates(ApprovalAnswered(tool_use_id="t4", answer="deny")) == []


def test_a_failed_call_shows_its_result_cut_to_the_limit():
    [failed] = _updates(ToolCallFinished(tool_use_id="t3", tool="execute_command", status="denied",
                                         result="x" * (RESULT_LIMIT + 10)))
    assert failed.status == "failed"
    shown = failed.content[0].content.text
    assert "[... cut]" in shown and len(shown) < RESULT_LIMIT + 100


def test_the_todo_list_is_the_plan_and_a_sub_agents_text_a_thought():
    [plan] = _updates(TodoUpdated(items=[TodoItem(step="read", status="completed"), TodoItem(step="fix")]))
    assert [(e.content, e.status) for e in plan.entries] == [("read", "completed"), ("fix", "pending")]
    assert _updates(TodoUpdated(agent="main/explore#1", items=[TodoItem(step="x")])) == []
    [thought] = _updates(TextDelta(agent="main/explore#1", text="looking"))
    assert thought.session_update == "agent_thought_chunk"
    [said] = _updates(TextDelta(text="hi"))
    assert said.session_update == "agent_message_chunk" and said.content.text == "hi"


def test_an_approval_question_is_the_cards_four_buttons():
    request = ApprovalRequest(session_id="s", turn_id=1, tool_use_id="t9", tool="write_file",
                              input={"path": "a.py", "content": "b\n"}, preview="--- a.py\n+++ a.py\n")
    diff = {"path": "/p/a.py", "old_text": None, "new_text": "b\n"}
    call, options = approval_permission({"request": request.model_dump(mode="json"), "text": "full with diff",
                                         "summary": "words only", "diff": diff})
    assert call.tool_call_id == "t9"
    assert [c.type for c in call.content] == ["diff", "content"] and call.content[1].content.text == "words only"
    assert [o.option_id for o in options] == ["allow", "always", "deny", "never"]
    plain, _ = approval_permission({"request": request.model_dump(mode="json"), "text": "the card"})
    assert [c.content.text for c in plain.content] == ["the card"]
    assert answer_of(AllowedOutcome(outcome="selected", option_id="never"), options) == "never"
    assert answer_of(AllowedOutcome(outcome="selected", option_id="maybe"), options) is None
    assert answer_of(DeniedOutcome(outcome="cancelled"), options) is None


def test_a_question_the_managed_policy_holds_offers_allow_and_deny_only():
    request = ApprovalRequest(session_id="s", turn_id=1, tool_use_id="t9", tool="execute_command",
                              input={"command": "git push"}, forced=True,
                              policy="Your organisation's managed settings ask about this call every time.")
    call, options = approval_permission({"request": request.model_dump(mode="json"), "text": "the card"})
    assert [o.option_id for o in options] == ["allow", "deny"]
    assert call.content[-1].content.text == request.policy


def test_a_commands_question_offers_its_preview_and_comes_back_with_it():
    """Preview (issue 49): the editor's permission request offers it last, as a refusal (it does not allow
    the call); once picked the kernel runs it and the same question comes back with what the command
    would change and no second Preview. Where none can be faithful the reason is in the question."""
    import asyncio

    from codingcode_jupyter.acp.kernel_front import RelayFront
    from codingcode_jupyter.engine.command_preview import CommandPreview, PreviewedFile, PreviewOffer

    request = ApprovalRequest(session_id="s", turn_id=1, tool_use_id="t9", tool="execute_command",
                              input={"command": "make clean"})
    ran = []

    async def run() -> CommandPreview:
        ran.append(True)
        return CommandPreview(exit_code=0, method="copy", output_tail="cleaned",
                              files=[PreviewedFile(path="build/app.o", change="deleted")])

    request.with_preview(PreviewOffer(available=True, reason="runs it in a throwaway copy"), run)

    class Editor:
        def __init__(self) -> None:
            self.asked: list[dict] = []

        def send(self, data: dict) -> None:
            pass

        async def ask(self, kind: str, payload: dict) -> str | None:
            self.asked.append(dict(payload))
            _call, options = approval_permission(payload)
            ids = [o.option_id for o in options]
            return "preview" if "preview" in ids else "deny"

    editor = Editor()
    answer = asyncio.run(RelayFront(editor, "s", PROJECT).ask(request))
    assert answer == "deny" and ran == [True] and len(editor.asked) == 2
    first, first_options = approval_permission(editor.asked[0])
    assert [o.option_id for o in first_options] == ["allow", "always", "deny", "never", "preview"]
    assert first_options[-1].kind == "reject_once"
    second, second_options = approval_permission(editor.asked[1])
    assert "preview" not in [o.option_id for o in second_options]
    shown = second.content[-1].content.text
    assert "deleted  build/app.o" in shown and "cleaned" in shown and "exit code 0" in shown

    request.with_preview(PreviewOffer(available=False, reason="`pip install` reaches the network"), None)
    call, options = approval_permission({"request": request.model_dump(mode="json"), "text": "the card"})
    assert "preview" not in [o.option_id for o in options]
    assert call.content[-1].content.text == "No preview: `pip install` reaches the network."


def test_the_no_sandbox_question_offers_the_cards_choices():
    start, options = question_permission({"kind": "unconfined", "id": "q3", "text": "no sandbox"})
    assert start.tool_call_id == "codingcode-unconfined-q3" and start.status == "pending"
    assert [(o.option_id, o.name) for o in options] == list(UNCONFINED_CHOICES.items())
    _, trust = question_permission({"kind": "trust", "id": "q4", "text": "hooks"})
    assert [o.option_id for o in trust] == ["trust", "not_now"]


def test_the_editors_mcp_servers_become_entries():
    servers = [McpServerStdio(name="files", command="srv", args=["-v"], env=[EnvVariable(name="K", value="v")]),
               HttpMcpServer(type="http", name="web", url="https://mcp.example/mcp",
                             headers=[HttpHeader(name="Authorization", value="Bearer t")]),
               SseMcpServer(type="sse", name="old", url="https://mcp.example/sse", headers=[])]
    assert mcp_entries(servers) == {
        "files": {"command": "srv", "args": ["-v"], "env": {"K": "v"}},
        "web": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer t"}},
        "old": {"type": "sse", "url": "https://mcp.example/sse", "headers": {}},
    }


def test_stop_reasons():
    assert stop_reason("max_steps", cancelled=False) == "max_turn_requests"
    assert stop_reason("interrupted", cancelled=False) == "cancelled"
    assert stop_reason("end_turn", cancelled=True) == "cancelled"


def test_the_planned_edit_is_the_files_text_before_and_after(tmp_path):
    (tmp_path / "a.txt").write_text("one two one\n")
    assert planned_edit(tmp_path, "write_file", {"path": "new.txt", "content": "n\n"}) == {
        "path": str(tmp_path / "new.txt"), "old_text": None, "new_text": "n\n"}
    edit = {"path": "a.txt", "old_string": "one", "new_string": "1"}
    assert planned_edit(tmp_path, "edit_file", edit)["new_text"] == "1 two one\n"
    assert planned_edit(tmp_path, "edit_file", {**edit, "replace_all": True})["new_text"] == "1 two 1\n"
    assert planned_edit(tmp_path, "edit_file", {**edit, "old_string": "three"}) is None
    assert planned_edit(tmp_path, "read_file", {"path": "a.txt"}) is None


def test_a_loaded_conversation_replays_what_was_said_and_each_call():
    messages = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                          {"type": "tool_use", "id": "u1", "name": "read_file", "input": {"path": "a"}},
                                          {"type": "tool_use", "id": "u2", "name": "execute_command", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "x"},
                                     {"type": "tool_result", "tool_use_id": "u2", "content": "no", "is_error": True}]},
    ]
    assert history(messages) == [
        {"role": "user", "text": "fix it"}, {"role": "assistant", "text": "Looking."},
        {"role": "tool", "id": "u1", "tool": "read_file", "input": {"path": "a"}, "status": "completed"},
        {"role": "tool", "id": "u2", "tool": "execute_command", "input": {}, "status": "failed"},
    ]
