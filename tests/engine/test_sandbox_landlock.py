"""The Landlock backend, measured by attack, each with a control that the same action works where allowed.

The policy tests shared with bubblewrap (leaks, GTFOBins corpus) run under Landlock through
``CODINGCODE_TEST_SANDBOX_BACKEND=landlock`` and in the container test; this file holds what is
particular to Landlock: the per-entry grants around secrets and protected paths, the
capability drop, the socket families, signals, links, and choosing the backend.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import CommandSandbox, landlock
from codingcode_jupyter.engine.sandbox.home import NO_CREDENTIALS
from codingcode_jupyter.engine.settings import SandboxSettings
from tests.engine.sandbox_helpers import SECRET, make_sandbox, run

pytestmark = pytest.mark.skipif(landlock.landlock_abi() < 1, reason="the kernel offers no Landlock")

VISIBLE = "VISIBLE-LANDLOCK-CONTROL-31c8"


@pytest.fixture
def furnished(project: Path) -> Path:
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n")
    (project / ".env").write_text(f"KEY={SECRET}\n")
    (project / "src" / "deep").mkdir(parents=True)
    (project / "src" / "deep" / ".env.local").write_text(f"KEY={SECRET}\n")
    (project / "src" / "deep" / "plain.txt").write_text(VISIBLE)
    (project / "README.md").write_text(VISIBLE)
    (project / "lib").mkdir()
    return project


@pytest.fixture
async def ll(furnished: Path, home: Path):
    sandbox = make_sandbox(furnished, home, backend="landlock")
    assert sandbox.active and sandbox.backend == "landlock", sandbox.unavailable_reason
    yield sandbox
    await sandbox.aclose()


async def test_secrets_hidden_beside_readable_files(ll: CommandSandbox) -> None:
    result = await run(ll, "cat .env src/deep/.env.local; grep -r KEY . ; cat README.md src/deep/plain.txt")
    assert SECRET not in result.out
    assert result.out.count(VISIBLE) == 2  # control: their neighbours are read


async def test_protected_paths_are_put_back_after_the_command(ll: CommandSandbox, furnished: Path) -> None:
    # The top level is writable (everything below it then is, Landlock grants by hierarchy): what the
    # host runs is held by the compare after the command, which moves it aside or restores it.
    result = await run(ll, "echo x > .git/hooks/pre-commit; echo '[core] fsmonitor=evil' >> .git/config; "
                           "echo y > .mcp.json; mkdir -p .codingcode && echo '{}' > .codingcode/settings.json; "
                           "mv README.md R2; echo ok > lib/new.txt && cat lib/new.txt; echo ok >> R2; cat .git/config")
    assert not (furnished / ".git" / "hooks" / "pre-commit").exists()
    assert (furnished / ".git" / "config").read_text() == "[core]\n"
    assert not (furnished / ".mcp.json").exists() and not (furnished / ".codingcode").exists()
    assert any("previous content is back" in note for note in result.notes), result.notes
    # Controls: the same command's ordinary writes stay, at the top level too; .git was readable.
    assert (furnished / "lib" / "new.txt").read_text() == "ok\n" and "ok" in result.out
    assert not (furnished / "README.md").exists() and (furnished / "R2").read_text() == VISIBLE + "ok\n"
    assert "fsmonitor=evil" in result.out


async def test_top_level_entries_are_created_renamed_and_removed(furnished: Path, home: Path) -> None:
    for secret in (furnished / ".env", furnished / "src" / "deep" / ".env.local"):
        secret.unlink()  # beside (or above) a hidden file, a new entry is read from the next command on: below
    ll = make_sandbox(furnished, home, backend="landlock")
    line = ("mkdir newdir && touch .gitignore && echo x > made.txt && cat made.txt && mv made.txt moved.txt && "
            "rm -r lib && echo y > newdir/a.txt && cat newdir/a.txt")
    try:
        result = await run(ll, line)
        strict = await run(ll, "touch another-top-level.txt", compared=False)
    finally:
        await ll.aclose()
    assert result.returncode == 0 and result.out == "x\ny\n", result
    assert (furnished / "moved.txt").read_text() == "x\n" and (furnished / ".gitignore").exists()
    assert not (furnished / "lib").exists() and (furnished / "newdir" / "a.txt").exists()
    # Control: a caller that does not compare after the command (an MCP server) keeps the top level
    # unwritable, and the same line fails there: the assertions above can tell the two apart.
    assert strict.returncode != 0 and "Permission denied" in strict.err
    assert not (furnished / "another-top-level.txt").exists()


async def test_top_level_entries_beside_a_hidden_file_are_read_from_the_next_command(ll: CommandSandbox,
                                                                                     furnished: Path) -> None:
    first = await run(ll, "mkdir -p results/run1 && echo x > results/run1/out.txt && echo y > made.txt && "
                          "mv README.md R2; cat made.txt")
    assert first.out == "" and "made.txt: Permission denied" in first.err  # the limit, as limits() says
    assert (furnished / "results" / "run1" / "out.txt").read_text() == "x\n" and (furnished / "R2").exists()
    second = await run(ll, "cat made.txt results/run1/out.txt R2; cat .env")
    assert second.out == "y\nx\n" + VISIBLE and SECRET not in second.out
    assert any("until the next command" in line and "top level" in line for line in ll.limits())


async def test_a_file_made_beside_a_hidden_secret_is_read_from_the_next_command(ll: CommandSandbox) -> None:
    first = await run(ll, "echo fresh > src/new.txt; cat src/new.txt")
    assert first.out == "" and "Permission denied" in first.err  # the limit, as said in limits()
    assert (await run(ll, "cat src/new.txt")).out == "fresh\n"
    assert any("until the next command" in line for line in ll.limits())


async def test_writes_outside_fail_and_tmp_is_private(ll: CommandSandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    result = await run(ll, f"echo pwned > {outside}; echo pwned > /tmp/pwned-ll; echo t > $TMPDIR/t && cat $TMPDIR/t")
    assert not outside.exists() and not Path("/tmp/pwned-ll").exists()
    assert result.out == "t\n"  # control: the sandbox's own temp directory works


async def test_no_capability_even_for_root(ll: CommandSandbox) -> None:
    result = await run(ll, "grep -E '^Cap(Eff|Prm|Bnd|Amb):' /proc/self/status")
    values = [line.split()[1] for line in result.out.splitlines()]
    assert len(values) == 4 and all(int(v, 16) == 0 for v in values), result.out


@pytest.mark.parametrize("family", ["AF_UNIX", "SOCK_DGRAM", "SOCK_RAW", "IPPROTO_SCTP"])
async def test_socket_families_other_than_tcp_are_refused(ll: CommandSandbox, family: str) -> None:
    make = {
        "AF_UNIX": "socket.socket(socket.AF_UNIX)",
        "SOCK_DGRAM": "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
        "SOCK_RAW": "socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)",
        "IPPROTO_SCTP": "socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)",
    }[family]
    code = f"import socket\ntry:\n    {make}\n    print('made')\nexcept OSError as e:\n    print('refused', e.errno)"
    result = await run(ll, f"{sys.executable} -I -S -c {_q(code)}; {sys.executable} -I -S -c {_q(_TCP_SOCKET)}")
    assert result.out.splitlines()[0] == "refused 1", result
    assert result.out.splitlines()[1] == "tcp socket made"  # control: the filter is not refusing everything


_TCP_SOCKET = "import socket\nsocket.socket()\nprint('tcp socket made')"


def _q(code: str) -> str:
    return "'" + code.replace("'", "'\\''") + "'"


@pytest.mark.skipif(landlock.landlock_abi() < 4, reason="TCP rules need Landlock ABI 4")
async def test_tcp_connect_and_bind_refused_with_network_off(ll: CommandSandbox) -> None:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        code = (f"import socket\ns = socket.socket()\ntry:\n    s.connect(('127.0.0.1', {port}))\n    print('connected')\n"
                f"except OSError as e:\n    print('refused', e.errno)\nb = socket.socket()\ntry:\n    b.bind(('127.0.0.1', 0))\n"
                "    print('bound')\nexcept OSError as e:\n    print('refused', e.errno)")
        result = await run(ll, f"{sys.executable} -I -S -c {_q(code)}")
    finally:
        server.close()
    assert result.out.split() == ["refused", "13", "refused", "13"], result


@pytest.mark.skipif(landlock.landlock_abi() < 6, reason="signal scoping needs Landlock ABI 6")
async def test_signals_to_processes_outside_are_refused(ll: CommandSandbox) -> None:
    victim = subprocess.Popen(["sleep", "30"])
    try:
        result = await run(ll, f"kill -TERM {victim.pid}; echo rc=$?; sleep 5 & kill -TERM $!; echo own=$?")
        assert "rc=1" in result.out and victim.poll() is None
        assert "own=0" in result.out  # control: its own children can be signalled
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()


async def test_a_link_in_the_project_grants_nothing_outside(furnished: Path, home: Path) -> None:
    (furnished / "src" / "deep" / "to-ssh").symlink_to(home / ".ssh")
    (furnished / "src" / "deep" / "to-readme").symlink_to(furnished / "README.md")
    sandbox = make_sandbox(furnished, home, backend="landlock")
    try:
        result = await run(sandbox, "cat src/deep/to-ssh/id_rsa; cat src/deep/to-readme")
    finally:
        await sandbox.aclose()
    assert SECRET not in result.out
    assert VISIBLE in result.out  # control: a link to a granted file reads


async def test_home_shows_only_its_allowlist(furnished: Path, home: Path) -> None:
    (home / ".codingcode" / "mcp-tokens").mkdir(parents=True)
    (home / ".codingcode" / "mcp-tokens" / "github.json").write_text(SECRET)
    (home / ".config" / "openai").mkdir(parents=True)
    (home / ".config" / "openai" / "key").write_text(SECRET)
    (home / ".cache" / "pip").mkdir(parents=True)
    (home / ".cache" / "pip" / "wheel").write_text(VISIBLE + "-pip")
    (home / "extra").mkdir()
    (home / "extra" / "data.txt").write_text(VISIBLE + "-extra")
    (home / ".gitconfig").write_text(f"[user]\n\tname = Ann\n[credential]\n\thelper = store\n"
                                     f"[http]\n\textraHeader = Authorization: {SECRET}\n")
    for backend in ("landlock", "bwrap"):
        sandbox = make_sandbox(furnished, home, backend=backend, filesystem={"allowRead": ["~/extra"]})
        if not sandbox.active:
            continue  # bubblewrap may be unavailable here (the container test)
        try:
            result = await run(sandbox, f"cat {home}/.codingcode/mcp-tokens/github.json {home}/.config/openai/key "
                                        f"{home}/.bashrc; cat {home}/.cache/pip/wheel {home}/extra/data.txt; "
                                        f"HOME={home} git config --global --list; HOME={home} git config --global --list --show-origin")
        finally:
            await sandbox.aclose()
        assert SECRET not in result.out and "original" not in result.out, backend
        assert f"{VISIBLE}-pip" in result.out and f"{VISIBLE}-extra" in result.out, (backend, result)
        assert "user.name=Ann" in result.out and "credential" not in result.out, (backend, result)


def test_a_setting_showing_the_product_directory_is_refused(tmp_path: Path, home: Path) -> None:
    for entry in ("~", "~/.codingcode", "~/.codingcode/mcp-tokens", str(home)):
        sandbox = CommandSandbox.create(tmp_path, SandboxSettings.model_validate(
            {"backend": "landlock", "filesystem": {"allowRead": [entry]}}), home=home)
        assert not sandbox.active and "allowRead" in (sandbox.unavailable_reason or ""), entry
    ok = CommandSandbox.create(tmp_path, SandboxSettings.model_validate(
        {"backend": "landlock", "filesystem": {"allowRead": ["~/projects-data"]}}), home=home)
    assert ok.active, ok.unavailable_reason  # control: another directory is fine


async def test_a_credential_prompt_says_to_run_outside(ll: CommandSandbox, furnished: Path) -> None:
    subprocess.run(["git", "init", "-q", str(furnished / "src" / "repo")], check=True)
    result = await run(ll, "cd src/repo && git ls-remote https://127.0.0.1:9/none.git; echo rc=$?; "
                           "$GIT_ASKPASS 'Password:'; echo askpass=$?")
    assert NO_CREDENTIALS in result.err and "askpass=1" in result.out


def test_auto_falls_back_to_landlock_when_bubblewrap_cannot_start(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: No space left on device' >&2\nexit 1\n")
    fake.chmod(0o755)
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings(), bwrap=str(fake))
    assert sandbox.active and sandbox.backend == "landlock"
    assert "Creating new namespace failed" in sandbox.backend_reason
    assert sandbox.describe().startswith("Landlock: on (network off)")
    assert sandbox.limits() and "runs sandboxed (Landlock" in sandbox.card_note()
    # Control: asking for bubblewrap alone there fails closed.
    only = CommandSandbox.create(tmp_path, SandboxSettings(backend="bwrap"), bwrap=str(fake))
    assert not only.active and "Creating new namespace failed" in (only.unavailable_reason or "")


async def test_the_allowlist_proxy_is_reached_and_nothing_else(furnished: Path, home: Path) -> None:
    if landlock.landlock_abi() < 4:
        pytest.skip("TCP rules need Landlock ABI 4")
    sandbox = make_sandbox(furnished, home, backend="landlock", network={"allowedDomains": ["localhost"]})
    code = ("import os, socket\nurl = os.environ['HTTPS_PROXY']\nport = int(url.rsplit(':', 1)[1])\n"
            "s = socket.create_connection(('127.0.0.1', port))\ns.sendall(b'CONNECT example.com:443 HTTP/1.1\\r\\n\\r\\n')\n"
            "print(s.recv(200).split(b'\\r\\n')[0].decode())\n"
            "t = socket.socket()\ntry:\n    t.connect(('127.0.0.1', port + 1 if port < 65535 else port - 1))\n"
            "except OSError as e:\n    print('other port refused', e.errno)")
    try:
        result = await run(sandbox, f"{sys.executable} -I -S -c {_q(code)}")
    finally:
        await sandbox.aclose()
    lines = result.out.splitlines()
    assert lines and lines[0].startswith("HTTP/1.1 403"), result  # the proxy answered, and refused the domain
    assert lines[1] == "other port refused 13", result
    assert any("port, not an address" in line for line in sandbox.limits())


def test_doctor_names_the_backend_why_and_what_it_does_not_cover(tmp_path: Path) -> None:
    from codingcode_jupyter.engine.doctor import doctor_report
    from codingcode_jupyter.engine.project_settings import ProjectSettings

    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: No space left on device' >&2\nexit 1\n")
    fake.chmod(0o755)
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings(), bwrap=str(fake))
    text = doctor_report(tmp_path, ProjectSettings(tmp_path).current(), sandbox=sandbox).render()
    section = text.split("Command sandbox\n", 1)[1].split("\nWarnings", 1)[0]
    assert "landlock: on — Landlock (ABI" in section and "Creating new namespace failed" in section
    assert "confines: writes:" in section and section.count("does not cover:") == len(sandbox.limits())
    assert "top level" in section


async def test_after_an_undoable_edit_a_new_top_level_file_is_read_back(project: Path, home: Path) -> None:
    """Undo's copies live outside the project (hidden with the person's directory), so an edit's
    checkpoint leaves no hidden folder whose parents would lose the right to read new files."""
    from codingcode_jupyter.engine.checkpoints import CheckpointStore
    from codingcode_jupyter.engine.user_dir import checkpoints_dir

    (project / "notes.txt").write_text(f"KEY={SECRET}\n")
    store = CheckpointStore(project)
    assert store.before_change("s1", 1, project / "notes.txt")
    (project / "notes.txt").write_text("edited\n")
    store.after_change("s1", 1, project / "notes.txt")
    (checkpoints_dir(project) / "copy-of-a-secret").write_text(f"KEY={SECRET}\n")
    sandbox = make_sandbox(project, home, backend="landlock")
    try:
        result = await run(sandbox, f"echo made > made.txt && cat made.txt; cat {checkpoints_dir(project)}/copy-of-a-secret")
    finally:
        await sandbox.aclose()
    assert "made" in result.out, result
    assert SECRET not in result.out and not (project / ".codingcode" / "checkpoints").exists()
    assert store.latest() is not None and store.latest().files  # the control: the checkpoint is there
