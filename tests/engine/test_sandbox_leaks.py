"""What a command could read inside the sandbox and must not: system secrets, every dotenv file,
the kernel's environment, the Jupyter connection files and credential stores.

Each leak check comes with a positive control (the same read aimed at something that is not
hidden prints its marker), so a check that reads nothing at all fails instead of passing.
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import CommandSandbox
from codingcode_jupyter.engine.settings import SandboxSettings
from tests.engine.helpers import make_deps
from tests.engine.sandbox_helpers import RUNNING_BACKEND, SECRET, make_sandbox, needs_sandbox, run

pytestmark = needs_sandbox

VISIBLE = "VISIBLE-CONTROL-MARKER-5b21"


# ----- 1. shadow-like system files ---------------------------------------------------------------

SHADOW_LIKE = [
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/passwd-",
    "/etc/security/opasswd", "/etc/sudoers", "/etc/sudoers.d",
]  # fmt: skip


def _readable_on_host(path: str) -> bool:
    # Judged by metadata only: the test never reads a real secret of this machine.
    if not os.access(path, os.R_OK):
        return False
    return (os.path.isdir(path) and bool(os.listdir(path))) or (os.path.isfile(path) and os.path.getsize(path) > 0)


def _probe(paths: list[str]) -> str:
    """A command printing READABLE for each path that has content inside, never the content."""
    checks = [
        f"if [ -d {p} ]; then [ -n \"$(ls -A {p} 2>/dev/null)\" ] && echo READABLE {p}; "
        f"elif [ -s {p} ] && head -c1 {p} >/dev/null 2>&1; then echo READABLE {p}; fi"
        for p in paths
    ]
    return "; ".join(checks)


async def test_every_shadow_like_file_is_masked(sb: CommandSandbox) -> None:
    present = [path for path in SHADOW_LIKE if _readable_on_host(path)]
    if not present:
        pytest.skip("no shadow-like file is readable by this user on the host (run as root to check)")
    result = await run(sb, _probe([*present, "/etc/hostname", "/etc/os-release"]))
    readable = set(result.out.split("READABLE ")) - {""}
    leaked = {line.strip() for line in readable} & set(present)
    assert not leaked, f"readable inside the sandbox: {sorted(leaked)}"
    # Control: unmasked files of the same directory are read by the same probe.
    assert "READABLE /etc/os-release" in result.out or "READABLE /etc/hostname" in result.out


@pytest.mark.skipif(RUNNING_BACKEND != "bwrap", reason="Landlock cannot replace /etc/passwd (said in its limits)")
async def test_etc_passwd_lists_only_the_accounts_a_command_needs(sb: CommandSandbox) -> None:
    host_users = {line.split(":", 1)[0] for line in Path("/etc/passwd").read_text().splitlines() if line}
    result = await run(sb, "cut -d: -f1 /etc/passwd; id -un; ls -ld / | awk '{print $3}'")
    assert result.returncode == 0, result.err
    names = result.out.split()
    inside = set(names[:-2])
    assert inside and inside < host_users | {"nobody"}
    assert len(inside) <= 3, inside
    # The command's own user still resolves, and so does the owner of /.
    assert names[-2] == pwd.getpwuid(os.getuid()).pw_name
    assert names[-1] == "root"


# ----- 2. every dotenv file of the project, wherever it is -----------------------------------------


async def test_env_files_in_any_directory_are_hidden(project: Path, home: Path) -> None:
    hidden = [
        ".env", "node_modules/pkg/.env", ".venv/lib/.env.local", "venv/.env_test", "site-packages/x/.env-prod",
        "__pycache__/.env", ".git/.env", "a/b/c/d/e/.env.production", ".tox/py/.env",
    ]  # fmt: skip
    for rel in hidden:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(f"KEY={SECRET}\n")
    (project / "node_modules" / "pkg" / "config.txt").write_text(f"{VISIBLE}\n")
    (project / "node_modules" / "pkg" / ".env.example").write_text(f"EXAMPLE={VISIBLE}\n")
    (project / "node_modules" / "pkg" / "env.py").write_text(f"{VISIBLE}-envpy\n")
    # .envrc is dotenv-like since issue 33 (direnv's script is where people keep tokens): hidden too.
    (project / "node_modules" / "pkg" / ".envrc").write_text(f"KEY={SECRET}\n")
    sandbox = CommandSandbox.create(project, SandboxSettings(), home=home, allowed_env_files=[".env.example"])
    try:
        result = await run(sandbox, "grep -r . . ; cat " + " ".join(hidden))
        assert SECRET not in result.out
        # Controls: the same grep prints a plain file, an allowed dotenv file, and env.py (code, not dotenv).
        assert f"./node_modules/pkg/config.txt:{VISIBLE}" in result.out
        assert f"EXAMPLE={VISIBLE}" in result.out
        assert f"{VISIBLE}-envpy" in result.out
    finally:
        await sandbox.aclose()


async def test_env_file_added_deep_in_a_cached_tree_is_hidden_next_time(project: Path, home: Path) -> None:
    (project / "node_modules" / "a" / "b").mkdir(parents=True)
    sandbox = make_sandbox(project, home)
    try:
        assert (await run(sandbox, "ls -R node_modules")).returncode == 0
        (project / "node_modules" / "a" / "b" / ".env").write_text(f"KEY={SECRET}\n")
        result = await run(sandbox, "cat node_modules/a/b/.env; cat node_modules/a/b/.env >/dev/null && echo opened")
        assert SECRET not in result.out
        (project / "node_modules" / "a" / "b" / "plain").write_text(VISIBLE)
        assert VISIBLE in (await run(sandbox, "cat node_modules/a/b/plain")).out
    finally:
        await sandbox.aclose()


# ----- 3. the environment ------------------------------------------------------------------------

_LEAKY_ENV = {
    "ANTHROPIC_API_KEY": f"sk-ant-{SECRET}",
    "DATABASE_URL": f"postgres://user:{SECRET}@db.internal/app",
    "GITHUB_PAT": f"ghp_{SECRET}",
    "OPENAI_KEY": f"sk-{SECRET}",
    "MY_APP_SETTING": SECRET,
}
# `cat` opens each file itself: an environ file opened by the shell before exec reads empty.
_EVERY_ENVIRON = (
    "for f in /proc/1/environ /proc/self/environ /proc/[0-9]*/environ; do "
    'echo "== $f $(cat ${f%/environ}/comm)"; cat "$f" | tr "\\0" "\\n"; done'
)


async def _environs(sandbox: CommandSandbox) -> dict[str, str]:
    """Each /proc/PID/environ readable inside (and the command's own), by "path command-name"."""
    result = await run(sandbox, _EVERY_ENVIRON)
    assert result.returncode == 0, result.err
    sections = result.out.split("== ")[1:]
    return {section.split("\n", 1)[0]: section.split("\n", 1)[1] for section in sections}


def _inside(environs: dict[str, str]) -> dict[str, str]:
    """The environ files of the sandbox's own processes. Under Landlock there is no PID namespace:
    every process of the machine is listed, and the environ of each outside the sandbox reads
    empty (Landlock refuses ptrace-like access) — the test's own process among them, which holds
    every leaky variable (a control that the refusal, not an absent process, kept them out)."""
    if RUNNING_BACKEND == "bwrap":
        return environs
    own = [key for key in environs if key.startswith(f"/proc/{os.getpid()}/environ ")]
    assert own and not any(environs[key] for key in own), own
    return {key: text for key, text in environs.items() if text}


@pytest.fixture
def leaky_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in _LEAKY_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("CODINGCODE_PASSED", VISIBLE)


@pytest.mark.usefixtures("leaky_env")
async def test_only_allowlisted_variables_reach_any_process_inside(project: Path, home: Path) -> None:
    sandbox = make_sandbox(project, home, env=["CODINGCODE_PASSED"])
    try:
        environs = await _environs(sandbox)
    finally:
        await sandbox.aclose()
    for path, text in environs.items():
        assert SECRET not in text, path
        assert not any(f"{name}=" in text for name in _LEAKY_ENV), path
    environs = _inside(environs)
    # Controls: bwrap's init (PID 1) and the command were read, and they hold the allowlist.
    first = "/proc/1/environ bwrap" if RUNNING_BACKEND == "bwrap" else "/proc/self/environ cat"
    assert set(environs) >= {first, "/proc/self/environ cat"}, sorted(environs)
    for text in environs.values():
        assert f"CODINGCODE_PASSED={VISIBLE}" in text
        assert "LANG=C.UTF-8" in text and f"PATH={os.environ['PATH']}" in text


@pytest.mark.slow
@pytest.mark.usefixtures("leaky_env")
async def test_environment_of_the_proxy_forwarder_is_clean_too(project: Path, home: Path) -> None:
    sandbox = make_sandbox(project, home, env=["CODINGCODE_PASSED"], network={"allowedDomains": ["localhost"]})
    try:
        environs = await _environs(sandbox)
    finally:
        await sandbox.aclose()
    assert all(SECRET not in text for text in environs.values())
    environs = _inside(environs)
    # bwrap's init, the shell and the forwarder's relay (python) were all read.
    names = {key.split()[1] for key in environs}
    assert ({"bwrap", "bash"} if RUNNING_BACKEND == "bwrap" else {"bash"}) <= names and any(name.startswith("python") for name in names), sorted(environs)
    assert all(f"CODINGCODE_PASSED={VISIBLE}" in text for text in environs.values())


@pytest.mark.usefixtures("leaky_env")
async def test_execute_command_sets_pager_and_colour_inside(project: Path, home: Path) -> None:
    from codingcode_jupyter.engine.tools.base import ToolContext
    from codingcode_jupyter.engine.tools.shell import execute_command_tool

    sandbox = make_sandbox(project, home)
    try:
        ctx = ToolContext.standalone(project, session_id="s", turn_id=1, deps=make_deps(project, sandbox=sandbox))
        result = await execute_command_tool().run({"command": "env"}, ctx)
        text = result.text_content
        assert "PAGER=cat" in text and "GIT_PAGER=cat" in text and "NO_COLOR=1" in text and "TERM=" in text
        assert SECRET not in text
    finally:
        await sandbox.aclose()


@pytest.mark.parametrize("entry", ["*", "BAD-NAME", "A*B", ""])
def test_bad_env_allowlist_entries_fail_closed(tmp_path: Path, entry: str) -> None:
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings.model_validate({"env": [entry]}))
    assert not sandbox.active
    assert "sandbox.env" in (sandbox.unavailable_reason or "")


