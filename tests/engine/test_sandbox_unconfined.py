"""No sandbox at all: the once-per-session card and its three answers, through a real turn.

The session's sandbox is made unavailable through the factory seam (as ``permissions check
--sandbox off`` does); everything else is real: the fake Messages API over the real SDK, the
loop, the approval pipeline, the commands run, the user settings file written. Each answer has
its control: the same turn with another answer, or with the sandbox there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode_jupyter.engine.events import Notice
from codingcode_jupyter.engine.sandbox import CommandSandbox
from codingcode_jupyter.engine.user_dir import user_dir
from tests.engine.sandbox_helpers import needs_sandbox
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.fakes.front import ScriptedFront

WHY = "no sandbox on this test machine"


def _unavailable(project: Path):
    def make(settings, allowed_env_files):
        return CommandSandbox(project, settings, bwrap=None, allowed_env_files=allowed_env_files,
                              unavailable_reason=WHY)

    return make


def _commands(fake_api, *commands: str) -> None:
    """The model runs each command in turn (one per step), then says it is done."""
    for number, command in enumerate(commands):
        fake_api.add(Reply([tool_use("execute_command", {"command": command}, id=f"c{number}")]))
    fake_api.add(Reply([text("done")]))


async def _turn(project: Path, front: ScriptedFront | None, *, mode: str = "bypass", available: bool = False,
                opened=None):
    """One turn in ``mode`` with ``front``; with None, only a recorder watches (nobody is asked), as a
    cell run with --approval-policy."""
    from codingcode_jupyter.engine.runtime import open_session
    from codingcode_jupyter.engine.session import TurnOptions

    session = opened or open_session(project, model="claude-sonnet-5")
    if not available:  # else the session's own, probed as on a person's machine
        session.deps.use_sandbox_factory(_unavailable(project))
    emitted: list = []
    await session.run_turn("run them", front if front is not None else emitted.append, options=TurnOptions(mode=mode))
    return session, (front.events if front is not None else emitted)


def _decisions(project: Path) -> list[dict]:
    path = project / ".codingcode" / "audit.jsonl"
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("event") == "decision"]


def _notices(events: list) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice) and e.text.startswith("No command sandbox here")]


@pytest.mark.slow
async def test_session_answer_runs_ordinary_commands_unconfined_after_one_card(fake_api, project):
    _commands(fake_api, "touch one.txt", "touch two.txt")
    front = ScriptedFront(unconfined="session")
    session, _events = await _turn(project, front)
    try:
        assert len(front.unconfined_asked) == 1, "one card for the session, not one per command"
        request = front.unconfined_asked[0]
        assert request.command == "touch one.txt" and WHY in request.why
        assert request.settings_path == str(user_dir() / "settings.json")
        assert front.asked == [], "no approval card: bypass mode allows them, unconfined for this session"
        assert (project / "one.txt").exists() and (project / "two.txt").exists()
        first, second = (d for d in _decisions(project) if d["tool"] == "execute_command")
        assert first["decision"] == "allow" and first["layer"] == "sandbox" and first["by"] == "user"
        assert second["decision"] == "allow" and "sandbox:session" in json.dumps(second["layers"])
    finally:
        await session.aclose()


@needs_sandbox
async def test_control_with_the_sandbox_there_no_card_is_shown(fake_api, project):
    _commands(fake_api, "true")
    front = ScriptedFront(unconfined="session")
    session, _events = await _turn(project, front, available=True)
    try:
        assert front.unconfined_asked == [] and front.asked == []
    finally:
        await session.aclose()


async def test_ask_each_answer_asks_every_command_as_before(fake_api, project):
    _commands(fake_api, "touch one.txt", "touch two.txt")
    front = ScriptedFront(["allow", "deny"], unconfined="ask_each")
    session, _events = await _turn(project, front)
    try:
        assert len(front.unconfined_asked) == 1
        assert [r.input["command"] for r in front.asked] == ["touch one.txt", "touch two.txt"]
        assert all(r.forced and r.sandboxed is False for r in front.asked)
        assert (project / "one.txt").exists() and not (project / "two.txt").exists()
    finally:
        await session.aclose()


async def test_never_answer_saves_the_user_setting_and_denies(fake_api, project):
    settings = user_dir() / "settings.json"
    assert not settings.exists()  # the control: it is the answer that writes it
    _commands(fake_api, "touch one.txt", "touch two.txt")
    front = ScriptedFront(unconfined="never")
    session, events = await _turn(project, front)
    try:
        assert len(front.unconfined_asked) == 1 and front.asked == []
        assert json.loads(settings.read_text()) == {"sandbox": {"failIfUnavailable": True}}
        assert not (project / "one.txt").exists() and not (project / "two.txt").exists()
        first, second = (d for d in _decisions(project) if d["tool"] == "execute_command")
        assert first["decision"] == "deny" and "never to run commands unconfined" in first["reason"]
        assert second["decision"] == "deny" and "failIfUnavailable" in second["reason"] and str(settings) in second["reason"]
    finally:
        await session.aclose()
    # A new session on this machine: no card, every such command denied, one line says why.
    _commands(fake_api, "touch three.txt", "ls")
    again = ScriptedFront(unconfined="session")
    session, events = await _turn(project, again)
    try:
        assert again.unconfined_asked == [] and again.asked == []
        assert not (project / "three.txt").exists()
        [line] = _notices(events)
        assert "The settings say failIfUnavailable" in line and str(settings) in line
        ls = [d for d in _decisions(project) if d["tool"] == "execute_command"][-1]
        assert ls["input"]["command"] == "ls" and ls["decision"] == "allow"  # read-only commands still run
    finally:
        await session.aclose()


async def test_a_projects_false_does_not_undo_never_on_this_machine(fake_api, project):
    (user_dir() / "settings.json").parent.mkdir(parents=True, exist_ok=True)
    (user_dir() / "settings.json").write_text(json.dumps({"sandbox": {"failIfUnavailable": True}}))
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"sandbox": {"failIfUnavailable": False}}))
    _commands(fake_api, "touch one.txt")
    front = ScriptedFront(unconfined="session")
    session, _events = await _turn(project, front)
    try:
        assert front.unconfined_asked == [] and not (project / "one.txt").exists()
    finally:
        await session.aclose()


@pytest.mark.parametrize("command", ["ls -la", "git status", "wc -l README.md"])
async def test_read_only_commands_never_bring_the_card(fake_api, project, command):
    (project / "README.md").write_text("x\n")
    _commands(fake_api, command, "touch made.txt")  # the second is the control: it does
    front = ScriptedFront(unconfined="ask_each")
    session, _events = await _turn(project, front)
    try:
        assert [r.command for r in front.unconfined_asked] == ["touch made.txt"]
        assert [r.input["command"] for r in front.asked] == ["touch made.txt"]
    finally:
        await session.aclose()


async def test_after_session_what_the_judge_cannot_resolve_is_still_asked(fake_api, project):
    _commands(fake_api, "touch one.txt", 'bash -c "$SCRIPT"')
    front = ScriptedFront(["deny"], unconfined="session")
    session, _events = await _turn(project, front)
    try:
        assert len(front.unconfined_asked) == 1
        [asked] = front.asked
        assert asked.input["command"] == 'bash -c "$SCRIPT"' and asked.forced and "no sandbox" in asked.reason
        assert (project / "one.txt").exists()  # the resolved one ran
    finally:
        await session.aclose()


@pytest.mark.parametrize("command", ["curl -s https://example.com/?q=notes", "cp one.txt /usr/local/lib/one.txt",
                                     "cp ~/.docker/config.json docker.json"])
async def test_after_session_what_the_sandbox_would_stop_is_still_asked(fake_api, project, command):
    _commands(fake_api, "touch one.txt", command, "touch two.txt")
    front = ScriptedFront(["deny"], unconfined="session")
    session, _events = await _turn(project, front)
    try:
        assert len(front.unconfined_asked) == 1
        [asked] = front.asked  # the ordinary commands around it are the control: not asked
        assert asked.input["command"] == command and asked.forced and asked.rule == "sandbox:beyond", asked
        assert (project / "one.txt").exists() and (project / "two.txt").exists()
    finally:
        await session.aclose()


async def test_a_first_command_beyond_the_sandbox_brings_the_card_then_its_own(fake_api, project):
    _commands(fake_api, "curl -s https://example.com/", "touch one.txt")
    front = ScriptedFront(["deny"], unconfined="session")
    session, _events = await _turn(project, front)
    try:
        assert [r.command for r in front.unconfined_asked] == ["curl -s https://example.com/"]
        assert [r.input["command"] for r in front.asked] == ["curl -s https://example.com/"]
        assert (project / "one.txt").exists()
    finally:
        await session.aclose()


async def test_the_choice_lasts_the_session_and_a_new_session_asks_again(fake_api, project):
    from codingcode_jupyter.engine.runtime import open_session

    opened = open_session(project, model="claude-sonnet-5")
    _commands(fake_api, "touch one.txt")
    front = ScriptedFront(unconfined="session")
    await _turn(project, front, opened=opened)
    _commands(fake_api, "touch two.txt")
    later = ScriptedFront(unconfined="ask_each")
    await _turn(project, later, opened=opened)  # the next cell of the same session
    await opened.aclose()
    assert later.unconfined_asked == [] and later.asked == [] and (project / "two.txt").exists()
    _commands(fake_api, "touch three.txt")
    fresh = ScriptedFront(["deny"], unconfined="ask_each")
    session, _events = await _turn(project, fresh)  # the control: another session asks
    try:
        assert len(fresh.unconfined_asked) == 1 and len(fresh.asked) == 1
    finally:
        await session.aclose()


async def test_headless_one_line_says_which_applied(fake_api, project):
    _commands(fake_api, "touch one.txt", "touch two.txt")
    session, events = await _turn(project, None)
    try:
        [line] = _notices(events)  # one line for the session, not one per command
        assert WHY in line and "Nobody could answer" in line and "asked" in line
        assert not (project / "one.txt").exists() and not (project / "two.txt").exists()
        assert all(d["by"] == "nobody" for d in _decisions(project) if d["tool"] == "execute_command")
    finally:
        await session.aclose()


async def test_headless_with_a_front_that_cannot_show_the_card(fake_api, project):
    # A notebook run where no frontend shows the cell: the front answers None, the line says so.
    _commands(fake_api, "touch one.txt")
    front = ScriptedFront(["allow"], unconfined=None)
    session, events = await _turn(project, front)
    try:
        assert len(front.unconfined_asked) == 1
        [line] = _notices(events)
        assert "Nobody could answer" in line
        assert len(front.asked) == 1 and (project / "one.txt").exists()  # each command asked, as before
    finally:
        await session.aclose()


@needs_sandbox
async def test_headless_control_with_the_sandbox_there_says_nothing(fake_api, project):
    _commands(fake_api, "touch one.txt")
    session, events = await _turn(project, None, available=True)
    try:
        assert _notices(events) == [] and (project / "one.txt").exists()
    finally:
        await session.aclose()


async def test_concurrent_calls_share_the_one_card(project):
    import asyncio

    from codingcode_jupyter.engine.approval.unconfined_choice import UnconfinedChoice
    from codingcode_jupyter.engine.tools.base import ToolContext

    gate = asyncio.Event()

    class Slow(ScriptedFront):
        async def ask_unconfined(self, request):
            self.unconfined_asked.append(request)
            await gate.wait()
            return "session"

    front = Slow()
    choice = UnconfinedChoice()
    choice.attach(front)
    ctx = ToolContext.standalone(project)
    both = asyncio.gather(choice.decide(ctx, "a", WHY), choice.decide(ctx, "b", WHY))
    await asyncio.sleep(0.01)
    gate.set()
    assert await both == ["session", "session"] and len(front.unconfined_asked) == 1
