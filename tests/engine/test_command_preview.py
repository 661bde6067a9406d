"""A command's Preview (issue 49, item 2): run in a throwaway copy of the project with the same sandbox,
it reports what it would change (each file's diff, files created and deleted, the exit code, the
output's tail) and leaves the project as it was; the real run then makes exactly those changes.
Where a preview cannot be faithful the card's offer says why."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.confirm import Confirm
from codingcode_jupyter.engine.approval.types import Decision, Verdict
from codingcode_jupyter.engine.sandbox import CommandSandbox, landlock
from codingcode_jupyter.engine.sandbox.preview import copy_budget_problem, run_preview
from codingcode_jupyter.engine.tools.base import BareParts, ToolCall, ToolContext
from codingcode_jupyter.engine.tools.shell import execute_command_tool
from tests.engine.sandbox_helpers import BWRAP_PROBLEM, SECRET, make_sandbox, run

# Changes in a directory of the project, and a read of the masked dotenv file (the same masks as for real).
COMMAND = (
    "cd work && echo added >> notes.txt && rm old.txt && mkdir -p out && echo made > out/new.txt && "
    "cat ../.env; echo done; exit 3"
)


def _furnish(project: Path) -> None:
    (project / "work").mkdir()
    (project / "work" / "notes.txt").write_text("first\n")
    (project / "work" / "old.txt").write_text("to go\n")
    (project / "keep.txt").write_text("kept\n")
    (project / ".env").write_text(f"KEY={SECRET}\n")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hi')\n")


def _backends() -> list:
    return [
        pytest.param(
            "bwrap", marks=pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bubblewrap: {BWRAP_PROBLEM}")
        ),
        pytest.param(
            "landlock", marks=pytest.mark.skipif(landlock.landlock_abi() < 1, reason="the kernel offers no Landlock")
        ),
    ]


def _state(project: Path) -> dict[str, str]:
    return {
        p.relative_to(project).as_posix(): p.read_text()
        for p in sorted(project.rglob("*"))
        if p.is_file() and ".codingcode" not in p.parts
    }


@pytest.mark.parametrize("backend", _backends())
async def test_the_preview_shows_the_changes_and_the_project_is_untouched(project: Path, home: Path, backend: str):
    _furnish(project)
    sandbox = make_sandbox(project, home, backend=backend)
    assert sandbox.active, sandbox.unavailable_reason
    before = _state(project)
    started = time.time() - 1
    try:
        preview = await run_preview(sandbox, COMMAND, project, env={"PATH": "/usr/bin:/bin"}, timeout=30)
        assert preview.error is None, preview
        assert preview.exit_code == 3 and not preview.timed_out and preview.method == "copy"
        changes = {f.path: f for f in preview.files}
        assert set(changes) == {"work/notes.txt", "work/old.txt", "work/out/new.txt"}, preview
        assert changes["work/notes.txt"].change == "modified" and "+added" in changes["work/notes.txt"].diff
        assert changes["work/old.txt"].change == "deleted" and "-to go" in changes["work/old.txt"].diff
        assert changes["work/out/new.txt"].change == "created" and "+made" in changes["work/out/new.txt"].diff
        assert "done" in preview.output_tail and SECRET not in preview.output_tail  # the same masks
        assert _state(project) == before  # nothing reached the project
        assert not list(project.parent.glob("codingcode-preview-*"))  # the copy is gone (beside it, or in the temp dir)
        assert not [
            p
            for p in Path(tempfile.gettempdir()).glob("codingcode-preview-*")
            if p.stat().st_uid == os.getuid() and p.stat().st_mtime >= started
        ]
        # The control: run for real, the project changes exactly as the preview said.
        with sandbox.command():  # as execute_command runs it: its placeholders go when it ends
            real = await run(sandbox, COMMAND)
        assert real.returncode == 3
        after = _state(project)
        assert after["work/notes.txt"] == "first\nadded\n" and "work/old.txt" not in after
        assert after["work/out/new.txt"] == "made\n"
        assert {k for k in set(before) | set(after) if before.get(k) != after.get(k)} == set(changes)
    finally:
        await sandbox.aclose()


@pytest.mark.parametrize("backend", _backends())
async def test_a_preview_cannot_write_the_project_through_its_absolute_path(project: Path, home: Path, backend: str):
    _furnish(project)
    sandbox = make_sandbox(project, home, backend=backend)
    try:
        preview = await run_preview(
            sandbox, f"echo evil >> {project}/keep.txt", project, env={"PATH": "/usr/bin:/bin"}, timeout=30
        )
        assert (project / "keep.txt").read_text() == "kept\n"
        if backend == "bwrap":  # the copy is mounted at the project's own path: the change shows in the copy
            assert [f.path for f in preview.files] == ["keep.txt"], preview
        else:  # Landlock runs in the copy's own path: the project's is not writable
            assert preview.exit_code != 0 and not preview.files, preview
    finally:
        await sandbox.aclose()


def test_the_copy_budget_counts_files_and_bytes(project: Path):
    _furnish(project)
    assert copy_budget_problem(project, 100, 10**9) is None
    assert "more than 3 files" in (copy_budget_problem(project, 3, 10**9) or "")
    assert "MB" in (copy_budget_problem(project, 100, 5) or "")


@dataclass
class _Sandboxed(BareParts):
    """A session's parts outside a session, with a real sandbox (what a session would give its tools)."""

    command_sandbox: CommandSandbox | None = None

    def sandbox(self) -> CommandSandbox | None:
        return self.command_sandbox


