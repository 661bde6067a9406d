"""``codingcode acp`` end to end: a real ACP client spawns it over stdio, it starts a real kernel,
and the fake Messages API plays the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import text_block

from tests.acp.acp_harness import RecordingClient, agent_process, texts, updates_of
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.polling import eventually

pytestmark = pytest.mark.kernel

MARKET = Path(__file__).resolve().parents[1] / "data" / "claude" / "plugins" / "marketplace"


async def test_a_prompt_streams_and_commands_are_offered(fake, project):
    (project / ".claude" / "commands").mkdir(parents=True)
    (project / ".claude" / "commands" / "greet.md").write_text("---\ndescription: Say hello\nargument-hint: NAME\n---\n"
                                                               "Say hello to $ARGUMENTS.\n")
    (project / ".claude" / "skills" / "tidy").mkdir(parents=True)
    (project / ".claude" / "skills" / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy the code\n"
                                                                      "---\nRun the formatter.\n")
    # A plugin's command, from a local marketplace, as Claude Code's settings enable it.
    (project / ".claude" / "settings.json").write_text(json.dumps({
        "extraKnownMarketplaces": {"test-market": {"source": {"source": "directory", "path": str(MARKET)}}},
        "enabledPlugins": {"commit-commands@test-market": True}}))
    fake.add(Reply([text("Hello from the kernel, line one.\nAnd line two.")], chunk=4), Reply([text("Hello, Ada.")]),
             Reply([text("Tidied.")]))
    client = RecordingClient()
    async with agent_process(client, project, fake.base_url) as conn:
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert session.modes.current_mode_id == "default"
        assert {mode.id for mode in session.modes.available_modes} == {"default", "acceptEdits", "plan", "bypass", "auto"}
        commands = await eventually(lambda: updates_of(client, "available_commands_update"), 30, "the commands")
        offered = [(c.name, c.description) for c in commands[-1].available_commands]
        assert [name for name, _ in offered] == ["commit-commands:commit", "greet", "tidy"]
        assert offered[0][1].startswith("Create a git commit") and offered[1:] == [
            ("greet", "Say hello"), ("tidy", "skill: Tidy the code")]
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("Say hello")])
        assert response.stop_reason == "end_turn"
        assert texts(client).endswith("Hello from the kernel, line one.\nAnd line two.")
        # Streamed as it came, a chunk at a time, not as one message at the end.
        assert len(updates_of(client, "agent_message_chunk")) >= 10
        assert "Say hello" in json.dumps(fake.requests[-1]["messages"][0])
        # A command runs as a cell's /greet does; a skill's name has the model load it.
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/greet Ada")])
        assert "Say hello to Ada." in json.dumps(fake.requests[-1]["messages"][-1])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/tidy src")])
        assert "Run the formatter." in json.dumps(fake.requests[-1]["messages"][-1])  # a skill typed runs as a cell's
        await conn.prompt(session_id=session.session_id, prompt=[text_block("/commit-commands:commit")])
    assert "create a single git commit" in json.dumps(fake.requests[-1]["messages"][-1])


def _write_script(fake: FakeAnthropic, name: str) -> None:
    fake.add(Reply([tool_use("write_file", {"path": name, "content": "from the agent\n"})]), Reply([text("Done.")]))


async def test_a_write_asks_and_the_editors_choice_decides(fake, project):
    (project / "kept.txt").write_text("as it was\n")
    answers = iter(["deny", "always"])
    client = RecordingClient(lambda call, options: next(answers))
    async with agent_process(client, project, fake.base_url) as conn:
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        # An existing file is read before it is written (the tool insists), then the write is asked.
        fake.add(Reply([tool_use("read_file", {"path": "kept.txt"})]),
                 Reply([tool_use("write_file", {"path": "kept.txt", "content": "overwritten\n"})]), Reply([text("Ok.")]))
        denied = await conn.prompt(session_id=session.session_id, prompt=[text_block("Overwrite kept.txt")])
        _write_script(fake, "notes.txt")
        allowed = await conn.prompt(session_id=session.session_id, prompt=[text_block("Write notes.txt")])
    assert denied.stop_reason == allowed.stop_reason == "end_turn"
    # Deny: the file is as it was; Always allow: written, and the rule saved as the card's button saves it.
    assert (project / "kept.txt").read_text() == "as it was\n"
    assert (project / "notes.txt").read_text() == "from the agent\n"
    saved = json.loads((project / ".codingcode" / "settings.local.json").read_text())
    assert any("write_file" in rule for rule in saved["permissions"]["allow"]), saved
    # The card's four buttons, in ACP's kinds; the edit shown as the editor's own diff.
    call, options = client.questions[0]
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("allow", "Allow", "allow_once"), ("always", "Always allow", "allow_always"),
        ("deny", "Deny", "reject_once"), ("never", "Never allow", "reject_always")]
    diff = next(c for c in call.content if c.type == "diff")
    assert (diff.path, diff.old_text, diff.new_text) == (str(project / "kept.txt"), "as it was\n", "overwritten\n")
    finished = [u for u in updates_of(client, "tool_call_update") if u.status in ("completed", "failed")]
    assert [u.status for u in finished] == ["completed", "failed", "completed"]  # read, denied write, written
    assert len(client.questions) == 2


async def test_a_commands_question_offers_a_preview_and_comes_back_with_it(fake, project):
    """Preview over ACP (issue 49): the editor picks 'Preview first', the kernel runs the command in a
    throwaway copy, the same question comes back with what it would change; the editor then denies and
    the project never saw the command."""
    from codingcode_jupyter.engine.sandbox import CommandSandbox
    from codingcode_jupyter.engine.settings import SandboxSettings

    if not CommandSandbox.create(project, SandboxSettings()).active:
        pytest.skip("no sandbox backend here: a preview runs in one")
    answers = iter(["preview", "deny"])
    client = RecordingClient(lambda call, options: next(answers))
    command = "mkdir -p out && echo made > out/made.txt"
    fake.add(Reply([tool_use("execute_command", {"command": command})]), Reply([text("Ok.")]))
    async with agent_process(client, project, fake.base_url) as conn:
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[text_block("Make out/made.txt")])
    assert done.stop_reason == "end_turn"
    assert len(client.questions) == 2, client.questions
    (_first, offered), (again, second) = client.questions
    assert [o.option_id for o in offered][-1] == "preview" and "preview" not in [o.option_id for o in second]
    shown = "\n".join(c.content.text for c in again.content if c.type == "content")
    assert "created  out/made.txt" in shown and "+made" in shown, shown
    assert not (project / "out").exists()


async def test_plan_mode_set_by_the_editor_denies_a_write_without_asking(fake, project):
    _write_script(fake, "notes.txt")
    client = RecordingClient()
    async with agent_process(client, project, fake.base_url) as conn:
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("Write notes.txt")])
    assert response.stop_reason == "end_turn"
    assert not (project / "notes.txt").exists()
    assert client.questions == []
    assert [u.status for u in updates_of(client, "tool_call_update") if u.status] == ["failed"]
