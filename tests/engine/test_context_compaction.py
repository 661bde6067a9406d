"""Compaction end to end: the real SDK, the local Messages API server, a small window."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from codingcode_jupyter.engine.context.compactor import Compactor
from codingcode_jupyter.engine.context.session_window import compact, context_status, keep_in_window
from codingcode_jupyter.engine.context.transforms import SUMMARY_HEADER, TRACE_PREFIX, apply_compaction
from codingcode_jupyter.engine.context.window import estimate_tokens
from codingcode_jupyter.engine.session import Session
from codingcode_jupyter.engine.tools.base import ToolContext, ToolDefinition
from codingcode_jupyter.engine.transcript import CompactionRecord
from tests.engine.helpers import AllowAll, Recorder, StaticTools, make_deps
from tests.fakes.anthropic_server import HTTPError, Reply, text, tool_use

WINDOW = 30_000


class ReadArgs(BaseModel):
    path: str


def big_read_tool(size: int = 9_000) -> ToolDefinition:
    """A read_file stand-in whose every answer is ``size`` characters of distinct text."""

    async def execute(args: ReadArgs, ctx: ToolContext) -> str:
        line = f"{args.path}: def function_{abs(hash(args.path)) % 997}(x): return x * 2  # padding\n"
        return (line * (size // len(line) + 1))[:size]

    return ToolDefinition(name="read_file", description="Read a file.", parameters=ReadArgs, execute=execute, read_only=True)


def is_summary_request(body: dict) -> bool:
    return not body.get("tools") and "<conversation>" in json.dumps(body.get("messages"))


def strict_tokens(body: dict) -> int:
    """A stricter estimate than the compactor's: 3 characters a token, on the spaced JSON."""
    return len(json.dumps({k: body.get(k) for k in ("system", "messages", "tools")})) // 3


def new_session(tmp_path, tools, **kw) -> Session:
    session = Session(deps=make_deps(tmp_path), tools=StaticTools(tools), approver=AllowAll(), model_name="claude-sonnet-5",
                      system="You are a test agent. " * 20, **kw)
    keep_in_window(session)
    return session


async def test_many_turns_of_large_results_stay_inside_the_window(fake_api, tmp_path, monkeypatch):
    monkeypatch.setenv("CODINGCODE_CONTEXT_WINDOW", str(WINDOW))
    fake_api.default = script_reads(42, per_turn=6)
    session = new_session(tmp_path, [big_read_tool()])
    for turn in range(7):
        done = await session.run_turn(f"Turn {turn}: read the next six modules.")
        assert done.stop_reason == "end_turn" and done.text == f"Turn {turn + 1} done."
    assert any(is_summary_request(b) for b in fake_api.requests)
    for body in fake_api.requests:
        assert estimate_tokens(body) + body["max_tokens"] <= WINDOW and strict_tokens(body) <= WINDOW
        if not is_summary_request(body):
            assert_valid_pairing(body["messages"])
    # the latest turn's prompt is still sent as written
    assert "Turn 6: read the next six modules." in json.dumps(fake_api.requests[-1]["messages"])
    resumed = new_session(tmp_path, [big_read_tool()], id=session.id)
    resumed.load()
    assert resumed.conversation.messages == session.conversation.messages


def assert_valid_pairing(messages: list[dict]) -> None:
    """Every tool_result answers a tool_use of the message just before it; roles alternate."""
    assert messages[0]["role"] == "user"
    for before, after in zip(messages, messages[1:]):
        assert before["role"] != after["role"]
    for index, message in enumerate(messages):
        results = [b["tool_use_id"] for b in message["content"] if b.get("type") == "tool_result"]
        if results:
            previous = messages[index - 1]
            uses = {b["id"] for b in previous["content"] if b.get("type") == "tool_use"}
            assert set(results) == uses, (index, results, uses)
            # results come first in their message
            kinds = [b["type"] for b in message["content"]]
            assert kinds[: len(results)] == ["tool_result"] * len(results)
    last_uses = [b for b in messages[-1]["content"] if b.get("type") == "tool_use"]
    assert not last_uses


