"""Checkpoints and undo: snapshots taken by the real file tools, restores, conflicts, attacks."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.audit import AuditLog
from codingcode_jupyter.engine.checkpoints import CheckpointError, CheckpointStore, checkpoints_dir
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import ToolContext
from codingcode_jupyter.engine.tools.files import edit_file_tool, read_file_tool, write_file_tool
from tests.engine.helpers import make_deps

read_file, write_file, edit_file = read_file_tool(), write_file_tool(), edit_file_tool()


@pytest.fixture
def store(project: Path) -> CheckpointStore:
    return CheckpointStore(project)


def make_ctx(project: Path, store: CheckpointStore, turn: int, session: str = "s1", state=None) -> ToolContext:
    return ToolContext.standalone(project, session_id=session, turn_id=turn, state=state or SessionState(),
        deps=make_deps(project, checkpoints=store))


async def ok(tool, args, ctx):
    result = await tool.run(args, ctx)
    assert not result.is_error, result.text_content
    return result


async def test_undo_restores_edited_file_deletes_created_one_and_keeps_mode(project, store):
    target = project / "a.py"
    target.write_text("x = 1\n")
    os.chmod(target, 0o751)
    state = SessionState()
    ctx = make_ctx(project, store, 1, state=state)
    await ok(read_file, {"path": "a.py"}, ctx)
    await ok(edit_file, {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}, ctx)
    await ok(edit_file, {"path": "a.py", "old_string": "x = 2", "new_string": "x = 3"}, ctx)
    await ok(write_file, {"path": "new/b.txt", "content": "hello\n"}, ctx)

    checkpoint = store.latest()
    assert checkpoint is not None and checkpoint.turn_id == 1
    # Two edits of one file in one turn: one snapshot, of the state before the turn.
    assert [Path(f.path).name for f in checkpoint.files] == ["a.py", "b.txt"]

    plan = store.plan_undo()
    actions = {Path(f.path).name: f.action for f in plan.files}
    assert actions == {"a.py": "restore", "b.txt": "delete"}
    rendered = plan.render()
    assert "-x = 3" in rendered and "+x = 1" in rendered and "-hello" in rendered

    store.undo(plan)
    assert target.read_text() == "x = 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert not (project / "new" / "b.txt").exists()
    record = AuditLog(project).read()[-1]
    assert record["event"] == "undo" and record["session_id"] == "s1" and record["turn_id"] == 1
    assert {Path(f["path"]).name: f["action"] for f in record["files"]} == actions


async def test_repeated_undo_walks_back_turn_by_turn_and_survives_a_new_store(project, store):
    (project / "f.txt").write_text("v0\n")
    state = SessionState()
    for turn, value in ((1, "v1"), (2, "v2")):
        ctx = make_ctx(project, store, turn, state=state)
        await ok(read_file, {"path": "f.txt"}, ctx)
        await ok(write_file, {"path": "f.txt", "content": value + "\n"}, ctx)

    # A kernel restart: a fresh store over the same folder sees the same checkpoints.
    again = CheckpointStore(project)
    assert again.latest().turn_id == 2
    again.undo()
    assert (project / "f.txt").read_text() == "v1\n"
    again.undo()
    assert (project / "f.txt").read_text() == "v0\n"
    with pytest.raises(CheckpointError, match="Nothing to undo"):
        again.undo()


async def test_conflict_when_file_changed_after_the_turn_refuses_unless_forced(project, store):
    (project / "f.txt").write_text("original\n")
    ctx = make_ctx(project, store, 1)
    await ok(read_file, {"path": "f.txt"}, ctx)
    await ok(write_file, {"path": "f.txt", "content": "agent\n"}, ctx)
    (project / "f.txt").write_text("person edited after\n")

    plan = store.plan_undo()
    assert plan.conflicts and "changed since the turn" in plan.render()
    with pytest.raises(CheckpointError, match="nothing was changed"):
        store.undo(plan)
    assert (project / "f.txt").read_text() == "person edited after\n"
    assert not [r for r in AuditLog(project).read() if r.get("event") == "undo"]

    store.undo(store.plan_undo(), force=True)
    assert (project / "f.txt").read_text() == "original\n"
    assert AuditLog(project).read()[-1]["forced"] is True


async def test_created_file_deleted_by_person_is_a_conflict_not_a_crash(project, store):
    ctx = make_ctx(project, store, 1)
    await ok(write_file, {"path": "made.txt", "content": "x\n"}, ctx)
    (project / "made.txt").unlink()
    plan = store.plan_undo()
    assert [f.action for f in plan.files] == ["unchanged"]
    store.undo(plan)  # nothing to do, but the turn counts as undone
    assert store.latest() is None


async def test_failed_write_leaves_snapshot_and_undo_restores_it(project, store, monkeypatch):
    (project / "f.txt").write_text("before\n")
    ctx = make_ctx(project, store, 1)
    await ok(read_file, {"path": "f.txt"}, ctx)
    import codingcode_jupyter.engine.tools.files as files

    def broken(path, data):
        path.write_bytes(data[:3])  # a half-done write
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "atomic_write", broken)
    result = await write_file.run({"path": "f.txt", "content": "after after\n"}, ctx)
    assert result.is_error
    store.undo()
    assert (project / "f.txt").read_text() == "before\n"


async def test_snapshot_failure_stops_the_write(project, store, monkeypatch):
    (project / "f.txt").write_text("keep\n")
    ctx = make_ctx(project, store, 1)
    await ok(read_file, {"path": "f.txt"}, ctx)

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(CheckpointStore, "before_change", no_space)
    result = await write_file.run({"path": "f.txt", "content": "changed\n"}, ctx)
    assert result.is_error and "not changed" in result.text_content
    assert (project / "f.txt").read_text() == "keep\n"


async def test_without_a_store_the_tools_write_as_before(project):
    ctx = ToolContext.standalone(project, session_id="s", turn_id=1, state=SessionState())
    await ok(write_file, {"path": "x.txt", "content": "1\n"}, ctx)
    assert not checkpoints_dir(project).exists()


async def test_binary_file_round_trips(project, store):
    data = bytes(range(256)) * 10
    (project / "blob.bin").write_bytes(data)
    store.before_change("s1", 1, project / "blob.bin")
    (project / "blob.bin").write_bytes(b"new")
    store.after_change("s1", 1, project / "blob.bin")
    plan = store.plan_undo()
    assert "Binary or large file" in plan.render()
    store.undo(plan)
    assert (project / "blob.bin").read_bytes() == data


# ---------------------------------------------------------------- attacks on the manifest


async def _one_turn(project: Path, store: CheckpointStore) -> Path:
    (project / "f.txt").write_text("v0\n")
    ctx = make_ctx(project, store, 1)
    await ok(read_file, {"path": "f.txt"}, ctx)
    await ok(write_file, {"path": "f.txt", "content": "v1\n"}, ctx)
    return checkpoints_dir(project) / "s1" / "1" / "manifest.json"


async def test_tampered_manifest_pointing_outside_project_is_refused(project, store, tmp_path):
    manifest = await _one_turn(project, store)
    victim = tmp_path / "outside.txt"
    victim.write_text("precious\n")
    data = json.loads(manifest.read_text())
    data["files"][0]["path"] = str(victim)
    data["files"][0]["after_sha256"] = None
    manifest.write_text(json.dumps(data))
    plan = store.plan_undo()
    assert plan.refused and "outside the project" in plan.render()
    with pytest.raises(CheckpointError, match="refused"):
        store.undo(plan)
    assert victim.read_text() == "precious\n"


async def test_blob_name_traversal_is_refused(project, store, tmp_path):
    manifest = await _one_turn(project, store)
    (tmp_path / "evil").write_text("evil\n")
    data = json.loads(manifest.read_text())
    data["files"][0]["blob"] = "../../../../../evil"
    manifest.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="invalid blob"):
        store.plan_undo()
    assert (project / "f.txt").read_text() == "v1\n"


async def test_altered_blob_is_detected(project, store):
    manifest = await _one_turn(project, store)
    (manifest.parent / "blobs" / "0").write_text("swapped\n")
    with pytest.raises(CheckpointError, match="altered"):
        store.plan_undo()
    assert (project / "f.txt").read_text() == "v1\n"


async def test_directory_swapped_for_symlink_does_not_redirect_restore(project, store, tmp_path):
    (project / "sub").mkdir()
    (project / "sub" / "f.txt").write_text("v0\n")
    ctx = make_ctx(project, store, 1)
    await ok(read_file, {"path": "sub/f.txt"}, ctx)
    await ok(write_file, {"path": "sub/f.txt", "content": "v1\n"}, ctx)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "f.txt").write_text("v1\n")
    (project / "sub" / "f.txt").unlink()
    (project / "sub").rmdir()
    (project / "sub").symlink_to(outside)
    plan = store.plan_undo()
    assert plan.refused
    with pytest.raises(CheckpointError):
        store.undo(plan)
    assert (outside / "f.txt").read_text() == "v1\n"


def test_damaged_manifest_is_a_clear_error(project, store):
    turn = checkpoints_dir(project) / "s1" / "1"
    turn.mkdir(parents=True)
    (turn / "manifest.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="Damaged checkpoint manifest"):
        store.latest()


@pytest.mark.parametrize("session", ["../x", "", "a/b", ".hidden"])
def test_unsafe_session_ids_are_rejected(project, store, session):
    with pytest.raises(CheckpointError, match="Invalid session id"):
        store.before_change(session, 1, project / "f.txt")


# ---------------------------------------------------------------- through a real session


async def test_session_turns_are_checkpointed_by_turn_and_undone_newest_first(fake_api, project):
    from codingcode_jupyter.engine.runtime import open_session
    from tests.fakes.anthropic_server import Reply, text, tool_use

    (project / "f.txt").write_text("v0\n")
    session = open_session(project, mode="bypass")
    try:
        assert session.deps is not None and isinstance(session.deps.checkpoints, CheckpointStore)
        fake_api.add(
            Reply([tool_use("read_file", {"path": "f.txt"})]),
            Reply([tool_use("write_file", {"path": "f.txt", "content": "v1\n"})]),
            Reply([text("one")]),
            Reply([tool_use("write_file", {"path": "f.txt", "content": "v2\n"}),
                   tool_use("write_file", {"path": "g.txt", "content": "new\n"})]),
            Reply([text("two")]),
        )
        await session.run_turn("first")
        await session.run_turn("second")
    finally:
        await session.aclose()
    turns = [(c.session_id, c.turn_id, len(c.files)) for c in CheckpointStore(project).checkpoints()]
    assert turns == [(session.id, 1, 1), (session.id, 2, 2)]
    store = CheckpointStore(project)
    store.undo()
    assert (project / "f.txt").read_text() == "v1\n" and not (project / "g.txt").exists()
    store.undo()
    assert (project / "f.txt").read_text() == "v0\n"


async def test_undo_covers_what_a_command_changed(fake_api, project):
    """`sed -i` on two files and `rm` on a third, then undo: all three back byte for byte."""
    from codingcode_jupyter.engine.runtime import open_session
    from tests.fakes.anthropic_server import Reply, text, tool_use

    for name, body in (("a.txt", "alpha\n"), ("b.txt", "beta\n"), ("c.bin", "\x00gamma\xff")):
        (project / name).write_bytes(body.encode("latin-1"))
    command = "sed -i 's/a/A/g' a.txt b.txt && rm c.bin && echo new > made.txt"
    fake_api.add(Reply([tool_use("execute_command", {"command": command})]), Reply([text("done")]))
    session = open_session(project, mode="bypass")
    try:
        await session.run_turn("change them")
    finally:
        await session.aclose()
    assert (project / "a.txt").read_text() == "AlphA\n" and not (project / "c.bin").exists()
    store = CheckpointStore(project)
    plan = store.plan_undo()
    actions = {Path(item.path).name: item.action for item in plan.files}
    assert actions == {"a.txt": "restore", "b.txt": "restore", "c.bin": "restore", "made.txt": "delete"}
    assert "cannot undo" in plan.render() and "kernel's variables" in plan.render()
    store.undo(plan)
    assert (project / "a.txt").read_text() == "alpha\n" and (project / "b.txt").read_text() == "beta\n"
    assert (project / "c.bin").read_bytes() == "\x00gamma\xff".encode("latin-1")
    assert not (project / "made.txt").exists()


async def test_undo_leaves_a_file_the_person_edited_since(fake_api, project):
    from codingcode_jupyter.engine.runtime import open_session
    from tests.fakes.anthropic_server import Reply, text, tool_use

    (project / "a.txt").write_text("one\n")
    fake_api.add(Reply([tool_use("execute_command", {"command": "echo two > a.txt; echo x > b.txt"})]), Reply([text("ok")]))
    session = open_session(project, mode="bypass")
    try:
        await session.run_turn("go")
    finally:
        await session.aclose()
    (project / "a.txt").write_text("mine\n")  # the person's own edit after the turn
    store = CheckpointStore(project)
    plan = store.plan_undo()
    assert [Path(item.path).name for item in plan.conflicts] == ["a.txt"]
    with pytest.raises(CheckpointError, match="changed after the turn"):
        store.undo(plan)
    assert (project / "a.txt").read_text() == "mine\n" and (project / "b.txt").exists()  # nothing was changed


def test_dotenv_files_never_enter_the_shadow_repository(project):
    from codingcode_jupyter.engine.snapshots import ShadowRepo

    (project / ".env").write_text("API_KEY=marker-123\n")
    (project / "sub").mkdir()
    (project / "sub" / ".env.local").write_text("X=marker-456\n")
    (project / "app.py").write_text("print(1)\n")
    repo = ShadowRepo(project)
    commit = repo.snapshot()
    assert repo.read(commit, "app.py") is not None
    assert repo.read(commit, ".env") is None and repo.read(commit, "sub/.env.local") is None


async def test_a_file_run_python_created_is_removed_by_undo(project):
    from codingcode_jupyter.engine.agent import AgentLoop, Conversation
    from codingcode_jupyter.notebook.kernel.tools import kernel_tools
    from tests.engine.helpers import AllowAll, Recorder, StaticTools
    from tests.fakes.model import call, scripted

    run_python = next(t for t in kernel_tools(namespace={}) if t.name == "run_python")
    code = f"open({str(project / 'made_by_code.txt')!r}, 'w').write('x')"
    store = CheckpointStore(project)
    loop = AgentLoop(model=scripted([call("run_python", {"code": code})]), tools=StaticTools([run_python]),
                     approver=AllowAll(), session_id="s1", state=SessionState(), emit=Recorder(),
                     deps=make_deps(project, checkpoints=store))
    await loop.run(Conversation(), "make a file", 1)
    store.after_turn("s1", 1)
    assert (project / "made_by_code.txt").exists()
    store.undo(store.plan_undo())
    assert not (project / "made_by_code.txt").exists()


async def test_the_projects_first_snapshot_is_taken_after_the_models_first_answer_not_before_its_request(
        fake_api, project: Path, monkeypatch):
    from codingcode_jupyter.engine.runtime import open_session
    from tests.fakes.anthropic_server import Reply, text
    from tests.polling import eventually

    (project / "big.txt").write_text("x\n")
    # What happened in which order: the first request reaching the API, the first snapshot
    # starting (spied on the class, so a snapshot started while the session opens is seen too).
    order: list[str] = []
    warm = CheckpointStore.warm

    def spied_warm(self: CheckpointStore) -> None:
        order.append("snapshot")
        warm(self)

    monkeypatch.setattr(CheckpointStore, "warm", spied_warm)

    def first(body):
        order.append("request")
        return Reply([text("hello")])

    fake_api.add(first)
    session = open_session(project, model="claude-sonnet-5")
    try:
        await session.start()
        await session.run_turn("hi")
        head = session.deps.checkpoints.shadow.git_dir / "HEAD"
        # It is taken in the background once the model answered (the positive control)...
        await eventually(lambda: head.exists() and session._warming is not None and session._warming.done(),
                         what="the first snapshot")
        # ...and was not started before the first request went out.
        assert order == ["request", "snapshot"]
    finally:
        await session.aclose()


def test_checkpoints_live_outside_the_project_and_an_earlier_versions_move_there(tmp_path):
    from codingcode_jupyter.engine.user_dir import legacy_checkpoints_dir, user_dir

    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.txt").write_text("one\n")
    store = CheckpointStore(project)
    assert store.before_change("s1", 1, project / "a.txt")
    (project / "a.txt").write_text("two\n")
    store.after_change("s1", 1, project / "a.txt")
    assert user_dir() in checkpoints_dir(project).parents and not (project / ".codingcode").exists()
    # An earlier version's folder inside the project: the next store moves it out and undo reads it.
    other = tmp_path / "older"
    other.mkdir()
    (other / "b.txt").write_text("old\n")
    earlier = CheckpointStore(other)
    assert earlier.before_change("s1", 1, other / "b.txt")
    (other / "b.txt").write_text("new\n")
    earlier.after_change("s1", 1, other / "b.txt")
    legacy = legacy_checkpoints_dir(other)
    legacy.parent.mkdir(parents=True)
    checkpoints_dir(other).rename(legacy)
    moved = CheckpointStore(other)
    assert not legacy.exists() and checkpoints_dir(other).is_dir()
    assert moved.undo(moved.plan_undo()) is not None
    assert (other / "b.txt").read_text() == "old\n"
