"""engine/messages.py: the SDK's TypedDicts for the checker only, the narrowing helpers, the exact wire shape."""

import json
import subprocess
import sys

import pytest

from codingcode_jupyter.engine.agent import merge_message, with_cache_breakpoints
from codingcode_jupyter.engine.messages import (
    blocks,
    cache_last,
    own_blocks,
    result_text,
    text_block,
    tool_result,
    user_blocks,
    user_text,
)

_LOADS_SDK = "import sys; {imports}; print('anthropic' in sys.modules)"


def _loads_sdk(imports: str) -> bool:
    out = subprocess.run([sys.executable, "-c", _LOADS_SDK.format(imports=imports)], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip() == "True"


@pytest.mark.slow
def test_the_typed_engine_does_not_load_the_sdk():
    engine = ("import codingcode_jupyter.engine.messages, codingcode_jupyter.engine.agent, "
              "codingcode_jupyter.engine.session, codingcode_jupyter.engine.models.demo, "
              "codingcode_jupyter.engine.context.transforms, codingcode_jupyter.engine.approval.reviewer")
    assert not _loads_sdk(engine)
    # Control: the check sees the SDK when it is loaded.
    assert _loads_sdk(engine + "; import anthropic.types")


def test_blocks_is_the_messages_own_list_and_a_string_reads_as_one_text_block():
    message = user_blocks([text_block("a")])
    blocks(message).append(text_block("b"))
    assert message["content"] == [text_block("a"), text_block("b")]
    prompt = user_blocks("hello")
    assert blocks(prompt) == [{"type": "text", "text": "hello"}]
    assert prompt["content"] == "hello"  # reading does not change it
    own_blocks(prompt).append(text_block("more"))
    assert prompt["content"] == [{"type": "text", "text": "hello"}, {"type": "text", "text": "more"}]


def test_merge_message_keeps_content_a_list_and_roles_alternating():
    messages = []
    merge_message(messages, user_blocks("first"))
    merge_message(messages, user_text("second"))
    merge_message(messages, {"role": "assistant", "content": [text_block("ok")]})
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ]


def test_a_tool_result_is_written_exactly_as_before():
    parts = [text_block("done")]
    assert json.dumps(tool_result("toolu_1", parts)) == (
        '{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "done"}]}')
    assert json.dumps(tool_result("toolu_1", parts, is_error=True)).endswith('"is_error": true}')
    image = {"type": "image", "source": {}}
    assert result_text(tool_result("t", [text_block("a"), image, text_block("b")])) == "a\n\nb"
    assert result_text({"type": "tool_result", "tool_use_id": "t", "content": "plain"}) == "plain"


def test_cache_breakpoints_mark_copies_not_the_conversation():
    messages = [user_text("q"), {"role": "assistant", "content": [text_block("a")]}, user_text("r"),
                {"role": "assistant", "content": [text_block("b")]}]
    marked = with_cache_breakpoints(messages)
    assert [m["content"][-1].get("cache_control") for m in marked] == [None, None, {"type": "ephemeral"}, {"type": "ephemeral"}]
    assert marked[0] is messages[0]
    assert all("cache_control" not in m["content"][-1] for m in messages)
    message = user_text("x")
    cache_last(message)
    assert message["content"][-1]["cache_control"] == {"type": "ephemeral"}