async def _offer(project: Path, sandbox: CommandSandbox | None, command: str, settings: dict | None = None):
    if settings:
        (project / ".codingcode").mkdir(exist_ok=True)
        (project / ".codingcode" / "settings.local.json").write_text(json.dumps(settings))
    bare = BareParts.of(project)
    parts = _Sandboxed(
        project=bare.project,
        settings=bare.settings,
        unconfined=bare.unconfined,
        reviewer=bare.reviewer,
        secrets=bare.secrets,
        command_sandbox=sandbox,
    )
    ctx = ToolContext.standalone(project, deps=parts, tool_use_id="t1")
    call = ToolCall("t1", execute_command_tool(), {"command": command})
    asked = Verdict(kind=Decision.ASK, layer="confirm", reason="asked", input={"command": command})
    shown = []

    async def person(request):  # the front: sees the card, answers no
        shown.append(request)
        return "deny"

    verdict = await Confirm(project, bare.settings).answer(call, ctx, asked, person)
    assert verdict.kind == Decision.DENY and len(shown) == 1
    return shown[0], ctx


@pytest.mark.skipif(BWRAP_PROBLEM is not None and landlock.landlock_abi() < 1, reason="no sandbox backend here")
async def test_the_card_offers_a_preview_or_says_why_not(project: Path, home: Path):
    _furnish(project)
    sandbox = make_sandbox(project, home)
    try:
        request, _ctx = await _offer(project, sandbox, "echo x >> work/notes.txt")
        assert request.dry_run is not None and request.dry_run.available, request.dry_run
        result = await request.run_preview()
        assert [f.path for f in result.files] == ["work/notes.txt"], result
        assert (project / "work" / "notes.txt").read_text() == "first\n"
        audit = (project / ".codingcode" / "audit.jsonl").read_text()
        assert '"event":"preview"' in audit.replace(" ", "") and "notes.txt" in audit

        for command, why in [
            ("curl -s https://example.com -o page.html", "network"),
            ("pip install requests", "network"),
            ("echo x > /var/tmp/elsewhere.txt", "outside the project"),
        ]:
            request, _ = await _offer(project, sandbox, command)
            assert request.dry_run is not None and not request.dry_run.available, (command, request.dry_run)
            assert why in request.dry_run.reason, (command, request.dry_run.reason)
            assert (await request.run_preview()).error == request.dry_run.reason

        request, _ = await _offer(project, None, "echo x >> work/notes.txt")
        assert request.dry_run is not None and not request.dry_run.available and "no sandbox" in request.dry_run.reason

        request, _ = await _offer(project, sandbox, "ls src")  # only reads: no card would come, no preview offered
        assert request.dry_run is None
    finally:
        await sandbox.aclose()


