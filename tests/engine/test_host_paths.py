"""The one table of host-executed paths (engine/host_paths.py), as the approval layer and the sandbox read it.

Each attack has a control: the same write aimed at ordinary project code is allowed unasked
(approval) or succeeds (sandbox), so a check that refuses everything fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.host_paths import HOST_PATHS, git_config_program, host_executed
from tests.engine.approval_helpers import evaluate, make_project
from tests.engine.sandbox_helpers import make_home, make_sandbox, needs_bwrap, run

HOST_EXECUTED = [
    ".git/modules/x/config", ".git/modules/x/hooks/pre-commit", ".git/worktrees/w/config.worktree",
    "sub/.git/config", "sub/.git/hooks/post-checkout", "sub/.git", "a/b/c/.git/info/attributes",
    "vendor/lib/.hg/hgrc", ".husky/pre-commit", "venvs/x/pyvenv.cfg", "pkg/evil.pth", "sitecustomize.py",
    "lib/usercustomize.py", "ipython_config.py", "sub/ipython_kernel_config.py", "jupyter_server_config.py",
    "jupyter_notebook_config.json", ".ipython/profile_default/startup/00.py", ".jupyter/x.py",
    "nb/profile_dev/startup/a.py", ".pre-commit-config.yaml", "sub/.pre-commit-config.yaml", ".envrc",
    "deep/er/.envrc", ".vscode/tasks.json", ".vscode/settings.json", "app/.vscode/launch.json",
    ".idea/workspace.xml", "proj.code-workspace",
]
ORDINARY = ["conftest.py", "setup.py", "src/app.py", "tests/test_x.py", ".gitignore", ".gitmodules",
            "docs/git.md", "src/site.py", "notebook.ipynb", "pyproject.toml", "Makefile", "src/customize.py",
            "envrc.txt", "vscode/tasks.json"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.mark.parametrize("rel", HOST_EXECUTED)
def test_table_matches_at_any_depth(project: Path, rel: str) -> None:
    assert host_executed(project / rel, project, project.parent / "home") is not None


@pytest.mark.parametrize("rel", ORDINARY)
def test_table_leaves_ordinary_code_alone(project: Path, rel: str) -> None:
    assert host_executed(project / rel, project, project.parent / "home") is None


def test_a_virtualenv_is_found_by_its_marker(project: Path) -> None:
    env = project / "tools" / "env"
    (env / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    target = env / "lib" / "python3.11" / "site-packages" / "x.py"
    assert host_executed(target, project) is None  # control: no pyvenv.cfg, no virtualenv
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    hit = host_executed(target, project)
    assert hit is not None and "virtualenv" in hit.what
    assert host_executed(env / "bin" / "activate", project) is not None


def test_venv_shaped_paths_are_host_executed_before_the_venv_exists(project: Path) -> None:
    # No pyvenv.cfg yet: a command could write the activate script or a kernel spec first.
    for rel in (".venv/bin/activate", ".venv/bin/activate.fish", "venv/bin/activate_this.py",
                ".venv/share/jupyter/kernels/python3/kernel.json"):
        hit = host_executed(project / rel, project)
        assert hit is not None and ("activate" in hit.what or "kernel spec" in hit.what), rel
    # Controls: the rest of a venv-shaped tree without its marker is ordinary, as is a kernel's logo.
    for rel in (".venv/bin/tool", ".venv/share/jupyter/kernels/python3/logo-64x64.png", "src/activate.py"):
        assert host_executed(project / rel, project) is None, rel


def test_home_rows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    for rel in (".bashrc", ".config/autostart/x.desktop", ".config/systemd/user/x.service", ".local/bin/git",
                ".local/lib/python3.11/site-packages/evil.pth", ".ipython/profile_default/startup/x.py"):
        assert host_executed(home / rel, project, home) is not None, rel
    for rel in (".cache/pip/x", ".local/lib/python3.11/site-packages/pkg/mod.py", "notes.txt"):
        assert host_executed(home / rel, project, home) is None, rel


def test_every_row_has_a_pattern_and_a_reason() -> None:
    assert len({(row.root, row.pattern) for row in HOST_PATHS}) == len(HOST_PATHS)
    assert all(row.what and row.pattern for row in HOST_PATHS)


@pytest.mark.parametrize("words,key", [
    (["core.fsmonitor", "touch /tmp/x"], "core.fsmonitor"), (["--global", "alias.x", "!sh"], "alias.x"),
    (["credential.helper", "store"], "credential.helper"), (["-f", ".git/modules/x/config", "core.pager", "sh"],
                                                            "core.pager"),
    (["set", "core.hooksPath", "h"], "core.hooksPath"), (["--add", "filter.x.smudge", "sh"], "filter.x.smudge"),
    (["user.name", "A"], None), (["--get", "core.pager"], None), (["-l"], None), (["core.autocrlf", "true"], None),
])
def test_git_config_program(words: list[str], key: str | None) -> None:
    assert git_config_program(words) == key


# ----- the approval layer: asked in every mode, bypass included; "Always" saves nothing -------------

@pytest.mark.parametrize("rel", ["sub/.git/config", ".git/modules/x/hooks/pre-commit", ".envrc", ".vscode/tasks.json",
                                 ".pre-commit-config.yaml", "pkg/evil.pth", "sitecustomize.py"])
@pytest.mark.parametrize("mode", ["bypass", "acceptEdits"])
async def test_writing_a_host_executed_file_is_asked(project: Path, rel: str, mode: str) -> None:
    result = await evaluate(project, "write_file", {"path": rel, "content": "x"}, mode=mode)
    assert result.kind == "ask" and result.forced, result.model_dump()
    assert result.allow_choices == []
    control = await evaluate(project, "write_file", {"path": "conftest.py", "content": "x"}, mode=mode)
    assert control.kind == "allow", control.model_dump()


@pytest.mark.parametrize("command", ["echo 'x' > sub/.git/hooks/pre-commit", "git -C sub config core.fsmonitor 'sh x'",
                                     "cp evil.pth .venv/lib/python3.11/site-packages/", "tee .envrc < x",
                                     "git config --global alias.st '!sh -c id'"])
async def test_commands_writing_host_executed_files_are_asked_in_bypass(project: Path, command: str) -> None:
    (project / ".venv").mkdir()
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    result = await evaluate(project, "execute_command", {"command": command}, mode="bypass")
    assert result.kind == "ask" and result.forced, result.model_dump()
    control = await evaluate(project, "execute_command", {"command": "echo x > src/notes.txt"}, mode="bypass")
    assert control.kind in ("allow",) or control.layer == "sandbox", control.model_dump()


# ----- the sandbox: the same table, bound read-only -------------------------------------------------

def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30)


@needs_bwrap
async def test_sandboxed_command_cannot_plant_what_the_host_runs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    home = make_home(tmp_path)
    _git("init", "-q", "sub", cwd=project)
    (project / "sub" / "f.txt").write_text("x")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True, timeout=120)
    site = next((project / ".venv" / "lib").glob("python*/site-packages"))
    marker = tmp_path / "MARKER"
    sandbox = make_sandbox(project, home)
    attack = (f"git -C sub config core.fsmonitor 'touch {marker}; false'; "
              f"printf '#!/bin/sh\\ntouch {marker}\\n' > sub/.git/hooks/post-checkout; "
              f"echo 'import os; open(\"{marker}\", \"w\")' > {site}/zz_evil.pth; "
              f"echo 'open(\"{marker}\", \"w\")' > {site}/sitecustomize.py; "
              f"echo ok > src/control.txt")
    result = await run(sandbox, attack)
    assert (project / "src" / "control.txt").read_text() == "ok\n", result  # control: the project is writable
    # Triggered the way the host would: git in the nested repository, the virtualenv's Python starting.
    _git("status", cwd=project / "sub")
    subprocess.run([str(project / ".venv" / "bin" / "python"), "-c", "pass"], timeout=60)
    assert not marker.exists(), result
    assert not (site / "zz_evil.pth").exists()
    await sandbox.aclose()
    # Positive control: the same plants written on the host do run when triggered.
    _git("config", "core.fsmonitor", f"touch {marker}; false", cwd=project / "sub")
    _git("status", cwd=project / "sub")
    assert marker.exists()
    marker.unlink()
    (site / "zz_evil.pth").write_text(f'import os; open("{marker}", "w")\n')
    subprocess.run([str(project / ".venv" / "bin" / "python"), "-c", "pass"], timeout=60)
    assert marker.exists()


# ----- the hooks directory a repository's core.hooksPath names (found by attack33d) ----------------

@pytest.mark.parametrize("config, hooks", [
    ("[core]\n\thooksPath = .githooks\n", ".githooks"),
    ("[Core]\n\tHOOKSPATH = \"tools/git hooks\" # shared\n", "tools/git hooks"),
    ("[core] hooksPath = a\n[core]\n\thookspath = b ; the last wins\n", "b"),
])
def test_a_hooks_path_makes_its_directory_host_executed(tmp_path, config: str, hooks: str) -> None:
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text(config)
    assert host_executed(project / hooks / "pre-commit", project, tmp_path / "home") is not None
    assert host_executed(project / "src" / "pre-commit", project, tmp_path / "home") is None  # control


@pytest.mark.parametrize("config", ["[core]\n\tbare = false\n", "[alias]\n\thooksPath = .githooks\n",
                                    "[core]\n\t# hooksPath = .githooks\n", ""])
def test_no_hooks_path_leaves_the_directory_ordinary(tmp_path, config: str) -> None:
    project = tmp_path / "p"
    (project / "sub" / ".git").mkdir(parents=True)
    (project / "sub" / ".git" / "config").write_text(config)
    assert host_executed(project / "sub" / ".githooks" / "pre-commit", project, tmp_path / "home") is None