def script_reads(count: int, per_turn: int | None = None):
    """A model that reads ``count`` files, one per step, then answers; summaries are answered too.

    With ``per_turn`` it answers after every ``per_turn`` reads (one turn each).
    """
    state = {"reads": 0, "answered": 0}

    def reply(body: dict):
        if is_summary_request(body):
            return Reply([text("SUMMARY: read many files; the task is to review them all.")],
                         usage={"input_tokens": 900, "output_tokens": 40})
        if per_turn and state["reads"] and state["reads"] % per_turn == 0 and state["answered"] < state["reads"] // per_turn:
            state["answered"] += 1
            return Reply([text(f"Turn {state['answered']} done.")], usage={"input_tokens": 1000, "output_tokens": 10})
        if state["reads"] < count:
            state["reads"] += 1
            return Reply([text(f"Reading file {state['reads']}."), tool_use("read_file", {"path": f"src/mod_{state['reads']}.py"})],
                         usage={"input_tokens": 1000, "output_tokens": 20, "cache_read_input_tokens": 500})
        return Reply([text("Reviewed every file.")], usage={"input_tokens": 1000, "output_tokens": 10})

    return reply


async def test_forty_large_results_finish_inside_a_small_window(fake_api, tmp_path, monkeypatch):
    monkeypatch.setenv("CODINGCODE_CONTEXT_WINDOW", str(WINDOW))
    fake_api.default = script_reads(45)
    session = new_session(tmp_path, [big_read_tool()])
    events = Recorder()
    done = await session.run_turn("Review every module in src/, one by one.", events)

    assert done.stop_reason == "end_turn", [e for e in events if e.type == "error"]
    assert done.text == "Reviewed every file."
    main = [b for b in fake_api.requests if not is_summary_request(b)]
    summaries = [b for b in fake_api.requests if is_summary_request(b)]
    assert len(main) == 46
    # without compaction the 45 results alone are ~100k tokens: far over the window
    assert 45 * 9_000 / 4 > 3 * WINDOW
    assert summaries, "the summary request reached the server"
    assert fake_api.count_token_requests, "near the limit the estimate was confirmed with count_tokens"
    assert len(fake_api.count_token_requests) < len(main)  # but not on every step
    for body in fake_api.requests:
        assert estimate_tokens(body) + body["max_tokens"] <= WINDOW
        assert strict_tokens(body) <= WINDOW
    # the summary replaced older turns in what is sent, and the recent results are intact
    last = main[-1]["messages"]
    assert SUMMARY_HEADER in last[0]["content"][0]["text"] and "SUMMARY: read many files" in last[0]["content"][0]["text"]
    assert "Review every module in src/" in last[0]["content"][0]["text"]  # the latest request, verbatim
    assert "src/mod_45.py: def" in json.dumps(last)
    for body in main:
        assert_valid_pairing(body["messages"])
    # the transcript keeps every result in full
    records = session.transcript.records()
    full_results = [
        b for r in records if r["type"] == "message" for b in r["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result" and len(json.dumps(b)) > 8_000
    ]
    assert len(full_results) == 45
    assert any(r["type"] == "compaction" and r.get("summary") for r in records)
    # the summary's tokens count towards the turn
    assert done.usage.input_tokens == 46 * 1000 + 900 * len(summaries)
    notices = [e.text for e in events.of("notice")]
    assert any(n.startswith("Context compacted (auto)") for n in notices)


async def test_stage_one_shortens_old_results_before_any_summary(fake_api, tmp_path, monkeypatch):
    monkeypatch.setenv("CODINGCODE_CONTEXT_WINDOW", str(WINDOW))
    fake_api.default = script_reads(9)
    session = new_session(tmp_path, [big_read_tool(9_000)])
    await session.run_turn("Read nine files.")
    assert not any(is_summary_request(b) for b in fake_api.requests)
    last = fake_api.requests[-1]["messages"]
    traces = [
        b["content"][0]["text"] for m in last for b in m["content"]
        if b.get("type") == "tool_result" and b["content"][0]["text"].startswith(TRACE_PREFIX)
    ]
    assert traces and traces[0] == "[tool result shortened: read_file src/mod_1.py, 9,000 chars]"
    # the last three results are never shortened
    recent = [b for m in last for b in m["content"] if b.get("type") == "tool_result"][-3:]
    assert all(not b["content"][0]["text"].startswith(TRACE_PREFIX) for b in recent)
    assert_valid_pairing(last)


async def test_overflow_error_compacts_and_retries_once(fake_api, tmp_path):
    fake_api.add(
        Reply([tool_use("read_file", {"path": "a.py"})]),
        Reply([tool_use("read_file", {"path": "b.py"})]),
        Reply([tool_use("read_file", {"path": "c.py"})]),
        Reply([tool_use("read_file", {"path": "d.py"})]),
        Reply([tool_use("read_file", {"path": "e.py"})]),
        HTTPError(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
        Reply([text("SUMMARY of a..e")]),  # the summary request
        Reply([text("Done after compaction.")]),  # the retry
    )
    session = new_session(tmp_path, [big_read_tool(8_000)])
    events = Recorder()
    done = await session.run_turn("read five files", events)
    assert done.stop_reason == "end_turn" and done.text == "Done after compaction."
    failed, summary, retry = fake_api.requests[5], fake_api.requests[6], fake_api.requests[7]
    assert is_summary_request(summary)
    assert len(json.dumps(retry)) < len(json.dumps(failed)) / 2
    assert_valid_pairing(retry["messages"])
    assert any("compacting it and retrying" in e.text for e in events.of("notice"))
    # it learned the real size: the next requests are measured more carefully
    compactor = session.context
    assert compactor.chars_per_token < 4.0


async def test_a_second_overflow_ends_the_turn_with_a_clear_error(fake_api, tmp_path):
    fake_api.add(
        HTTPError(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
        HTTPError(400, "invalid_request_error", "prompt is too long: 240000 tokens > 200000 maximum"),
    )
    session = new_session(tmp_path, [big_read_tool()])
    events = Recorder()
    done = await session.run_turn("hello", events)
    assert done.stop_reason == "error"
    assert len(fake_api.requests) == 2
    assert "no longer fits" in events.of("error")[0].message


async def test_forced_compaction_outside_a_turn_and_resume_rebuilds_it(fake_api, tmp_path, monkeypatch):
    monkeypatch.setenv("CODINGCODE_CONTEXT_WINDOW", "200000")
    fake_api.add(
        Reply([tool_use("read_file", {"path": "a.py"})]), Reply([text("A read.")]),
        Reply([tool_use("read_file", {"path": "b.py"})]), Reply([text("B read.")]),
        Reply([tool_use("read_file", {"path": "c.py"})]), Reply([text("C read.")]),
    )
    session = new_session(tmp_path, [big_read_tool(5_000)])
    for name in "abc":
        await session.run_turn(f"read {name}.py")
    assert not any(is_summary_request(b) for b in fake_api.requests)  # it fitted: nothing happened
    before = json.dumps(session.conversation.messages)
    usage_before = session.usage

    fake_api.add(Reply([text("SUMMARY: a and b were read.")], usage={"input_tokens": 300, "output_tokens": 30}))
    report = await compact(session)
    assert report.reason == "forced" and report.summarised_messages > 0 and report.after_tokens < report.before_tokens
    assert is_summary_request(fake_api.requests[-1])
    after = session.conversation.messages
    assert len(json.dumps(after)) < len(before)
    assert "SUMMARY: a and b were read." in after[0]["content"][0]["text"]
    assert_valid_pairing(after)
    assert session.usage.input_tokens == usage_before.input_tokens + 300

    resumed = new_session(tmp_path, [big_read_tool(5_000)], id=session.id)
    resumed.load()
    assert resumed.conversation.messages == after
    assert resumed.usage == session.usage
    # the transcript still has every message in full
    assert sum(1 for r in session.transcript.records() if r["type"] == "message") == 3 * 4
    status = context_status(resumed)
    assert status.window == 200_000 and 0 < status.tokens < 200_000 and "context: about" in status.describe()


async def test_failed_summary_request_falls_back_to_a_plain_list(fake_api, tmp_path):
    fake_api.add(
        Reply([tool_use("read_file", {"path": "a.py"})]), Reply([text("A read.")]),
        Reply([tool_use("read_file", {"path": "b.py"})]), Reply([text("B read.")]),
        HTTPError(400, "invalid_request_error", "scripted: summary refused"),
    )
    session = new_session(tmp_path, [big_read_tool(3_000)])
    await session.run_turn("read a.py")
    await session.run_turn("read b.py")
    report = await compact(session)
    assert report.summary_failed and "summary refused" in report.summary_failed
    first = session.conversation.messages[0]["content"][0]["text"]
    assert "Person asked: read a.py" in first and "[tool call: read_file a.py]" in first
    assert_valid_pairing(session.conversation.messages)


def test_apply_compaction_keeps_pairs_when_cutting_inside_a_turn():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "read_file", "input": {"path": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1", "content": [{"type": "text", "text": "x" * 5000}]}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "2", "name": "read_file", "input": {"path": "y"}},
                                          {"type": "tool_use", "id": "3", "name": "write_file", "input": {"path": "z", "content": "c" * 9000}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "2", "content": [{"type": "text", "text": "y"}]},
                                     {"type": "tool_result", "tool_use_id": "3", "content": "ok", "is_error": True}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ]
    original = json.dumps(messages)
    shortened = apply_compaction(messages, CompactionRecord(shortened=["1", "3"]))
    assert json.dumps(messages) == original  # pure: the input is untouched
    assert shortened[2]["content"][0]["content"][0]["text"] == "[tool result shortened: read_file x, 5,000 chars]"
    assert shortened[3]["content"][1]["input"] == {"path": "z", "content": "[shortened: 9,000 chars]"}
    assert shortened[4]["content"][1]["is_error"] is True
    assert shortened[4]["content"][1]["content"][0]["text"].endswith("z, 2 chars, error]")
    # cut at message 4: its results answer calls that were summarised away, so they go too
    cut = apply_compaction(messages, CompactionRecord(summary="S", drop=4))
    assert [m["role"] for m in cut] == ["user", "assistant", "user"]
    assert cut[0]["content"] == [{"type": "text", "text": f"{SUMMARY_HEADER}\n\nS"}]
    assert_valid_pairing(cut)
    clipped = apply_compaction(messages, CompactionRecord(clip=1000))
    assert len(clipped[2]["content"][0]["content"][0]["text"]) < 1100


@pytest.mark.parametrize("keep", [0, 1, 3])
def test_cut_is_always_a_user_message_and_keeps_the_tail(keep):
    from codingcode_jupyter.engine.agent import Conversation

    messages = [{"role": "user", "content": [{"type": "text", "text": "p0"}]}]
    for i in range(10):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "r", "input": {}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * 1000}]})
    compactor = Compactor(Conversation(messages), keep_recent_results=keep)
    drop = compactor._cut(messages, 800)
    assert messages[drop]["role"] == "user" and drop >= 1
    assert_valid_pairing(apply_compaction(messages, CompactionRecord(summary="S", drop=drop)))
    assert len(compactor._old_results(messages)) == 10 - keep


