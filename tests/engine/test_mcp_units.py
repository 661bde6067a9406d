"""The small pieces of the MCP client on their own: forms, prompt invocations, result blocks,
token storage, call clocks that stop while a person answers, and where a server's log
messages are shown."""

from __future__ import annotations

import asyncio
import base64
import json
import stat

import mcp_types as types
import pytest
from mcp.shared.auth import OAuthToken

from codingcode_jupyter.engine.events import McpLog
from codingcode_jupyter.engine.mcp.call_clocks import CallClocks as _CallClocks
from codingcode_jupyter.engine.mcp.elicitation import ElicitationSchemaError, check_answer, parse_form
from codingcode_jupyter.engine.mcp.manager import McpManager
from codingcode_jupyter.engine.mcp.oauth import FileTokenStorage
from codingcode_jupyter.engine.mcp.origin import CallOrigin
from codingcode_jupyter.engine.mcp.prompts import (
    PromptArgument,
    PromptError,
    PromptInfo,
    check_arguments,
    parse_invocation,
)
from codingcode_jupyter.engine.mcp.results import resource_blocks, to_tool_result
from codingcode_jupyter.engine.mcp.server_log import LogEntry


def test_forms_reject_what_they_cannot_show_and_check_answers():
    with pytest.raises(ElicitationSchemaError, match="nested"):
        parse_form({"type": "object", "properties": {"nested": {"type": "object"}}})
    fields = parse_form({"type": "object", "required": ["n"], "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 5},
        "mail": {"type": "string", "format": "email"},
        "pick": {"type": "string", "enum": ["a", "b"], "enumNames": ["Apple", "Banana"]},
    }})
    assert [c.label for c in fields[2].choices] == ["Apple", "Banana"]
    assert check_answer(fields, {"n": "3", "mail": "", "pick": "b"}) == ({"n": 3, "pick": "b"}, [])
    _, problems = check_answer(fields, {"n": 9, "mail": "nope", "pick": "c", "extra": 1})
    assert len(problems) == 4 and any("at most 5" in p for p in problems) and any("extra" in p for p in problems)
    assert check_answer(fields, {})[1] == ["n: required"]


def test_prompt_invocations():
    info = PromptInfo("greet", arguments=(PromptArgument("name", True), PromptArgument("tone")))
    invocation = parse_invocation('/srv:greet "Ada Lovelace" tone=warm\nmore text')
    assert invocation.server == "srv" and invocation.prompt == "greet" and invocation.extra == "more text"
    assert check_arguments("srv", info, invocation) == {"name": "Ada Lovelace", "tone": "warm"}
    assert parse_invocation("fix /srv:greet please") is None and parse_invocation("/not a prompt") is None
    with pytest.raises(PromptError, match="given twice"):
        check_arguments("srv", info, parse_invocation("/srv:greet name=a name=b"))
    with pytest.raises(PromptError, match="1 value\\(s\\) too many"):
        check_arguments("srv", info, parse_invocation("/srv:greet a b c"))
    with pytest.raises(PromptError, match="cannot read"):
        parse_invocation('/srv:greet "unclosed')


def test_blobs_are_decoded_by_type_and_links_say_how_to_read_them():
    text_blob = types.BlobResourceContents(uri="x://t", mime_type="text/csv; charset=latin-1",
                                           blob=base64.b64encode("a,é\n".encode("latin-1")).decode())
    json_blob = types.BlobResourceContents(uri="x://j", mime_type="application/json", blob=base64.b64encode(b'{"k": 1}').decode())
    binary = types.BlobResourceContents(uri="x://b", mime_type="application/zip", blob=base64.b64encode(b"PK\x03\x04").decode())
    blocks = resource_blocks([text_blob, json_blob, binary])
    assert blocks[0]["text"].endswith("a,é\n") and blocks[1]["text"].endswith('{"k": 1}')
    assert blocks[2]["text"] == "[binary resource x://b (application/zip), 4 bytes: not shown to the model]"
    link = types.ResourceLink(type="resource_link", uri="x://r", name="r")
    assert 'read_mcp_resource(server="srv", uri="x://r")' in to_tool_result(types.CallToolResult(content=[link]), "srv").text_content
    assert "read_mcp_resource" not in to_tool_result(types.CallToolResult(content=[link])).text_content


async def test_token_file_is_private_and_bound_to_its_server(tmp_path):
    storage = FileTokenStorage(tmp_path / "tokens" / "srv.json", "https://one.example/mcp")
    await storage.set_tokens(OAuthToken(access_token="secret", expires_in=60, refresh_token="r"))
    assert stat.S_IMODE(storage.path.stat().st_mode) == 0o600
    assert (await storage.get_tokens()).access_token == "secret" and storage.expires_at() > 0
    other = FileTokenStorage(storage.path, "https://two.example/mcp")
    assert await other.get_tokens() is None  # another server's file: never sent there


@pytest.mark.slow
async def test_call_clocks_stop_while_a_person_answers():
    clocks = _CallClocks()

    async def call(seconds: float, wait_for_person: float) -> str:
        async with clocks.limit(seconds):
            if wait_for_person:
                with clocks.person_waiting():
                    await asyncio.sleep(wait_for_person)
            await asyncio.sleep(seconds / 2)
            return "done"

    assert await call(0.2, 0.4) == "done"  # 0.4 s with a person, then 0.1 s of the 0.2 s budget
    with pytest.raises(TimeoutError):
        async with clocks.limit(0.1):
            await asyncio.sleep(0.3)


async def test_warnings_become_notices_on_the_calls_line(tmp_path):
    # What a server logs reaches the manager the same way from any server: none needs to run.
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"srv": {"command": "true"}}}))
    manager = McpManager(tmp_path)
    server = manager.connection("srv")
    seen = []
    origin = CallOrigin(session_id="s", turn_id=3, agent="main", tool_use_id="t9", emit=seen.append)
    manager.server_logged(server, LogEntry(0.0, "info", None, "fine"), origin)
    manager.server_logged(server, LogEntry(0.0, "error", "db", "disk full"), origin)
    manager.server_logged(server, LogEntry(0.0, "warning", None, "slow disk"), None)
    [shown] = seen
    assert isinstance(shown, McpLog) and shown.level == "error" and "disk full" in shown.text and shown.turn_id == 3
    assert "srv (error)" in shown.text
    kept = [e for e in manager.take_events() if isinstance(e, McpLog)]
    assert [e.level for e in kept] == ["warning"] and "slow disk" in kept[0].text
