"""What a person reads: the sentences of words.py, the HTML of rendering.py, the static record."""

from __future__ import annotations

import re

from codingcode_jupyter.engine.approval.types import ApprovalRequest
from codingcode_jupyter.engine.events import (
    ApprovalAnswered,
    ApprovalRequested,
    AuditRecorded,
    Notice,
    TextDelta,
    TodoItem,
    TodoUpdated,
    ToolCallFinished,
    ToolCallStarted,
    TurnDone,
    Usage,
)
from codingcode_jupyter.notebook import words
from codingcode_jupyter.notebook.record import TurnRecord
from codingcode_jupyter.notebook.rendering import diff_html, render_markdown

DIFF = "--- /dev/null\n+++ b/codingcode_demo.py\n@@ -0,0 +1,2 @@\n+import os\n+print(os.getcwd())  # a comment that is long enough to need more room than a narrow column offers\n"


def test_the_action_is_one_sentence_with_relative_paths(tmp_path):
    project = tmp_path / "demo_project"
    content = "".join(f"line {i}\n" for i in range(14))
    assert words.action("write_file", {"path": f"{project}/codingcode_demo.py", "content": content},
                        preview=DIFF, project=project) == "create `codingcode_demo.py` (14 lines)"
    changed = "--- a/cli.py\n+++ b/cli.py\n@@ -1 +1,2 @@\n-old\n+new\n+more\n"
    assert words.action("edit_file", {"path": "cli.py"}, preview=changed, project=project) == "edit `cli.py` (+2 −1 lines)"
    assert words.action("execute_command", {"command": "pytest -q"}, project=project) == "run `pytest -q` in `demo_project/`"
    assert words.action("execute_command", {"command": "ls", "cwd": "src"}, project=project) == "run `ls` in `demo_project/src/`"
    assert words.action("srv:lookup", {}, key="x", project=project) == "call `lookup` on the MCP server `srv` with `x`"


def test_why_and_who_speak_without_layer_names_or_words_for_the_model(tmp_path):
    texts = [
        words.why_asked("confirm", None, "No rule allows write_file here"),
        words.why_asked("rules", "builtin:protected", f"path `x` may change the project's settings ({tmp_path}/x), which is protected", tmp_path),
        words.why_asked("rules", "builtin:env-file", "Built-in rule builtin:env-file: `cat .env` touches a .env file."),
        words.why_asked("rules", "execute_command(git push *)", "Because rule ... asks before"),
        words.why_asked("sandbox", None, "unavailable"),
    ]
    for text in texts:
        assert "layer" not in text and "confirm" not in text and "ask the user" not in text, text
    assert "the project's settings" in texts[1] and str(tmp_path) not in texts[1]
    record = {"decision": "deny", "by": "user", "layer": "confirm",
              "reason": "Denied: the user declined this write_file call; do not retry it — ask the user what they want instead."}
    assert words.decision(record, waited=4.2) == "denied by you after 4 s"
    assert words.decision({"decision": "deny", "by": "timeout"}) == "denied: nobody answered in time"
    assert words.decision({"decision": "deny", "by": "nobody"}) == "denied: nobody was there to answer"
    assert words.decision({"decision": "allow", "by": "readonly", "layer": "readonly"}) == "allowed: it changes nothing"
    assert words.decision({"decision": "deny", "by": "mode", "mode": "plan"}) == "denied: plan mode runs only tools that read"
    assert words.decision({"decision": "deny", "by": "rule", "rule": "builtin:rm-root"}) == "denied by the built-in rule `rm-root`"
    # sandbox.autoAllow: the sandbox layer allowed it and it ran there (not "not available").
    assert words.decision({"decision": "allow", "by": "sandbox", "layer": "sandbox"}) == "ran in the sandbox (auto-allowed)"
    assert words.decision({"decision": "deny", "by": "sandbox", "layer": "sandbox"}) == \
        "denied: the command sandbox is not available"


