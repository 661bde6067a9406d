"""A command's plan (bwrap's mounts, Landlock's rules) is reused only while nothing it was built from
changed: a dotenv file, a host-executed file or a secret made between two commands reaches the
second command's plan. And execute_command's bwrap start (no launcher) keeps the launcher's
environment and filter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import CommandSandbox, landlock
from tests.engine.sandbox_helpers import BWRAP_PROBLEM, SECRET, make_home, make_sandbox, run

BACKENDS = [
    pytest.param("bwrap", marks=pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bubblewrap: {BWRAP_PROBLEM}")),
    pytest.param("landlock", marks=pytest.mark.skipif(landlock.landlock_abi() < 1, reason="no Landlock")),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "deep" / "a.txt").write_text("a\n")
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_home(tmp_path)


@pytest.fixture(params=BACKENDS)
async def box(request: pytest.FixtureRequest, project: Path, home: Path):
    sandbox = make_sandbox(project, home, backend=request.param)
    assert sandbox.active, sandbox.unavailable_reason
    yield sandbox
    await sandbox.aclose()


def _plan(sandbox: CommandSandbox) -> object:
    return sandbox._plans.get(sandbox.backend or "")


async def test_unchanged_project_reuses_the_plan(box: CommandSandbox) -> None:
    assert (await run(box, "cat src/deep/a.txt")).out == "a\n"
    first = _plan(box)
    assert first is not None
    assert (await run(box, "true")).returncode == 0
    assert _plan(box) is first  # nothing changed: not built again


async def test_dotenv_made_after_a_command_is_hidden_from_the_next(box: CommandSandbox, project: Path) -> None:
    assert (await run(box, "true")).returncode == 0
    (project / "src" / "deep" / ".env").write_text(f"KEY={SECRET}\n")
    result = await run(box, "cat src/deep/.env")
    assert SECRET not in result.out


async def test_dotenv_made_by_a_command_is_hidden_from_the_next(box: CommandSandbox) -> None:
    assert (await run(box, f"echo KEY={SECRET} > src/deep/.env.local")).returncode == 0
    assert SECRET not in (await run(box, "cat src/deep/.env.local")).out


async def test_renamed_directory_with_a_dotenv_is_still_hidden(box: CommandSandbox, project: Path) -> None:
    (project / "src" / "deep" / ".env").write_text(f"KEY={SECRET}\n")
    assert SECRET not in (await run(box, "cat src/deep/.env")).out
    os.rename(project / "src" / "deep", project / "src" / "moved")
    assert SECRET not in (await run(box, "cat src/moved/.env")).out


async def test_secret_made_in_the_home_reaches_the_next_plan(box: CommandSandbox, home: Path, project: Path) -> None:
    # A credential store that did not exist when the first plan was built: hidden from the second.
    (project / "link").symlink_to(home / ".aws")
    assert (await run(box, "true")).returncode == 0
    (home / ".aws").mkdir(exist_ok=True)
    (home / ".aws" / "credentials").write_text(SECRET)
    assert SECRET not in (await run(box, "cat link/credentials")).out


async def test_host_executed_file_made_between_commands_is_protected(box: CommandSandbox, project: Path) -> None:
    assert (await run(box, "true")).returncode == 0
    (project / ".envrc").write_text("echo person\n")
    # Uncompared (as an MCP server): what the host runs is held read-only by the plan itself.
    result = await run(box, "echo agent >> .envrc", compared=False)
    assert result.returncode != 0
    assert (project / ".envrc").read_text() == "echo person\n"


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bubblewrap: {BWRAP_PROBLEM}")
async def test_bwrap_spawn_filters_the_environment_and_closes_its_descriptors(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODINGCODE_TEST_TOKEN", SECRET)
    sandbox = make_sandbox(project, home, backend="bwrap")
    try:
        # The walk's inotify descriptors are the sandbox's, for its life (sandbox/dir_watch.py): made first.
        sandbox.project_scan.env_files()
        before = set(os.listdir("/proc/self/fd"))
        spawn = sandbox.spawn_for("cat /proc/1/environ | tr '\\0' '\\n'; env", project, dict(os.environ))
        assert "CODINGCODE_TEST_TOKEN" not in (spawn.env or {})
        assert "python" not in os.path.basename(spawn.argv[0])
        spawn.close()
        assert set(os.listdir("/proc/self/fd")) == before
        result = await run(sandbox, "cat /proc/1/environ | tr '\\0' '\\n'; env; echo seccomp=$(grep Seccomp: /proc/self/status)")
        assert SECRET not in result.out and "CODINGCODE_TEST_TOKEN" not in result.out
        assert "Seccomp:\t2" in result.out or "seccomp=Seccomp: 2" in result.out
    finally:
        await sandbox.aclose()


async def test_git_config_rewritten_in_place_builds_the_plan_again(box: CommandSandbox, project: Path) -> None:
    # core.hooksPath names what git runs; writing the file in place leaves its directory's stamp alone.
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    config = project / ".git" / "config"
    config.write_text("[core]\n\tbare = false\n")
    assert (await run(box, "true")).returncode == 0
    first = _plan(box)
    with open(config, "a", encoding="utf-8") as handle:
        handle.write("\thooksPath = .githooks\n")
    assert (await run(box, "true")).returncode == 0
    assert _plan(box) is not first
