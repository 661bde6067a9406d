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


async def test_git_grep_options_that_reach_untracked_files_count_every_file(repo: Path) -> None:
    """Only options known to keep git grep on tracked files keep the index's answer: an abbreviation
    (`--untr` is `--untracked` to git) or an option not known counts every file."""
    (repo / "src" / "credentials.json").write_text("{}\n")  # untracked, not ignored
    for control in ("git grep token", "git grep -n -i -e token", "git grep -nie token", "git grep --cached token",
                    "git grep -3 --heading token"):
        assert await _kind(repo, control) == "allow", control
    for command in ("git grep --untr token", "git grep --no-ind token", "git grep --recurse-submodules token",
                    "git grep -nu token", "git grep --untracked --no-exclude-standard token"):
        assert await _kind(repo, command) == "ask", command


async def test_a_planted_git_directory_git_passes_over_is_not_read(repo: Path, tmp_path: Path) -> None:
    """git takes `.git` for a repository only with a HEAD, objects and refs: a bare `.git` holding a
    planted index (empty here) is passed over for the repository above, which tracks the secret."""
    (repo / "config").mkdir()
    (repo / "config" / "secrets.yaml").write_text("token: 1\n")
    _git(repo, "add", "config/secrets.yaml")
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    (other / "a").write_text("x\n")
    _git(other, "add", "a")
    assert await _kind(repo, "git grep token -- src") == "allow"  # control
    (repo / "config" / ".git").mkdir()
    shutil.copy(other / ".git" / "index", repo / "config" / ".git" / "index")
    assert "secrets.yaml" in subprocess.run(["git", "grep", "token"], cwd=repo / "config", capture_output=True,
                                            text=True).stdout  # git reads the top repository's
    for command in ("cd config && git grep token", "git grep token -- config", "git -C config grep token"):
        assert await _kind(repo, command) == "ask", command
    # A `.git` that moves its working tree elsewhere (core.worktree): the index's paths are not relative here.
    shutil.rmtree(repo / "config" / ".git")
    _git(repo / "config", "init", "-q")
    (repo / "config" / "a.txt").write_text("x\n")
    _git(repo / "config", "add", "a.txt")
    assert await _kind(repo, "cd config && git grep token") == "allow"  # control: its own, empty index
    _git(repo / "config", "config", "core.worktree", str(repo))
    assert await _kind(repo, "cd config && git grep token") == "ask"


@pytest.fixture
def committed(repo: Path) -> Path:
    (repo / "config").mkdir()
    (repo / "config" / "secrets.yaml").write_text("token: 1\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@b.test", "commit", "-qm", "x")
    return repo


@pytest.mark.parametrize("command", ["git log -p", "git show HEAD", "git show --oneline HEAD", "git diff HEAD~0 HEAD",
                                     "git format-patch -1 --stdout", "git log --all -p", "git whatchanged -p",
                                     "git log -p --full-diff -- src", "git cat-file -p 0123abcd",
                                     "git show 0123abcd -- src", "git fast-export --all", "git stash show -p",
                                     "git -c alias.x=grep x token -- src", "git clone . /tmp/copy",
                                     "git worktree add /tmp/w", "cd src && git log -p", "git log -p -L1,2:src/app.py",
                                     "git range-diff HEAD~1...HEAD"])
async def test_git_commands_that_print_committed_content_ask_when_a_secret_is_committed(committed: Path,
                                                                                     command: str) -> None:
    assert await _kind(committed, command) == "ask"


@pytest.mark.parametrize("command", ["git log -p", "git show HEAD", "git diff", "git log --oneline -5", "git status",
                                     "git log -p -- src", "git diff HEAD~0 -- src", "git log --stat",
                                     "git cat-file -t HEAD", "git commit -qm x", "cd src && git log -p"])
async def test_the_same_commands_are_allowed_without_committed_secrets(repo: Path, command: str) -> None:
    # Only the ignored .env is named for secrets: git holds none of it.
    assert await _kind(repo, command) == "allow"


async def test_a_committed_secret_removed_from_the_working_tree_still_counts(committed: Path) -> None:
    (committed / "config" / "secrets.yaml").unlink()
    for command in ("git grep --cached token", "git archive HEAD", "git log -p", "git archive HEAD config"):
        assert await _kind(committed, command) == "ask", command
    assert await _kind(committed, "git grep --cached token -- src") == "allow"


@pytest.mark.xfail(strict=True, reason="history is not read: a secret committed once and removed from the index "
                   "since is printed by git log -p, and only the index is read")
async def test_a_secret_only_in_history(committed: Path) -> None:
    _git(committed, "rm", "-q", "config/secrets.yaml")
    _git(committed, "-c", "user.name=a", "-c", "user.email=a@b.test", "commit", "-qm", "y")
    assert await _kind(committed, "git log -p") == "ask"