@pytest.mark.skipif(BWRAP_PROBLEM is not None and landlock.landlock_abi() < 1, reason="no sandbox backend here")
async def test_the_card_s_preview_shows_no_known_secret(project: Path, home: Path):
    """A project file holding a value the session knows as a secret (here the dotenv file's): the diff
    and the output's tail name it by a marker, as a command's streamed output does."""
    _furnish(project)
    (project / "work" / "settings.py").write_text(f"TOKEN = '{SECRET}'\n")
    sandbox = make_sandbox(project, home)
    try:
        command = f"cd work && sed -i 's/TOKEN/API_TOKEN/' settings.py && cat settings.py && grep -c '{SECRET}' settings.py"
        request, _ctx = await _offer(project, sandbox, command)
        result = await request.run_preview()
        assert [f.path for f in result.files] == ["work/settings.py"], result
        assert "API_TOKEN" in result.files[0].diff and "API_TOKEN" in result.output_tail, result
        assert SECRET not in result.model_dump_json(), result
        audit = (project / ".codingcode" / "audit.jsonl").read_text()  # the command as audited
        assert '"event":"preview"' in audit.replace(" ", "") and "grep -c" in audit and SECRET not in audit
    finally:
        await sandbox.aclose()


@pytest.mark.skipif(BWRAP_PROBLEM is not None and landlock.landlock_abi() < 1, reason="no sandbox backend here")
async def test_a_project_too_large_to_copy_is_said(project: Path, home: Path):
    _furnish(project)
    sandbox = make_sandbox(project, home)
    try:
        request, _ = await _offer(
            project, sandbox, "echo x >> work/notes.txt", {"sandbox": {"preview": {"maxFiles": 2}}}
        )
        assert request.dry_run is not None and not request.dry_run.available
        assert "more than 2 files" in request.dry_run.reason
    finally:
        await sandbox.aclose()


def test_the_overlays_upper_layer_is_read_as_changes(project: Path, tmp_path: Path):
    """What bubblewrap 0.9's overlay leaves in its upper layer, laid out by hand (this machine's bubblewrap
    may mount no overlays): a changed file, a new one, a whiteout, an opaque directory."""
    import os

    from codingcode_jupyter.engine.sandbox.preview import _changes_in_overlay

    _furnish(project)
    (project / "work" / "sub").mkdir()
    (project / "work" / "sub" / "a.txt").write_text("a\n")
    (project / "work" / "sub" / "b.txt").write_text("b\n")
    upper = tmp_path / "upper"
    (upper / "work" / "sub").mkdir(parents=True)
    (upper / "work" / "notes.txt").write_text("first\nadded\n")
    (upper / "work" / "new.txt").write_text("made\n")
    (upper / "work" / "sub" / "b.txt").write_text("b\n")
    (upper / "keep.txt").write_text("kept\n")  # copied up, unchanged (a chmod back, a touch): no change
    try:
        os.mknod(upper / "work" / "old.txt", 0o600 | 0o020000, os.makedev(0, 0))
        os.setxattr(upper / "work" / "sub", "trusted.overlay.opaque", b"y")
    except OSError as error:
        pytest.skip(f"cannot lay out an overlay's whiteouts here: {error}")
    changes = {f.path: f.change for f in _changes_in_overlay(project, upper)}
    assert changes == {
        "work/notes.txt": "modified",
        "work/new.txt": "created",
        "work/old.txt": "deleted",
        "work/sub/a.txt": "deleted",
    }, changes


def test_the_argv_points_the_projects_binds_at_the_throwaway(tmp_path: Path):
    from codingcode_jupyter.engine.sandbox.preview import _rebind

    project = tmp_path / "p"
    argv = [
        "bwrap",
        "--bind",
        str(project),
        str(project),
        "--bind",
        f"{project}/sub",
        f"{project}/sub",
        "--ro-bind",
        f"{project}/.git",
        f"{project}/.git",
        "--bind",
        "/other",
        "/other",
        "--",
        "bash",
        "-c",
        f"--bind {project} {project}",
    ]
    copied = _rebind(argv, project, copy=tmp_path / "c", upper=None, work=None)
    assert copied[:7] == [
        "bwrap",
        "--bind",
        str(tmp_path / "c"),
        str(project),
        "--bind",
        f"{tmp_path}/c/sub",
        f"{project}/sub",
    ]
    assert copied[7:] == argv[7:]  # read-only binds, other binds and the command itself are left as they are
    overlaid = _rebind(argv, project, copy=None, upper=tmp_path / "u", work=tmp_path / "w")
    assert overlaid[:7] == [
        "bwrap",
        "--overlay-src",
        str(project),
        "--overlay",
        str(tmp_path / "u"),
        str(tmp_path / "w"),
        str(project),
    ]
    assert f"{project}/sub" not in overlaid[7:10] and overlaid[-4:] == argv[-4:]


