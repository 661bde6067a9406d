"""Custom tools from a function: schema from type hints, validation, results, threads, hooks."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import io
import threading
import time
from pathlib import Path
from typing import Annotated, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from codingcode_jupyter.engine.agent import AgentLoop, Conversation
from codingcode_jupyter.engine.hooks import pre_tool_use as hooks
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import AnyArgs, ToolContext, ToolDefinition, ToolError
from codingcode_jupyter.engine.tools.custom import (
    Image,
    ToolDefinitionError,
    function_tool,
    on_approval,
    pre_tool_use,
    to_tool_result,
    tool,
)
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from codingcode_jupyter.engine.tools.resolver import SessionToolResolver
from tests.engine.helpers import AllowAll, Recorder, echo_tool, make_deps
from tests.fakes.anthropic_server import Reply, text, tool_use

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def make_ctx(tmp_path: Path, **kw) -> ToolContext:
    return ToolContext.standalone(tmp_path, session_id="s1", turn_id=3, tool_use_id="tu1", **kw)


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry([echo_tool("read_file")])


@pytest.fixture(autouse=True)
def clean_hooks():
    before_hooks, before_obs = hooks.pre_tool_use_hooks(), hooks.approval_observers()
    yield
    for hook in hooks.pre_tool_use_hooks():
        if hook not in before_hooks:
            hooks.unregister(hook.fn)
    for observer in hooks.approval_observers():
        if observer not in before_obs:
            hooks.unregister(observer)


# -- the schema ---------------------------------------------------------------------------


class Point(BaseModel):
    x: float
    y: float = 0.0


def test_schema_is_exactly_what_the_type_hints_say(registry):
    @tool(registry=registry)
    def measure(
        text: Annotated[str, Field(description="The text to measure.")],
        ctx: ToolContext,
        unit: Literal["words", "chars"] = "words",
        limit: Optional[int] = None,
        tags: list[str] = [],  # noqa: B006 (a default, never mutated)
        origin: Point | None = None,
        json: bool = False,
        scale: float = Field(1.0, gt=0, description="Multiplier."),
    ) -> dict:
        """Measure a text.

        Counts words or characters.

        Args:
            text: Ignored here: the Annotated description wins.
            unit: What to count.
            json: Answer as JSON.
        """
        return {}

    assert measure.name == "measure" and measure.source == "custom"
    assert measure.description == "Measure a text.\n\nCounts words or characters."
    assert measure.short_description == "Measure a text."
    assert measure.input_schema == {
        "$defs": {
            "Point": {
                "properties": {"x": {"type": "number"}, "y": {"default": 0.0, "type": "number"}},
                "required": ["x"],
                "type": "object",
            }
        },
        "additionalProperties": False,
        "properties": {
            "json": {"default": False, "description": "Answer as JSON.", "type": "boolean"},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "origin": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}], "default": None},
            "scale": {"default": 1.0, "description": "Multiplier.", "exclusiveMinimum": 0, "type": "number"},
            "tags": {"default": [], "items": {"type": "string"}, "type": "array"},
            "text": {"description": "The text to measure.", "type": "string"},
            "unit": {"default": "words", "description": "What to count.", "enum": ["words", "chars"], "type": "string"},
        },
        "required": ["text"],
        "type": "object",
    }
    assert "ctx" not in measure.input_schema["properties"]
    assert registry.get("measure") is measure


def test_numpy_docstring_and_name_override(registry):
    @tool(name="wc-2", read_only=True, deferred=True, short_description="Count.", registry=registry)
    def word_count(text: str) -> int:
        """Count the words.

        Parameters
        ----------
        text : str
            The text
            to count.
        """
        return len(text.split())

    assert word_count.name == "wc-2" and word_count.read_only and word_count.deferred
    assert word_count.short_description == "Count."
    assert word_count.input_schema["properties"]["text"] == {"description": "The text to count.", "type": "string"}
    assert "wc-2" in registry and "word_count" not in registry
    assert word_count("a b c") == 3  # still callable as the function it was
    assert repr(word_count) == "<custom tool wc-2(text) [read-only, deferred]: Count.>"


def test_a_property_named_title_keeps_its_schema(registry):
    @tool(registry=registry)
    def rename(title: str, title_case: bool = True) -> str:
        """Rename."""
        return title

    assert rename.input_schema["properties"]["title"] == {"type": "string"}


def test_all_definition_mistakes_are_reported_together():
    def broken(*items, _hidden: int, ctx, thing: Missing, **extra):  # noqa: F821
        pass

    with pytest.raises(ToolDefinitionError) as info:
        function_tool(broken, name="no spaces allowed")
    message = str(info.value)
    assert "test_all_definition_mistakes_are_reported_together.<locals>.broken" in message
    for expected in (
        "'no spaces allowed' is not valid", "no description", "*items", "**extra", "'_hidden'",
        "'ctx' has no annotation", "parameter 'thing': its type hint 'Missing' cannot be resolved",
    ):
        assert expected in message, expected
    assert len(info.value.problems) == 7


class Opaque:
    pass


def test_unschematisable_type_and_unresolvable_hint_are_clear():
    def uses_opaque(thing: Opaque) -> str:
        """Doc."""
        return ""

    with pytest.raises(ToolDefinitionError, match="cannot be described as JSON schema"):
        function_tool(uses_opaque)

    def dangling(x: "NoSuchType") -> str:  # noqa: F821
        """Doc."""
        return ""

    with pytest.raises(ToolDefinitionError, match="'x': its type hint .*NoSuchType.* cannot be resolved"):
        function_tool(dangling)

    def gen(x: int):
        """Doc."""
        yield x

    with pytest.raises(ToolDefinitionError, match="generator"):
        function_tool(gen)

    with pytest.raises(ToolDefinitionError, match="65|not valid"):
        function_tool(lambda: "", name="x" * 65, description="d")
    with pytest.raises(ToolDefinitionError, match="'<lambda>' is not valid"):
        function_tool(lambda: "", description="d")


# -- registry -----------------------------------------------------------------------------


def test_redefining_replaces_in_place_and_remove_takes_it_away(registry):
    @tool(registry=registry)
    def first() -> str:
        """One."""
        return "1"

    @tool(registry=registry)
    def second() -> str:
        """Two."""
        return "2"

    @tool(name="first", registry=registry)
    def first_again(n: int) -> str:
        """One, again."""
        return "1b"

    assert [t.name for t in registry] == ["read_file", "first", "second"]
    assert registry.get("first") is first_again
    assert [t.name for t in tool.custom(registry=registry)] == ["first", "second"]
    assert tool.remove("first", registry=registry) is True
    assert tool.remove("first", registry=registry) is False
    assert "first" not in registry


def test_builtins_are_neither_shadowed_nor_removed(registry):
    with pytest.raises(ValueError, match="'read_file' is already a builtin tool"):

        @tool(registry=registry)
        def read_file(path: str) -> str:
            """Mine."""
            return ""

    with pytest.raises(ValueError, match="not a custom one"):
        tool.remove("read_file", registry=registry)
    assert registry.get("read_file").source == "builtin"


async def test_hand_written_definition_with_json_schema(registry, tmp_path):
    async def execute(args: AnyArgs, ctx: ToolContext) -> str:
        return f"got {args.model_extra}"

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    registered = tool.register(
        ToolDefinition(name="raw", description="Raw.", parameters=AnyArgs, execute=execute, json_schema=schema),
        registry=registry,
    )
    assert registered.source == "custom" and registry.get("raw") is registered
    assert registered.to_api()["input_schema"] == {"properties": {"q": {"type": "string"}}, "required": ["q"], "type": "object"}
    assert (await registered.run({"q": "x"}, make_ctx(tmp_path))).text_content == "got {'q': 'x'}"
    with pytest.raises(ValueError, match="not valid"):
        tool.register(
            ToolDefinition(name="srv:raw", description="R.", parameters=AnyArgs, execute=execute), registry=registry
        )
    with pytest.raises(TypeError, match="expects a ToolDefinition"):
        tool.register(lambda: None, registry=registry)  # type: ignore[arg-type]


# -- running ------------------------------------------------------------------------------


async def test_context_is_injected_and_arguments_arrive_typed(registry, tmp_path):
    seen = {}

    @tool(registry=registry)
    async def inspect_call(point: Point, ctx: ToolContext, /, n: int = 1) -> str:
        """Inspect."""
        seen.update(point=point, ctx=ctx, n=n)
        return "ok"

    ctx = make_ctx(tmp_path)
    result = await inspect_call.run({"point": {"x": 1}, "n": "2"}, ctx)
    assert result.text_content == "ok" and not result.is_error
    assert seen["point"] == Point(x=1.0) and seen["n"] == 2 and seen["ctx"] is ctx


async def test_validation_error_names_every_bad_field(registry, tmp_path):
    @tool(registry=registry)
    def word_count(text: str, limit: int = 10) -> int:
        """Count."""
        return 0

    result = await word_count.run({"limit": "many", "extra": 1}, make_ctx(tmp_path))
    assert result.is_error
    assert result.text_content.startswith("Invalid arguments for word_count:")
    for part in ("text: Field required", "limit: Input should be a valid integer", "extra: Extra inputs are not permitted"):
        assert part in result.text_content


async def test_exceptions_become_error_results_with_their_message(registry, tmp_path):
    @tool(registry=registry)
    def explode(text: str) -> str:
        """Explode."""
        raise ValueError(f"cannot handle {text!r}")

    @tool(registry=registry)
    async def refuse(text: str) -> str:
        """Refuse."""
        raise ToolError("No such thing; try another name.")

    result = await explode.run({"text": "x"}, make_ctx(tmp_path))
    assert result.is_error and result.text_content == "explode failed: ValueError: cannot handle 'x'"
    result = await refuse.run({"text": "x"}, make_ctx(tmp_path))
    assert result.is_error and result.text_content == "No such thing; try another name."


async def test_sync_tool_runs_in_a_thread_while_the_loop_stays_responsive(registry, tmp_path):
    threads = []

    @tool(registry=registry)
    def slow(seconds: float, ctx: ToolContext) -> str:
        """Block."""
        threads.append(threading.get_ident())
        ctx.progress("working")
        time.sleep(seconds)
        return "done"

    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    progress_threads = []
    ctx = make_ctx(tmp_path, emit=lambda event: progress_threads.append((event.type, threading.get_ident())))
    background = asyncio.create_task(ticker())
    try:
        result = await slow.run({"seconds": 0.4}, ctx)
    finally:
        background.cancel()
    assert result.text_content == "done"
    assert threads[0] != threading.get_ident()
    assert ticks >= 8  # the loop ran other work all along
    # progress from the worker thread reached the sink on the loop's thread
    assert progress_threads == [("tool_progress", threading.get_ident())]


async def test_cancelling_sets_ctx_cancelled_for_a_cooperative_sync_tool(registry, tmp_path):
    started, stopped = threading.Event(), threading.Event()

    @tool(registry=registry)
    def patient(ctx: ToolContext) -> str:
        """Wait until cancelled."""
        started.set()
        while not ctx.cancelled.wait(0.01):
            pass
        stopped.set()
        return "stopped"

    task = asyncio.create_task(patient.run({}, make_ctx(tmp_path)))
    await asyncio.to_thread(started.wait, 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(stopped.wait, 2)


async def test_partial_of_async_function_and_sync_returning_awaitable(registry, tmp_path):
    async def scaled(x: int, factor: int) -> str:
        return str(x * factor)

    doubled = functools.partial(scaled, factor=2)
    doubled.__name__ = "doubled"  # type: ignore[attr-defined]
    made = function_tool(doubled, description="Double x.")
    assert set(made.input_schema["properties"]) == {"x", "factor"}
    assert (await made.run({"x": 4}, make_ctx(tmp_path))).text_content == "8"


# -- return values ------------------------------------------------------------------------


@dataclasses.dataclass
class Stats:
    words: int
    path: Path


def test_return_values_become_text_or_json():
    assert to_tool_result("plain").content == [{"type": "text", "text": "plain"}]
    assert to_tool_result({"a": [1, 2], "é": None}).text_content == '{"a": [1, 2], "é": null}'
    assert to_tool_result([1, "x"]).text_content == '[1, "x"]'
    assert to_tool_result(Point(x=1)).text_content == '{"x":1.0,"y":0.0}'
    assert to_tool_result(Stats(3, Path("/a"))).text_content == '{"words": 3, "path": "/a"}'
    assert to_tool_result(None).text_content == "(the tool returned nothing)"
    assert to_tool_result(42).text_content == "42"
    assert to_tool_result(Path("/x/y")).text_content == "/x/y"
    assert to_tool_result(b"caf\xc3\xa9").text_content == "café"
    with pytest.raises(ToolError, match="neither text nor"):
        to_tool_result(b"\xff\xfe\x00junk")


def _decoded(block):
    assert block["type"] == "image" and block["source"]["type"] == "base64"
    return block["source"]["media_type"], base64.b64decode(block["source"]["data"])


def test_images_become_image_blocks():
    mime, data = _decoded(to_tool_result((PNG_1PX, "image/png")).content[0])
    assert (mime, data) == ("image/png", PNG_1PX)
    assert _decoded(to_tool_result(Image(b"\xff\xd8\xff\xe0rest", "image/jpeg")).content[0])[0] == "image/jpeg"
    assert _decoded(to_tool_result(PNG_1PX).content[0]) == ("image/png", PNG_1PX)  # sniffed
    mixed = to_tool_result(["The plot:", Image(PNG_1PX), {"n": 1}]).content
    assert [b["type"] for b in mixed] == ["text", "image", "text"] and mixed[2]["text"] == '{"n": 1}'
    with pytest.raises(ToolError, match="image/tiff"):
        to_tool_result((b"II*\x00", "image/tiff"))
    with pytest.raises(ToolError, match="at most 5 MB"):
        to_tool_result(Image(b"\x89PNG\r\n\x1a\n" + bytes(6 * 1024 * 1024)))


def test_pil_image_and_matplotlib_figure():
    pil = pytest.importorskip("PIL.Image")
    mime, data = _decoded(to_tool_result(pil.new("RGB", (4, 3), "red")).content[0])
    assert mime == "image/png" and pil.open(io.BytesIO(data)).size == (4, 3)
    cmyk = pil.new("CMYK", (2, 2))
    assert _decoded(to_tool_result(cmyk).content[0])[0] == "image/png"

    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(1, 1))
    figure.add_subplot().plot([0, 1], [1, 0])
    mime, data = _decoded(to_tool_result(figure).content[0])
    assert mime == "image/png" and data.startswith(b"\x89PNG")


async def test_image_tool_result_through_run(registry, tmp_path):
    @tool(registry=registry)
    def snapshot() -> Image:
        """Snapshot."""
        return Image(PNG_1PX)

    result = await snapshot.run({}, make_ctx(tmp_path))
    assert not result.is_error and result.content[0]["type"] == "image" and result.text_content == "[image]"

    @tool(registry=registry)
    def bad_image() -> tuple:
        """Bad."""
        return (b"x", "image/bmp")

    result = await bad_image.run({}, make_ctx(tmp_path))
    assert result.is_error and "image/bmp" in result.text_content


# -- through the real loop ----------------------------------------------------------------


def make_loop(tmp_path: Path, registry: ToolRegistry, approver=None) -> tuple[AgentLoop, Recorder]:
    events = Recorder()
    resolver = SessionToolResolver(registry, state=SessionState())
    loop = AgentLoop(
        model=AnthropicModel("claude-sonnet-5", max_retries=0),
        tools=resolver,
        approver=approver or AllowAll(),
        deps=make_deps(tmp_path),
        session_id="s1",
        state=SessionState(),
        emit=events,
    )
    return loop, events


@pytest.mark.slow
async def test_a_tool_registered_mid_turn_is_offered_from_the_next_request(fake_api, tmp_path, registry):
    calls = []

    def word_count(text: Annotated[str, Field(description="Text to count.")], ctx: ToolContext) -> dict:
        """Count the words in a text."""
        calls.append((text, ctx.session_id, ctx.turn_id))
        return {"words": len(text.split())}

    def first(body):
        # the cell that defines the tool runs while the first request is in flight
        tool(word_count, registry=registry)
        return Reply([tool_use("echo_missing", {}, id="t0")])

    fake_api.add(
        first,
        Reply([tool_use("word_count", {"text": "one two three"}, id="t1")]),
        Reply([tool_use("word_count", {"text": 5}, id="t2")]),
        Reply([text("Three words.")]),
    )
    loop, events = make_loop(tmp_path, registry)
    done = await loop.run(Conversation(), "count", turn_id=7)
    assert done.stop_reason == "end_turn"
    offered = [[t["name"] for t in request["tools"]] for request in fake_api.requests]
    assert "word_count" not in offered[0] and "word_count" in offered[1]
    api_tool = next(t for t in fake_api.requests[1]["tools"] if t["name"] == "word_count")
    assert api_tool["description"] == "Count the words in a text."
    assert api_tool["input_schema"] == {
        "additionalProperties": False,
        "properties": {"text": {"description": "Text to count.", "type": "string"}},
        "required": ["text"],
        "type": "object",
    }
    assert calls == [("one two three", "s1", 7)]
    answer = fake_api.requests[2]["messages"][-1]["content"][0]
    assert answer["tool_use_id"] == "t1" and answer["content"][0]["text"] == '{"words": 3}'
    invalid = fake_api.requests[3]["messages"][-1]["content"][0]
    assert invalid["is_error"] is True and "text: Input should be a valid string" in invalid["content"][0]["text"]
    finished = [e for e in events.of("tool_call_finished") if e.tool == "word_count"]
    assert [e.status for e in finished] == ["ok", "error"]


# -- Python hooks -------------------------------------------------------------------------


async def test_pre_tool_use_decorator_registers_and_rewrites_input():
    @pre_tool_use("word_*")
    def shout(payload):
        return {"decision": "allow", "modified_input": {"text": payload["tool_input"]["text"].upper()}}

    assert [h.fn for h in hooks.pre_tool_use_hooks()][-1] is shout
    result = await hooks.run_pre_tool_use(
        {"tool_name": "word_count", "tool_input": {"text": "hi"}},
        tool="word_count", python_hooks=hooks.pre_tool_use_hooks(), shell_hooks=[], cwd=".",
    )
    assert result.decision == "allow" and result.modified_input == {"text": "HI"}
    other = await hooks.run_pre_tool_use(
        {"tool_name": "read_file", "tool_input": {}}, tool="read_file",
        python_hooks=hooks.pre_tool_use_hooks(), shell_hooks=[], cwd=".",
    )
    assert other.ran == []
    assert shout.unregister() is True
    assert shout not in [h.fn for h in hooks.pre_tool_use_hooks()]


def test_redefining_a_hook_replaces_it():
    def make():
        @pre_tool_use
        def guard(payload):
            return None

        @on_approval
        def watch(record):
            pass

        return guard, watch

    make()
    guard, watch = make()  # the cell run again: new function objects, same qualified names
    names = [h.name for h in hooks.pre_tool_use_hooks()]
    assert names.count(guard.__qualname__) == 1 and hooks.pre_tool_use_hooks()[-1].fn is guard
    assert hooks.pre_tool_use_hooks()[-1].matcher == "*"
    assert [o for o in hooks.approval_observers() if o.__qualname__ == watch.__qualname__] == [watch]
    with pytest.raises(TypeError, match="glob"):
        pre_tool_use(3)


# -- through the approval pipeline ------------------------------------------------------


async def test_custom_tools_pass_the_approval_pipeline(fake_api, tmp_path, registry):
    import json as _json

    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline

    (tmp_path / ".codingcode").mkdir()
    (tmp_path / ".codingcode" / "settings.json").write_text(
        _json.dumps({"permissions": {"deny": ["word_count(*secret*)"], "ask": ["peek(*)"]}})
    )
    ran: list[tuple[str, object]] = []

    @tool(registry=registry)
    def word_count(text: str) -> int:
        """Count words."""
        ran.append(("word_count", text))
        return len(text.split())

    @tool(read_only=True, registry=registry)
    def peek(seconds: float = 0.0) -> str:
        """Peek."""
        ran.append(("peek", seconds))
        time.sleep(seconds)
        return "peeked"

    @tool(read_only=True, registry=registry)
    def glance() -> str:
        """Glance."""
        ran.append(("glance", None))
        return "glanced"

    @pre_tool_use("word_count")
    def redact(payload):
        text_in = payload["tool_input"]["text"]
        return {"decision": "allow", "modified_input": {"text": text_in.replace("password", "[redacted]")}}

    asked: list[tuple[str, str]] = []

    async def ask(request):
        asked.append((request.tool, request.layer))
        return "allow"

    fake_api.add(
        Reply([
            tool_use("word_count", {"text": "my password here"}, id="t1"),
            tool_use("word_count", {"text": "top secret"}, id="t2"),
        ]),
        Reply([tool_use("glance", {}, id="t3"), tool_use("peek", {}, id="t4")]),
        Reply([text("ok")]),
    )
    pipeline = ApprovalPipeline(tmp_path)
    loop, events = make_loop(tmp_path, registry, approver=pipeline)
    loop.ask = ask
    await loop.run(Conversation(), "go", 1)

    # the hook's rewritten input is what ran; the deny rule named the custom tool
    assert ("word_count", "my [redacted] here") in ran and ("word_count", "top secret") not in ran
    step1 = {b["tool_use_id"]: b for b in fake_api.requests[1]["messages"][-1]["content"]}
    assert step1["t1"]["content"][0]["text"] == "3"
    assert step1["t2"]["is_error"] and "word_count(*secret*)" in step1["t2"]["content"][0]["text"]
    # read-only passes the whitelist layer; an ask rule still asks, by the custom tool's name
    assert asked == [("peek", "rules")]
    assert {"glance", "peek"} <= {name for name, _ in ran}
    audit = (tmp_path / ".codingcode" / "audit.jsonl").read_text()
    assert '"word_count"' in audit and '"peek"' in audit


@pytest.mark.slow
async def test_a_blocking_sync_tool_does_not_hold_up_an_approval(fake_api, tmp_path, registry):
    """Two read-only calls run together: the answer for one arrives while the other blocks."""
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline

    (tmp_path / ".codingcode").mkdir()
    (tmp_path / ".codingcode" / "settings.json").write_text('{"permissions": {"ask": ["probe(*)"]}}')
    timeline: list[tuple[str, float]] = []

    @tool(read_only=True, registry=registry)
    def block(seconds: float) -> str:
        """Block."""
        timeline.append(("block start", time.monotonic()))
        time.sleep(seconds)
        timeline.append(("block end", time.monotonic()))
        return "unblocked"

    @tool(read_only=True, registry=registry)
    def probe() -> str:
        """Probe."""
        timeline.append(("probe", time.monotonic()))
        return "probed"

    async def ask(request):
        # a person clicks a little later, from "elsewhere" (another task on the loop)
        await asyncio.sleep(0.2)
        timeline.append(("clicked", time.monotonic()))
        return "allow"

    fake_api.add(
        Reply([tool_use("block", {"seconds": 1.0}, id="b"), tool_use("probe", {}, id="p")]),
        Reply([text("ok")]),
    )
    loop, _ = make_loop(tmp_path, registry, approver=ApprovalPipeline(tmp_path))
    loop.ask = ask
    await loop.run(Conversation(), "go", 1)
    at = dict(timeline)
    assert at["block start"] < at["clicked"] < at["probe"] < at["block end"]


def test_the_decorator_registers_into_the_process_registry_by_default():
    from codingcode_jupyter import tool as exported
    from codingcode_jupyter.engine.tools.builtin import global_registry

    assert exported is tool

    @tool
    def cell_defined_tool(n: int) -> int:
        """Defined in a cell."""
        return n

    try:
        assert global_registry().get("cell_defined_tool") is cell_defined_tool
        assert cell_defined_tool in tool.custom()
    finally:
        assert tool.remove("cell_defined_tool") is True
    assert "cell_defined_tool" not in global_registry()
    assert global_registry().get("read_file").source == "builtin"


# ----- a custom tool that runs code declares it, and its code is judged as run_python's ------


@pytest.mark.parametrize(("code", "expected"), [
    ("import os\nos.system('sudo id')", "deny"),          # a built-in rule, in bypass too
    ("import os\ngetattr(os, 'system')('id')", "ask"),   # not provable: asked in every mode
    ("open('/etc/passwd').read()", "deny"),
    ("sum([1, 2, 3])", "allow"),                          # the control: proven harmless
])
async def test_a_custom_tool_declaring_code_is_judged_as_run_python(tmp_path, code: str, expected: str) -> None:
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
    from codingcode_jupyter.engine.tools.access import ToolAccess
    from codingcode_jupyter.engine.tools.base import ToolCall
    from tests.engine.helpers import tool_context

    def run_snippet(code: str) -> str:
        """Run a Python snippet in the person's analysis environment."""
        return code

    tool = function_tool(run_snippet, access=ToolAccess(code="code", opaque=True))
    pipeline = ApprovalPipeline(tmp_path, python_hooks=[], audit=False)
    verdict = await pipeline.evaluate(ToolCall(tool_use_id="t1", tool=tool, input={"code": code}),
                                      tool_context(tmp_path, deps=make_deps(tmp_path), mode="bypass"))
    assert str(verdict.kind) == expected, verdict.reason