async def test_demo_model_compacts_without_any_request(tmp_path):
    from codingcode_jupyter.engine.agent import Conversation

    conversation = Conversation()
    for i in range(4):
        conversation.append({"role": "user", "content": f"question {i}"})
        conversation.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {"path": f"f{i}.py"}}]})
        conversation.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * 3000}]})
        conversation.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
    records: list[CompactionRecord] = []
    compactor = Compactor(conversation, record=records.append)
    report = await compactor.compact("demo")
    assert report.summarised_messages and not report.summary_failed
    first = conversation.messages[0]["content"][0]["text"]
    assert first.startswith(SUMMARY_HEADER) and "Person asked: question 0" in first
    assert_valid_pairing(conversation.messages)
    assert records and records[0].type == "compaction"


async def test_a_prepare_hook_never_touches_another_conversation(tmp_path):
    from codingcode_jupyter.engine.agent import Conversation
    from codingcode_jupyter.engine.models.base import ModelRequest

    ours = Conversation([{"role": "user", "content": [{"type": "text", "text": "x" * 200_000}]}])
    compactor = Compactor(ours)
    other = ModelRequest(model="demo", messages=[{"role": "user", "content": [{"type": "text", "text": "a"}]},
                                                 {"role": "assistant", "content": [{"type": "text", "text": "b"}]}])
    assert (await compactor.prepare(other)).messages == other.messages
    assert len(ours.messages[0]["content"][0]["text"]) == 200_000


