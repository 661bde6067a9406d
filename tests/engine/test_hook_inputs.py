"""What a hook is told is a typed model per event, dumped once into the JSON on its stdin."""

import pytest
from pydantic import ValidationError

from codingcode_jupyter.engine.hooks.events import EVENT_RULES, HookEvent
from codingcode_jupyter.engine.hooks.payloads import INPUT_MODELS, ToolHookInput, common_fields, hook_input


def _common(event: HookEvent, mode: str | None = "default") -> dict:
    return common_fields("codingcode", event, session_id="s1", project="/p", mode=mode)


def test_a_tool_event_is_told_the_call_and_nothing_is_sent_as_null():
    told = hook_input(HookEvent.PRE_TOOL_USE, {**_common(HookEvent.PRE_TOOL_USE, mode=None), "tool_name": "read_file",
                                               "tool_input": {"path": "a", "limit": None}, "tool_use_id": "t1"})
    assert isinstance(told, ToolHookInput)
    assert told.wire() == {"session_id": "s1", "transcript_path": "/p/.codingcode/sessions/s1.jsonl", "cwd": "/p",
                           "hook_event_name": "PreToolUse", "tool_name": "read_file",
                           "tool_input": {"path": "a", "limit": None}, "tool_use_id": "t1"}


def test_a_field_the_event_does_not_declare_is_refused_as_it_is_made():
    fields = {**_common(HookEvent.USER_PROMPT_SUBMIT), "prompt": "hi"}
    assert hook_input(HookEvent.USER_PROMPT_SUBMIT, fields).wire()["prompt"] == "hi"  # the control
    with pytest.raises(ValidationError):
        hook_input(HookEvent.USER_PROMPT_SUBMIT, {**fields, "promtp": "typo"})
    with pytest.raises(ValidationError):
        hook_input(HookEvent.SESSION_START, {**_common(HookEvent.SESSION_START)})  # its source is missing


def test_every_event_has_its_rules_and_every_told_event_its_input_model():
    assert set(EVENT_RULES) == set(HookEvent)
    assert set(INPUT_MODELS) == set(HookEvent) - {HookEvent.APPROVAL_POST}
