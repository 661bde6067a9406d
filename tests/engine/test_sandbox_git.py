"""git works in the sandbox, what git runs does not change, and the sandbox leaves nothing in the project.

In each backend, as execute_command runs a command (compared after it, nobody to ask): git writes
its objects, refs, index and logs (add, commit, checkout -b, reset, a fresh `git init`), while a
hook, the configuration, info/attributes or commondir written by a command are held read-only
(bubblewrap) or put back after it (Landlock). The project shows nothing the sandbox made (no empty
.mcp.json, no .codingcode/, no .git placeholder), inside or after. Controls: the attacks are the
same commands aimed at ordinary files, which stay written; the strict policy (a caller that
compares nothing) still shows its placeholders, so the artefact check can fail.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import landlock
from tests.engine.sandbox_helpers import BWRAP_PROBLEM, SECRET, make_sandbox, run

BACKENDS = [
    pytest.param("landlock", marks=pytest.mark.skipif(landlock.landlock_abi() < 1, reason="no Landlock here")),
    pytest.param("bwrap", marks=pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bubblewrap: {BWRAP_PROBLEM}")),
]
GIT = "git -c user.name=t -c user.email=t@example.com"


@pytest.fixture(params=BACKENDS)
def backend(request, home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HOME", str(home))  # git reads $HOME/.gitconfig: the sandbox's home, as in a session
    return request.param


def _repo(project: Path) -> str:
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "app.py").write_text("print('hi')\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return (project / ".git" / "config").read_text()


async def test_git_writes_what_git_writes(backend: str, project: Path, home: Path) -> None:
    _repo(project)
    sandbox = make_sandbox(project, home, backend=backend)
    try:
        result = await run(sandbox, f"{GIT} add src && {GIT} commit -qm one && {GIT} checkout -qb feature && "
                                    f"echo more >> src/app.py && {GIT} commit -qam two && {GIT} reset -q --hard HEAD~1 && "
                                    f"{GIT} log --oneline | wc -l && {GIT} status --short | wc -l")
    finally:
        await sandbox.aclose()
    assert result.returncode == 0, result
    assert result.out.split() == ["1", "0"] and result.notes == []
    assert "feature" in subprocess.run(["git", "-C", str(project), "branch"], capture_output=True, text=True).stdout


async def test_what_git_runs_stays_as_it_was(backend: str, project: Path, home: Path, tmp_path: Path) -> None:
    config = _repo(project)
    (project / "build").mkdir()
    sandbox = make_sandbox(project, home, backend=backend)
    attacks = ["echo evil > .git/hooks/pre-commit", "git config core.fsmonitor evil",
               "echo '* filter=evil' > .git/info/attributes", f"echo {tmp_path} > .git/commondir",
               "mv .git/hooks .git/h && mkdir .git/hooks && echo evil > .git/hooks/post-checkout"]
    try:
        for attack in attacks:
            await run(sandbox, attack)
            # Control: the same write aimed at an ordinary file of the project stays.
            control = attack.replace(".git/", "build/").replace("git config", "git config -f build/cfg")
            done = await run(sandbox, f"mkdir -p build/hooks build/info && {control}")
            assert done.returncode == 0, (control, done)
    finally:
        await sandbox.aclose()
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert not (project / ".git" / "hooks" / "post-checkout").exists()
    assert (project / ".git" / "config").read_text() == config
    assert not (project / ".git" / "info" / "attributes").exists() and not (project / ".git" / "commondir").exists()
    assert (project / "build" / "h" / "pre-commit").read_text() == "evil\n"
    assert (project / "build" / "hooks" / "post-checkout").read_text() == "evil\n"
    assert "fsmonitor = evil" in (project / "build" / "cfg").read_text()


async def test_git_init_is_ordinary_work_and_a_planted_hook_is_not(backend: str, project: Path, home: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hi')\n")
    sandbox = make_sandbox(project, home, backend=backend)
    try:
        fresh = await run(sandbox, f"git init -q . && {GIT} add . && {GIT} commit -qm first && {GIT} log --oneline | wc -l")
        nested = await run(sandbox, "git init -q src/inner && echo 'echo PLANTED' > src/inner/.git/hooks/post-commit && "
                                    "chmod +x src/inner/.git/hooks/post-commit")
    finally:
        await sandbox.aclose()
    assert fresh.returncode == 0 and fresh.out.strip() == "1" and fresh.notes == [], fresh
    assert (project / ".git" / "HEAD").exists()
    # Control: the same `git init` with a hook written into it is put to the person (nobody here: moved aside).
    assert not (project / "src" / "inner" / ".git").exists() and "moved out" in nested.notes[0]


async def test_nothing_of_the_sandbox_shows_in_the_project(backend: str, project: Path, home: Path) -> None:
    (project / "src").mkdir()
    sandbox = make_sandbox(project, home, backend=backend)
    try:
        inside = await run(sandbox, "ls -A")
        strict = await run(sandbox, "ls -A", compared=False)
    finally:
        await sandbox.aclose()
    assert inside.out.split() == ["src"], inside
    assert sorted(p.name for p in project.iterdir()) == ["src"]
    if backend == "bwrap":
        # Control: a caller that compares nothing keeps the placeholders that hold .git and .mcp.json.
        assert {".git", ".mcp.json"} <= set(strict.out.split()), strict


async def test_a_hidden_file_is_no_device_and_a_recursive_read_goes_on(project: Path, home: Path) -> None:
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"no bubblewrap: {BWRAP_PROBLEM}")
    (project / ".env").write_text(f"KEY={SECRET}\n")
    (project / "notes.txt").write_text("KEY=visible\n")
    sandbox = make_sandbox(project, home, backend="bwrap")
    try:
        result = await run(sandbox, "test -c .env && echo DEVICE; grep -r KEY .; echo rc=$?")
    finally:
        await sandbox.aclose()
    assert SECRET not in result.out and "DEVICE" not in result.out
    # Control: grep did read the tree (it found the ordinary file) and ended without an error.
    assert "./notes.txt:KEY=visible" in result.out and "rc=0" in result.out and result.err == "", result
