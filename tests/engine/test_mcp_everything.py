"""The reference server-everything, over stdio and streamable HTTP, through the agent loop.

A scripted model calls every tool the server offers; what the model receives (the request
bodies the fake Messages server got) is checked: text, images, resource links it can
follow, embedded resources, decoded text blobs, structured content, progress on the tool's
line, sampling answered by the same scripted model (after an approval question, its tokens
in the turn), elicitation answered programmatically, roots, log messages.

Over stdio the tests are marked slow (run in CI): the server ignores the end of its input,
so each one ends with the SDK's 2 s grace before it stops the process. The default run
keeps every test over streamable HTTP, on one server process.
"""

from __future__ import annotations

import base64
import json

import pytest

from codingcode_jupyter.engine.events import McpProgress
from codingcode_jupyter.engine.mcp.elicitation import ElicitationResponse
from codingcode_jupyter.engine.mcp.manager import McpManager
from codingcode_jupyter.engine.mcp.prompts import PromptError
from tests.engine.mcp_real import (
    EVERYTHING,
    NODE,
    agent_loop,
    by_display,
    ctx,
    everything_http,
    needs,
    text_of,
    tool_results,
)
from tests.fakes.anthropic_server import Reply, text, tool_use

pytestmark = needs(EVERYTHING, "@modelcontextprotocol/server-everything")
slow = pytest.mark.slow

SAMPLED = "Sampled: hello from the scripted model"
GZIP_INPUT = "data:text/plain;base64," + base64.b64encode(b"compress me, please").decode()
# Every tool the server offers to a client that declares sampling, elicitation and roots, with
# arguments. (simulate-research-query needs task-augmented calls and is not offered.)
CALLS = {
    "echo": {"message": "hello"},
    "get-annotated-message": {"messageType": "success", "includeImage": True},
    "get-env": {},
    "get-resource-links": {"count": 2},
    "get-resource-reference": {"resourceType": "Text", "resourceId": 1},
    "get-structured-content": {"location": "New York"},
    "get-sum": {"a": 2, "b": 3},
    "get-tiny-image": {},
    "gzip-file-as-resource": {"name": "note.txt.gz", "data": GZIP_INPUT, "outputType": "resource"},
    "toggle-simulated-logging": {},
    "toggle-subscriber-updates": {},
    "trigger-long-running-operation": {"duration": 0.3, "steps": 3},
    "get-roots-list": {},
    "trigger-elicitation-request": {},
    "trigger-url-elicitation": {"url": "http://127.0.0.1:9/finish-in-browser", "message": "Finish in the browser"},
    "trigger-sampling-request": {"prompt": "say hi", "maxTokens": 20},
}


@pytest.fixture(scope="module")
def everything_http_server(tmp_path_factory):
    """One server-everything listening over streamable HTTP for the module; each test opens a
    session of its own on it (the server keeps its state per session)."""
    listening = everything_http("streamableHttp", log=tmp_path_factory.mktemp("everything") / "everything-http.log")
    yield f"http://127.0.0.1:{listening.port}/mcp"
    listening.stop()


@pytest.fixture(params=[pytest.param("stdio", marks=slow), "http"])
async def everything(request, tmp_path):
    """A manager with server-everything started over the parametrised transport."""
    if request.param == "stdio":
        config = {"command": NODE, "args": [str(EVERYTHING), "stdio"]}
    else:
        config = {"type": "http", "url": request.getfixturevalue("everything_http_server")}
    manager = McpManager(tmp_path, start_timeout=30, call_timeout=30, token_dir=tmp_path / "tokens")
    status = await manager.add("everything", config)
    assert status.state == "running", status.error
    yield manager
    await manager.aclose()