def test_the_buttons_say_what_they_will_save_and_where():
    rule = "write_file(/p/codingcode_demo.py)"
    before = words.consequences([[rule], ["write_file(/p/**)"]], [[rule]])
    # In words, not the rule's syntax (issue 36.12): what the agent may do from now on, and where it is saved;
    # the rule itself only as the note after the words.
    assert "write `/p/codingcode_demo.py` from now on" in before and words.LOCAL_SETTINGS in before
    assert "Never allow refuses" in before and "/p/" + "**" not in before
    assert re.sub(r"\(rules? `[^`]*`\)", "", before).count("write_file(") == 0, before
    broader = words.consequences([[rule], ["write_file(/p/**)"]], [[rule]], chosen=["write_file(/p/**)"])
    assert "write files under `/p/` from now on" in broader and "(rule `write_file(/p/**)`)" in broader
    assert '<small class="cc-rule"' in words.code_html(broader)
    assert "this once" in words.consequences([], [[rule]], forced=True)
    assert "this once" in words.consequences([], [])
    assert words.saved_rule("always", ["execute_command(pytest *)"]) == (
        f"from now on it may run `pytest` commands without asking (rule `execute_command(pytest *)`), "
        f"saved in `{words.LOCAL_SETTINGS}`")
    assert words.saved_rule("never", [rule]).startswith("from now on it is refused whenever it asks to write `/p/")
    assert words.saved_rule("allow", [rule]) == ""
    assert "could not be saved" in words.saved_rule("always", [rule], reason="(could not save the rule: disk full)")


def test_markdown_renders_like_the_frontend():
    html = render_markdown("See [docs](https://example.org/x).\n\n```python\ndef f():\n    return 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert 'target="_blank"' in html and 'rel="noopener noreferrer"' in html
    assert "mirror-editor-keyword-color" in html  # `def` highlighted with the editor's own colour
    assert "<td" in html and "border:1px solid" in html
    assert "line-height:var(--jp-content-line-height" in html  # not the widget's control height


def test_the_diff_is_highlighted_and_scrolls_instead_of_breaking_words():
    html = diff_html(DIFF)
    assert html.count('class="cc-diff-add"') == 2 and "mirror-editor-keyword-color" in html
    assert "white-space:pre" in html and "overflow:auto" in html and "break-all" not in html


def _turn(tmp_path) -> TurnRecord:
    record = TurnRecord(project=tmp_path)
    record.apply(TextDelta(text="I'll add **the file**."))
    record.apply(ToolCallStarted(tool_use_id="t1", tool="write_file", input={"path": "codingcode_demo.py", "content": "x"},
                                 key="codingcode_demo.py"))
    record.apply(ApprovalRequested.carrying(ApprovalRequest(
        session_id="", turn_id=0, tool_use_id="t1", tool="write_file", input={"path": "codingcode_demo.py"}, preview=DIFF,
        layer="confirm", reason="No rule allows write_file here")))
    record.apply(ApprovalAnswered(tool_use_id="t1", answer="timeout", by="timeout"))
    record.apply(AuditRecorded(record={"event": "decision", "tool_use_id": "t1", "tool": "write_file", "decision": "deny",
                                       "by": "timeout", "layer": "confirm",
                                       "reason": "Denied: nobody answered; do not retry it now — continue without it"}))
    record.apply(ToolCallFinished(tool_use_id="t1", tool="write_file", status="denied",
                                  result="Denied: nobody answered; do not retry it now — continue without it"))
    record.apply(TodoUpdated(items=[TodoItem(step="Write the file", status="in_progress")]))
    record.apply(Notice(text=f"Read {tmp_path}/cli.py"))
    record.apply(TurnDone(stop_reason="end_turn", usage=Usage(input_tokens=1200, output_tokens=30), cost_usd=0.0042))
    return record


def test_the_record_holds_answer_decision_diff_todo_and_usage_without_words_for_the_model(tmp_path):
    record = _turn(tmp_path)
    for page in (record.html(), record.text()):
        assert "the file" in page and "nobody answered in time" in page and "getcwd" in page
        assert "Write the file" in page and "1,200 in" in page and "$0.0042" in page
        assert "do not retry" not in page and str(tmp_path) not in page
    assert "<strong>the file</strong>" in record.html()


def test_the_record_has_no_script_no_fixed_colours_and_no_emoji(tmp_path):
    page = _turn(tmp_path).html()
    assert "<script" not in page.lower() and "onclick" not in page.lower()
    # Every colour is a theme variable; a literal colour only appears as a variable's fallback.
    without_fallbacks = re.sub(r"var\(--jp-[a-z0-9-]+, [^()]*?\)", "var()", page)
    assert not re.search(r"#[0-9a-fA-F]{3,8}\b|rgba?\(", without_fallbacks)
    # No pictograph that needs an emoji font (the icons are inline SVG).
    emoji = [c for c in page if 0x2300 <= ord(c) <= 0x23FF or 0x2600 <= ord(c) <= 0x27BF or ord(c) >= 0x1F000]
    assert emoji == []
    assert "<svg" in page