# ----- 5. the Jupyter runtime directory and credential stores -------------------------------------

CREDENTIAL_STORES = [
    ".local/share/jupyter/runtime/kernel-4242.json", ".netrc", ".docker/config.json", ".kube/config",
    ".git-credentials", ".config/gh/hosts.yml", ".pypirc", ".npmrc", ".config/git/credentials",
    ".cargo/credentials.toml", ".pgpass", ".config/containers/auth.json",
]  # fmt: skip


async def test_jupyter_runtime_and_credential_stores_are_hidden(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for rel in CREDENTIAL_STORES:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f'{{"key": "{SECRET}"}}\n')
    elsewhere = home.parent / "runtime-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kernel-1.json").write_text(f'{{"key": "{SECRET}"}}\n')
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(elsewhere))
    # The home shows only its allowlist (caches, toolchains): a package cache is the control.
    (home / ".cache" / "pip").mkdir(parents=True)
    (home / ".cache" / "pip" / "entry").write_text(VISIBLE)
    sandbox = make_sandbox(project, home)
    try:
        paths = " ".join(str(home / rel) for rel in CREDENTIAL_STORES)
        result = await run(sandbox, f"cat {paths} {elsewhere}/kernel-1.json; ls -A {elsewhere}; grep -r . {home}; "
                                    f"cat {home}/.cache/pip/entry")
        assert SECRET not in result.out
        assert "kernel-" not in result.out
        assert VISIBLE in result.out  # control: the allowlisted part of the home directory is readable
    finally:
        await sandbox.aclose()


async def test_masks_tolerate_missing_paths(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty_home = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="codingcode-empty-home-"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "missing" / "runtime"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "missing" / "xdg"))
    sandbox = make_sandbox(project, empty_home)
    try:
        result = await run(sandbox, "echo ran")
        assert result.returncode == 0 and result.out == "ran\n", result.err
        assert sorted(os.listdir(empty_home)) == []  # nothing was created to mount over
    finally:
        await sandbox.aclose()
        shutil.rmtree(empty_home, ignore_errors=True)