async def test_a_history_away_from_its_working_tree_is_asked(committed: Path, tmp_path: Path) -> None:
    """A bare copy (pushed to, or copied), or git pointed at another repository: the files are only
    in git's objects, which no rule reads."""
    bare = tmp_path / "bare"
    _git(tmp_path, "clone", "-q", "--bare", str(committed), str(bare))
    empty = tmp_path / "empty"
    empty.mkdir()
    for control in ("git log -p -- src", "timeout 30 git log -p -- src", f"cd {empty} && git log -p"):
        assert await _kind(committed, control) == "allow", control  # git finds no repository in `empty`
    for command in (f"cd {bare} && git log -p", f"git -C {bare} log -p", f"git --git-dir={bare} log -p -- src",
                    f"env GIT_DIR={bare} git log -p -- src",
                    f"git init -q --bare {empty} && git push -q {empty} HEAD && git -C {empty} log -p",
                    f"cd {empty} && git init -q && git pull -q {committed} && git log -p"):
        assert await _kind(committed, command) == "ask", command


def test_an_index_entry_git_would_not_write_is_not_read_for_certain(tmp_path: Path) -> None:
    """git opens an entry's name as it is: a planted `src/../config/secrets.yaml` reads the secret
    under a name the tracked set would not match."""
    repo = _repo(tmp_path)
    data = bytearray((repo / ".git" / "index").read_bytes())
    at = data.index(b"src/app.py")
    assert parse_index(bytes(data)) is not None  # control
    data[at:at + len(b"src/app.py")] = b"src/../app"
    assert parse_index(bytes(data)) is None


async def test_git_diff_of_the_working_tree_without_an_index_prints_nothing(committed: Path) -> None:
    (committed / ".git" / "index").unlink()
    assert await _kind(committed, "git diff") == "allow"  # git reads a missing index as empty: nothing differs
    for command in ("git diff --cached", "git diff HEAD", "git log -p"):
        assert await _kind(committed, command) == "ask", command


async def test_git_diff_of_the_working_tree_asks_only_when_a_committed_secret_differs(committed: Path) -> None:
    """`git diff` prints the tracked files whose working copy differs from the index: a committed
    secret left as it was is not printed (the index's recorded mtime and size say so, as git sees it)."""
    import os
    import time

    secret = committed / "config" / "secrets.yaml"
    # The index must be written after the file's mtime, or git would re-read it ("racily clean").
    past = time.time() - 60
    os.utime(secret, (past, past))
    _git(committed, "add", "config/secrets.yaml")
    (committed / "src" / "app.py").write_text("token = 2\n")
    assert await _kind(committed, "git diff") == "allow"
    assert await _kind(committed, "git diff --stat -p") == "allow"
    assert await _kind(committed, "git diff HEAD") == "ask"  # against a commit: history, not the index
    assert await _kind(committed, "git diff --cached") == "ask"
    assert await _kind(committed, "echo x >> src/app.py; git diff") == "ask"  # the line may change files first
    secret.write_text("token: 2\n")
    assert await _kind(committed, "git diff") == "ask"
    assert "token: 2" in _git(committed, "diff")  # what the card is about: git prints it
    secret.unlink()
    assert await _kind(committed, "git diff") == "ask"  # a deletion prints the whole file


@pytest.mark.parametrize("command", ["git status -v", "git status --verbose", "git status -sv",
                                     "git commit --dry-run -v"])
async def test_a_verbose_status_prints_the_staged_diff(committed: Path, command: str) -> None:
    assert await _kind(committed, command) == "ask"
    assert await _kind(committed, command.replace("-sv", "-s").replace(" -v", "").replace(" --verbose", "")) \
        == "allow"  # control: names only


@pytest.mark.slow
async def test_a_repository_too_large_to_walk_is_judged_from_its_index(repo: Path) -> None:
    """Over 20,000 entries a walk of the disk stops and asks; a git read is judged from the index."""
    import os

    for d in range(205):
        (repo / "big" / f"d{d}").mkdir(parents=True)
        for f in range(100):
            os.close(os.open(repo / "big" / f"d{d}" / f"f{f}.js", os.O_CREAT | os.O_WRONLY, 0o644))
    _git(repo, "add", "big")
    assert await _kind(repo, "grep -r token .") == "ask"  # control: the walk gives up
    for command in ("git diff", "git grep token", "git log -p"):
        assert await _kind(repo, command) == "allow", command
    (repo / "big" / "d7" / "credentials.json").write_text("{}\n")
    _git(repo, "add", "big/d7/credentials.json")
    assert await _kind(repo, "git grep token") == "ask"


@pytest.mark.parametrize(("command", "with_patch"), [
    ("git show -s", "git show"), ("git show --stat", "git show --stat -p"),
    ("git show --name-only HEAD~0", "git show HEAD~0"), ("git show -s --format=%B HEAD", "git show --format=%B HEAD"),
    ("git show --numstat HEAD", "git show --numstat --patch HEAD")])
async def test_git_show_without_its_patch_prints_no_file(committed: Path, command: str, with_patch: str) -> None:
    assert await _kind(committed, command) == "allow"
    assert "token" not in _git(committed, *command.split()[1:])  # what git prints: no line of the secret
    assert "token" in _git(committed, *with_patch.split()[1:])
    assert await _kind(committed, with_patch) == "ask"  # control: the same with its patch