@pytest.mark.slow
async def test_every_offered_tool_through_the_agent_loop(everything, fake_api, tmp_path):
    manager = everything
    tools = by_display(manager)
    offered = {name.split(":", 1)[1] for name in tools if name.startswith("everything:")}
    # The client declared sampling, elicitation and roots: the server registered the tools that need them.
    assert offered == set(CALLS)
    assert "everything:simulate-research-query" not in tools
    assert ("simulate-research-query", "needs task-augmented execution, which this client does not do") in \
        manager.connection("everything").skipped_tools

    elicited = []

    async def answer(request):
        elicited.append(request)
        if request.mode == "url":
            return ElicitationResponse.accept()
        return ElicitationResponse.accept({"name": "Ada Lovelace", "check": True, "integer": 7,
                                           "untitledSingleSelectEnum": "Joey"})

    manager.elicitor = answer
    asked = []

    async def ask(question):
        asked.append(question)
        return "allow"

    wire = {name.split(":", 1)[1]: tool.name for name, tool in tools.items() if name.startswith("everything:")}
    ids = {tool: f"call_{i}" for i, tool in enumerate(CALLS)}
    steps = [
        Reply([tool_use(wire[tool], args, id=ids[tool]) for tool, args in CALLS.items()]),
        Reply([tool_use("read_mcp_resource", {"server": "everything", "uri": "demo://resource/dynamic/blob/1"}, id="read"),
               tool_use("list_mcp_resources", {}, id="list")]),
        Reply([text("All done.")]),
    ]
    sampling = []

    def respond(body):
        if not body.get("tools"):  # the server's sampling request: no tools, its own messages
            sampling.append(body)
            return Reply([text(SAMPLED)], usage={"input_tokens": 7, "output_tokens": 3})
        return steps.pop(0)

    fake_api.default = respond
    loop, events = agent_loop(tmp_path, manager, ask=ask)
    from codingcode_jupyter.engine.agent import Conversation

    done = await loop.run(Conversation(), "use every tool", turn_id=1)
    assert done.stop_reason == "end_turn", [e for e in events if e.type == "error"]

    main = [body for body in fake_api.requests if body.get("tools")]
    assert len(main) == 3
    first = tool_results(main[1])
    assert set(first) == set(ids.values())
    got = {tool: first[ids[tool]] for tool in CALLS}
    assert all(not block.get("is_error") for block in got.values()), {t: text_of(b) for t, b in got.items() if b.get("is_error")}

    assert "Echo: hello" in text_of(got["echo"])
    assert "The sum of 2 and 3 is 5" in text_of(got["get-sum"])
    image = [part for part in got["get-tiny-image"]["content"] if part["type"] == "image"]
    assert image and image[0]["source"]["media_type"] == "image/png" and base64.b64decode(image[0]["source"]["data"])[:4] == b"\x89PNG"
    assert any(part["type"] == "image" for part in got["get-annotated-message"]["content"])
    links = text_of(got["get-resource-links"])
    assert 'read_mcp_resource(server="everything", uri="demo://resource/dynamic/blob/1")' in links
    embedded = text_of(got["get-resource-reference"])
    assert "Resource demo://resource/dynamic/text/1 (text/plain):\nResource 1: This is a plaintext resource" in embedded
    structured = text_of(got["get-structured-content"])
    assert '"temperature"' in structured and '"conditions"' in structured
    gzip = text_of(got["gzip-file-as-resource"])
    assert "binary resource" in gzip and "application/gzip" in gzip and "not shown to the model" in gzip
    assert "Started simulated" in text_of(got["toggle-simulated-logging"])
    assert text_of(got["toggle-subscriber-updates"])
    assert json.loads(text_of(got["get-env"]))  # the server's environment, as JSON text
    assert "Long running operation completed" in text_of(got["trigger-long-running-operation"])
    assert tmp_path.resolve().as_uri() in text_of(got["get-roots-list"])

    # Elicitation: a form with typed fields, answered; a URL, accepted.
    form = next(r for r in elicited if r.mode == "form")
    kinds = {f.name: f.kind for f in form.fields}
    assert kinds["name"] == "text" and kinds["check"] == "boolean" and kinds["integer"] == "integer"
    assert kinds["untitledSingleSelectEnum"] == "choice" and kinds["untitledMultipleSelectEnum"] == "choices"
    assert form.tool_use_id == ids["trigger-elicitation-request"]
    assert "- Name: Ada Lovelace" in text_of(got["trigger-elicitation-request"])
    url = next(r for r in elicited if r.mode == "url")
    assert url.url == "http://127.0.0.1:9/finish-in-browser" and url.tool_use_id == ids["trigger-url-elicitation"]
    assert "User completed the URL elicitation flow" in text_of(got["trigger-url-elicitation"])

    # Sampling: asked first (server, messages, model, limit), answered by the same scripted model.
    [question] = [q for q in asked if q.tool == "everything:sampling"]
    assert question.input["maxTokens"] == 20 and question.input["model"] == "claude-sonnet-5"
    assert "Resource trigger-sampling-request context: say hi" in question.preview
    [sample] = sampling
    assert sample["max_tokens"] == 20 and "say hi" in json.dumps(sample["messages"])
    assert SAMPLED in text_of(got["trigger-sampling-request"])
    assert done.usage.input_tokens == 3 * 10 + 7 and done.usage.output_tokens == 3 * 5 + 3

    # Progress: a token went with the call; the updates reached the call's line, in order.
    progress = [e for e in events if isinstance(e, McpProgress)]
    assert [(e.progress, e.total) for e in progress] == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]
    assert {e.tool_use_id for e in progress} == {ids["trigger-long-running-operation"]} and "3/3" in progress[-1].text

    # The resource link was followed: a text/plain blob comes back decoded.
    second = tool_results(main[2])
    assert "Resource 1: This is a base64 blob" in text_of(second["read"])
    assert "demo://resource/static/document/architecture.md" in text_of(second["list"])

    # Roots were listed at start-up; the server logged that, and the log is kept.
    log = manager.describe_log("everything")
    assert "Roots updated: 1 root(s) received from client" in log