async def test_a_long_request_that_fits_alone_is_sent_whole_and_the_conversation_before_it_summarised(
        fake_api, tmp_path, monkeypatch):
    # Issue 46, item 1: the last stage clipped every long text, the person's request included.
    monkeypatch.setenv("CODINGCODE_CONTEXT_WINDOW", str(WINDOW))
    fake_api.add(Reply([tool_use("read_file", {"path": "a.py"})]), Reply([text("A read.")]),
                 Reply([tool_use("read_file", {"path": "b.py"})]), Reply([text("B read.")]))
    session = new_session(tmp_path, [big_read_tool(9_000)])
    await session.run_turn("read a.py")
    await session.run_turn("read b.py")
    line = "row 123, amount 45.60, note: refunded after the second call\n"
    pasted = (line * (60_000 // len(line) + 1))[:60_000]  # about 15,000 tokens: over the goal, under the budget
    fake_api.add(Reply([text("SUMMARY: a.py and b.py were read.")]), Reply([text("Looked at the rows.")]))
    events = Recorder()
    done = await session.run_turn("what stands out in these rows?\n" + pasted, events)
    assert done.stop_reason == "end_turn", [e.message for e in events.of("error")]
    assert is_summary_request(fake_api.requests[-2])
    sent = fake_api.requests[-1]["messages"]
    assert SUMMARY_HEADER in json.dumps(sent[0])
    assert any(pasted in b.get("text", "") for m in sent for b in m["content"] if isinstance(b, dict))
    assert not any("clipped" in e.text for e in events.of("notice")), [e.text for e in events.of("notice")]


async def test_a_request_too_long_alone_is_refused_before_anything_is_sent(fake_api, tmp_path, monkeypatch):
    monkeypatch.setenv("CODINGCODE_CONTEXT_WINDOW", str(WINDOW))
    fake_api.add(Reply([text("Hello.")]))
    session = new_session(tmp_path, [big_read_tool()])
    await session.run_turn("hi")
    before = list(session.conversation.messages)
    events = Recorder()
    done = await session.run_turn("summarise this: " + "word " * 20_000, events)
    assert done.stop_reason == "error" and len(fake_api.requests) == 1
    message = events.of("error")[0].message
    assert "too long for the model's context window, so nothing was sent" in message
    assert "100,016 characters" in message and "takes 20,452 tokens" in message, message
    assert session.conversation.messages == before
    assert sum(1 for r in session.transcript.records() if r["type"] == "message") == 2
