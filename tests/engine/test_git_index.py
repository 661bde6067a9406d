"""git's index read without running git (engine/git_index.py), and what `git grep` / `git archive`
are then asked about: a file named for secrets that git tracks is read by them, an ignored one is not.

The indexes are written by the real git, in each format it writes (versions 2, 3 and 4, SHA-1 and
SHA-256), and what the reader finds is compared with `git ls-files`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codingcode_jupyter.engine.git_index import parse_index, tracked_files
from tests.engine.test_guard_corpus import judge

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo), "PATH": "/usr/bin:/bin"}).stdout


def _repo(root: Path, *init: str) -> Path:
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", *init)
    files = {".gitignore": ".env\n", ".env": "TOKEN=1\n", "src/app.py": "token = 1\n",
             "config/secrets.yaml": "token: 1\n", "docs/" + "x" * 200 + ".md": "long name\n",
             "ünï.txt": "token\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", ".")
    return repo


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_the_index_lists_what_git_lists(tmp_path: Path, version: str) -> None:
    repo = _repo(tmp_path)
    if version != "2":  # an extended-flags entry, which version 2 cannot hold
        (repo / "later.txt").write_text("x\n")
        _git(repo, "add", "--intent-to-add", "later.txt")
    _git(repo, "update-index", "--index-version", version)
    assert (repo / ".git" / "index").read_bytes()[4:8] == int(version).to_bytes(4, "big")
    listed = set(_git(repo, "-c", "core.quotePath=false", "ls-files").splitlines())
    found = tracked_files(repo / "src")
    assert found is not None and set(found.paths) == listed, (sorted(found.paths), sorted(listed))
    assert ".env" not in found.paths and "config/secrets.yaml" in found.paths


def test_a_sha256_repository(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "--object-format=sha256")
    found = tracked_files(repo)
    assert found is not None and found.paths == frozenset(_git(repo, "-c", "core.quotePath=false", "ls-files")
                                                          .splitlines())


def test_what_cannot_be_read_for_certain_is_none(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    data = (repo / ".git" / "index").read_bytes()
    assert parse_index(data) is not None  # control
    assert parse_index(data[:-60]) is None  # truncated
    assert parse_index(b"XXXX" + data[4:]) is None
    _git(repo, "update-index", "--split-index")  # entries kept in a shared file
    assert tracked_files(repo) is None
    assert tracked_files(tmp_path / "elsewhere") is None  # no repository


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    for rel, text in {".gitignore": ".env\n", ".env": "TOKEN=1\n", "src/app.py": "token = 1\n"}.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    _git(project, "add", ".")
    return project


async def _kind(project: Path, command: str) -> str:
    verdict = await judge(project, project.parent / "home", "execute_command", {"command": command}, "bypass")
    return str(verdict.kind)


@pytest.mark.parametrize("command", ["git grep token", "git grep -n -e token", "git -C src grep token",
                                     "git grep token -- '*.py'"])
async def test_git_grep_asks_when_it_reads_a_tracked_secret_and_not_for_an_ignored_one(repo: Path,
                                                                                       command: str) -> None:
    assert await _kind(repo, command) == "allow"  # control: only the ignored .env is named for secrets
    (repo / "src" / "credentials.json").write_text("{}\n")
    assert await _kind(repo, command) == "allow"  # not tracked yet: git grep does not read it
    _git(repo, "add", "src/credentials.json")
    assert await _kind(repo, command) == "ask"


async def test_git_grep_counts_every_file_when_the_index_it_reads_may_not_be_this_one(repo: Path) -> None:
    """What the index says now holds only if nothing on the line can change it, and git reads this one."""
    (repo / ".gitignore").write_text(".env\nsrc/credentials.json\n")
    (repo / "src" / "credentials.json").write_text("{}\n")
    for control in ("git grep token", "git grep token 2>/dev/null", "git grep token | head -5",
                    "cd src && git grep -n token"):
        assert await _kind(repo, control) == "allow", control
    for command in ("cd src && git init -q && git add . && git grep token",  # a new index, made on the line
                    "export GIT_INDEX_FILE=/tmp/i; git grep token", "GIT_INDEX_FILE=/tmp/i git grep token",
                    "env GIT_DIR=/tmp/x/.git git grep token", "git --git-dir=/tmp/x/.git grep token",
                    "git --work-tree=. grep token"):
        assert await _kind(repo, command) == "ask", command


async def test_git_grep_outside_the_tracked_files_counts_every_file(repo: Path) -> None:
    # --untracked / --no-index read files git does not track; a revision's tree is not read here.
    for command in ("git grep --untracked token", "git grep --no-index token", "git grep token HEAD"):
        assert await _kind(repo, command) == "ask", command
    assert await _kind(repo, "git grep token -- src") == "allow"


async def test_git_archive_reads_the_tree_it_is_run_in(repo: Path) -> None:
    assert await _kind(repo, "git archive HEAD src") == "allow"
    assert await _kind(repo, "git archive HEAD") == "ask"
    assert await _kind(repo, "cd src && git archive HEAD") == "allow"  # git archives the directory it runs in
    assert await _kind(repo, "cd src && git archive HEAD -- ':/'") == "ask"  # the repository's top
