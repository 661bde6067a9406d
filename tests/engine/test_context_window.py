"""The context window table and its overrides; the estimator; project instruction files."""

from __future__ import annotations

import json

import pytest

from codingcode_jupyter.engine.context.window import (
    ENV_VAR,
    ContextWindowError,
    context_window,
    estimate_tokens,
)
from codingcode_jupyter.engine.models.base import ModelRequest
from codingcode_jupyter.engine.prompts import MAX_INSTRUCTION_CHARS, build_system_prompt, loaded_instructions


def test_window_from_table_setting_then_env():
    assert context_window("claude-sonnet-4-5", env={}) == 200_000
    assert context_window("something-else", env={}) == 200_000
    assert context_window("claude-sonnet-4-5", 50_000, env={}) == 50_000
    assert context_window("claude-sonnet-4-5", 50_000, env={ENV_VAR: "30000"}) == 30_000
    assert context_window("claude-sonnet-4-5", env={ENV_VAR: "30_000"}) == 30_000
    assert context_window("claude-sonnet-4-5", env={ENV_VAR: "  "}) == 200_000


@pytest.mark.parametrize("bad", ["lots", "-5", "100", "1e5"])
def test_bad_window_override_names_its_source(bad):
    with pytest.raises(ContextWindowError, match=ENV_VAR):
        context_window("claude-sonnet-4-5", env={ENV_VAR: bad})
    with pytest.raises(ContextWindowError, match="contextWindow"):
        context_window("claude-sonnet-4-5", bad, env={})  # type: ignore[arg-type]


def test_estimate_grows_with_content_and_over_counts_non_ascii():
    small = ModelRequest(model="m", messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    big = ModelRequest(model="m", messages=[{"role": "user", "content": [{"type": "text", "text": "word " * 4000}]}])
    assert estimate_tokens(small) < 30
    assert 4000 < estimate_tokens(big) < 6000
    chinese = ModelRequest(model="m", messages=[{"role": "user", "content": [{"type": "text", "text": "中文" * 1000}]}])
    assert estimate_tokens(chinese) >= 2000  # at least a token a character: never an underestimate
    assert estimate_tokens(big.model_dump()) == estimate_tokens(big)
    assert abs(estimate_tokens(json.loads(big.model_dump_json())) - estimate_tokens(big)) <= 1


def test_instruction_files_are_loaded_listed_and_size_limited(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Use tabs. AGENTS-MARKER")
    (tmp_path / "CLAUDE.md").write_text("x" * (MAX_INSTRUCTION_CHARS + 500))
    (tmp_path / ".codingcode").mkdir()
    (tmp_path / ".codingcode" / "instructions.md").write_text("never reached: the budget is spent")
    listed = loaded_instructions(tmp_path)
    assert [f.name for f in listed] == ["AGENTS.md", "CLAUDE.md"]
    assert listed[0].chars == len("Use tabs. AGENTS-MARKER") and not listed[0].truncated
    assert listed[1].truncated and listed[0].used_chars + listed[1].used_chars == MAX_INSTRUCTION_CHARS
    assert "cut to" in listed[1].describe()
    prompt = build_system_prompt(tmp_path)
    assert "AGENTS-MARKER" in prompt and "never reached" not in prompt
    assert len(prompt) < MAX_INSTRUCTION_CHARS + 3_000


def test_empty_or_missing_instruction_files_are_not_listed(tmp_path):
    assert loaded_instructions(tmp_path) == []
    (tmp_path / "AGENTS.md").write_text("\n\n")
    (tmp_path / ".codingcode").mkdir()
    (tmp_path / ".codingcode" / "instructions.md").write_text("Local rule.")
    assert [f.name for f in loaded_instructions(tmp_path)] == [".codingcode/instructions.md"]


def test_open_session_reads_the_context_window_setting_live(tmp_path, monkeypatch):
    from codingcode_jupyter.engine.context.compactor import Compactor
    from codingcode_jupyter.engine.runtime import open_session

    monkeypatch.delenv(ENV_VAR, raising=False)
    (tmp_path / ".codingcode").mkdir()
    settings = tmp_path / ".codingcode" / "settings.json"
    settings.write_text('{"contextWindow": 64000}')
    session = open_session(tmp_path, model="claude-sonnet-5")
    compactor = session.context
    assert isinstance(compactor, Compactor)
    assert compactor.window("claude-sonnet-5") == 64_000
    # An edit of the file applies without a new session.
    settings.write_text('{"contextWindow": 48000}')
    assert compactor.window("claude-sonnet-5") == 48_000
    monkeypatch.setenv(ENV_VAR, "32000")
    assert compactor.window("claude-sonnet-5") == 32_000