@pytest.mark.parametrize("backend", _backends())
async def test_a_change_that_puts_size_and_mtime_back_is_still_seen(project: Path, home: Path, backend: str):
    _furnish(project)
    sandbox = make_sandbox(project, home, backend=backend)
    try:
        # The temp directory is the sandbox's own (Landlock's is not /tmp).
        command = (
            'cd work && ref="${TMPDIR:-/tmp}/ref" && cp -p notes.txt "$ref" && printf \'FIRST\\n\' > notes.txt '
            '&& touch -r "$ref" notes.txt'
        )
        preview = await run_preview(sandbox, command, project, env={"PATH": "/usr/bin:/bin"}, timeout=30)
        assert preview.exit_code == 0, preview
        assert [(f.path, f.change) for f in preview.files] == [("work/notes.txt", "modified")], preview
        assert "+FIRST" in preview.files[0].diff
    finally:
        await sandbox.aclose()


@pytest.mark.parametrize("backend", _backends())
async def test_a_preview_runs_as_the_real_command_will(project: Path, home: Path, backend: str):
    """The real command is compared after it ends, so git may write its repository and, under Landlock,
    the top level takes new names: the preview allows the same, or it would show a failure the real
    run does not have."""
    import subprocess

    _furnish(project)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    sandbox = make_sandbox(project, home, backend=backend)
    try:
        command = "echo top > top.txt && git add keep.txt && git -c user.name=t -c user.email=t@example.org commit -qm first && git log --oneline | wc -l"
        preview = await run_preview(sandbox, command, project, env={"PATH": "/usr/bin:/bin"}, timeout=30)
        assert preview.exit_code == 0, preview
        # git's own files are one line, not a file each
        assert [(f.path, f.change) for f in preview.files] == [(".git/", "modified"), ("top.txt", "created")], preview
        assert "created" in preview.files[0].diff
        assert not (project / "top.txt").exists()
        assert subprocess.run(["git", "-C", str(project), "rev-parse", "HEAD"], capture_output=True).returncode != 0
    finally:
        await sandbox.aclose()


@pytest.mark.parametrize("backend", _backends())
async def test_a_deny_rules_path_stays_hidden_in_the_copy(project: Path, home: Path, backend: str):
    """The person's deny rules reach the sandbox as the project's own absolute paths; a copy elsewhere
    (Landlock) holds the same files under another path, hidden there too. Undo's checkpoints, outside
    the project, are hidden from a preview as from every command."""
    from codingcode_jupyter.engine.user_dir import checkpoints_dir

    _furnish(project)
    kept = checkpoints_dir(project) / "s1" / "1"
    kept.mkdir(parents=True)
    (kept / "1").write_text(f"an earlier copy {SECRET}\n")
    (project / "work" / "private.txt").write_text(f"private {SECRET}\n")
    (project / "work" / "ledger.csv").write_text("a,b\n")
    sandbox = make_sandbox(
        project, home, backend=backend,
        filesystem={"denyRead": [str(project / "work" / "private.txt")], "denyWrite": [str(project / "work" / "ledger.csv")]},
    )
    try:
        command = f"cat work/private.txt; cat {kept}/1; echo c,d >> work/ledger.csv; echo ran"
        preview = await run_preview(sandbox, command, project, env={"PATH": "/usr/bin:/bin"}, timeout=30)
        assert "ran" in preview.output_tail and SECRET not in preview.output_tail, preview
        assert "work/ledger.csv" not in {f.path for f in preview.files}, preview
    finally:
        await sandbox.aclose()