async def test_a_form_nobody_can_answer_is_declined_with_a_notice(everything, tmp_path):
    manager = everything  # no elicitor, no front attached: headless
    result = await by_display(manager)["everything:trigger-elicitation-request"].run({}, ctx(tmp_path))
    assert "User declined to provide the requested information" in result.text_content
    notices = [e.text for e in manager.take_events()]
    assert any("Declined MCP server everything's request for input" in n for n in notices)


async def test_prompts_are_listed_and_expanded_with_checked_arguments(everything):
    manager = everything
    text_out = manager.describe()
    assert "/everything:args-prompt city [state]" in text_out and "/everything:simple-prompt" in text_out
    content = await manager.expand_prompt('/everything:args-prompt city="New York" state=NY\nand be brief')
    joined = json.dumps(content)
    assert "New York" in joined and "NY" in joined and content[-1] == {"type": "text", "text": "and be brief"}
    positional = await manager.expand_prompt("/everything:args-prompt Paris")
    assert "Paris" in json.dumps(positional)
    resource = await manager.expand_prompt("/everything:resource-prompt resourceType=Text resourceId=2")
    assert "Resource demo://resource/dynamic/text/2 (text/plain):" in json.dumps(resource)
    assert await manager.expand_prompt("plain request") is None
    with pytest.raises(PromptError, match="missing 'city'.*Usage: /everything:args-prompt city \\[state\\]"):
        await manager.expand_prompt("/everything:args-prompt state=NY")
    with pytest.raises(PromptError, match="unknown argument 'town'"):
        await manager.expand_prompt("/everything:args-prompt city=Rome town=x")
    with pytest.raises(PromptError, match="no prompt 'nope'"):
        await manager.expand_prompt("/everything:nope")
    with pytest.raises(PromptError, match="no MCP server named 'nobody'"):
        await manager.expand_prompt("/nobody:prompt")
