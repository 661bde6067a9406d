"""Whole-project snapshots in a shadow git repository, so undo covers what any tool changed.

Before the first call of a turn that can change files (a command, run_python, a custom or
MCP tool that is not read-only, a file edit) the project's files are committed to a git
repository of our own — ``shadow.git`` among the checkpoints (outside the project), never the project's own
``.git`` — and again when the turn ends. Undo compares the two trees: files the turn
created are removed, files it changed or deleted come back as they were. A file that
differs now from what the turn left was changed since (by the person, a later command) and
is not overwritten without ``force``.

What is left out, and so what undo cannot restore: what the project's ``.gitignore``
ignores, ``.git/`` and ``.codingcode/``, dotenv files (secrets never leave their file), files
over the size cap, the contents of nested git repositories. Git runs with no user or system
configuration, no hooks and no fsmonitor, so nothing of the person's or the project's git
setup runs on our behalf.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .own_dir import keep_out_of_git
from .secret_files import is_env_file
from .user_dir import checkpoints_dir

__all__ = ["ShadowRepo", "TreeChange", "SnapshotError", "MAX_FILE_BYTES"]

MAX_FILE_BYTES = 5 * 1024 * 1024
_EXCLUDES = ["/.git/", "/.codingcode/", ".env", ".env.*", ".env-*", ".env_*"]
ChangeKind = Literal["added", "modified", "deleted"]


class SnapshotError(Exception):
    """A snapshot could not be taken or read; the message says why."""


@dataclass(frozen=True)
class TreeChange:
    """One file a turn changed, between the tree before it and the tree it left."""

    path: str
    kind: ChangeKind


@dataclass
class ShadowRepo:
    """The project's shadow repository (created on first use)."""

    project: Path
    max_file_bytes: int = MAX_FILE_BYTES
    git: str | None = field(default_factory=lambda: shutil.which("git"))
    # The checkpoints' folder it lives in (:func:`~.user_dir.checkpoints_dir` unless given).
    checkpoints: Path | None = None

    def __post_init__(self) -> None:
        self.project = Path(os.path.realpath(self.project))
        self.git_dir = (self.checkpoints or checkpoints_dir(self.project)) / "shadow.git"

    @property
    def available(self) -> bool:
        return self.git is not None

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update({"GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.project), "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "codingcode", "GIT_AUTHOR_EMAIL": "codingcode@localhost",
                    "GIT_COMMITTER_NAME": "codingcode", "GIT_COMMITTER_EMAIL": "codingcode@localhost", "LC_ALL": "C"})
        return env

    def _run(self, *args: str, input: bytes | None = None, check: bool = True, repo: bool = True) -> bytes:
        if self.git is None:
            raise SnapshotError("git is not installed, so changes made by commands cannot be snapshotted")
        command = [self.git, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.autocrlf=false",
                   "-c", "core.quotepath=false", *args]
        env = self._env()
        if not repo:
            env.pop("GIT_DIR"), env.pop("GIT_WORK_TREE")
        done = subprocess.run(command, cwd=self.project, env=env, input=input, capture_output=True, timeout=120)
        if check and done.returncode != 0:
            raise SnapshotError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()[:300]}")
        return done.stdout

    def _ensure(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        keep_out_of_git(self.git_dir)
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        self._run("init", "--quiet", "--bare", str(self.git_dir), repo=False)
        # Bare, so nothing treats it as a checkout; GIT_WORK_TREE points it at the project.
        self._run("config", "core.bare", "false")
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "exclude").write_text("\n".join(_EXCLUDES) + "\n")

    def _large_files(self) -> list[str]:
        """Untracked or changed files over the cap, left out of the snapshot."""
        listed = self._run("ls-files", "-z", "--others", "--modified", "--exclude-standard")
        large = []
        for name in filter(None, listed.decode(errors="surrogateescape").split("\0")):
            try:
                if (self.project / name).stat().st_size > self.max_file_bytes:
                    large.append(name)
            except OSError:
                continue
        return large

    def snapshot(self) -> str:
        """Commit the project's files as they are now; returns the commit id."""
        self._ensure()
        self._run("add", "--all", "--ignore-errors", "--", ".", check=False)
        for name in self._large_files():
            self._run("rm", "--cached", "--quiet", "--ignore-unmatch", "--", name, check=False)
        # Dotenv files anywhere are secrets: never copied into our repository, whatever .gitignore says.
        staged = self._run("ls-files", "-z").decode(errors="surrogateescape").split("\0")
        secrets = [name for name in staged if name and is_env_file(name.rsplit("/", 1)[-1])]
        if secrets:
            self._run("rm", "--cached", "--quiet", "--", *secrets, check=False)
        tree = self._run("write-tree").decode().strip()
        return self._run("commit-tree", tree, "-m", "codingcode snapshot").decode().strip()

    def changes(self, before: str, after: str) -> list[TreeChange]:
        """What changed between two snapshots (renames are a deletion and an addition)."""
        out = self._run("diff-tree", "-r", "-z", "--no-renames", "--name-status", before, after)
        fields = out.decode(errors="surrogateescape").split("\0")
        kinds: dict[str, ChangeKind] = {"A": "added", "M": "modified", "D": "deleted", "T": "modified"}
        changes = []
        for status, path in zip(fields[0::2], fields[1::2]):
            if status[:1] in kinds:
                changes.append(TreeChange(path, kinds[status[:1]]))
        return changes

    def read(self, commit: str, path: str) -> tuple[bytes, int] | None:
        """The file's bytes and mode in ``commit``, or None when it was not there."""
        listed = self._run("ls-tree", "-z", commit, "--", path).decode(errors="surrogateescape")
        if not listed.strip("\0"):
            return None
        meta = listed.split("\t", 1)[0].split()
        mode = 0o755 if meta[0] == "100755" else 0o644
        return self._run("cat-file", "blob", meta[2]), mode

    def files(self, commit: str, paths: list[str]) -> dict[str, tuple[bytes, int]]:
        """The bytes and mode of each of ``paths`` in ``commit`` (those it holds), read in one batch."""
        if not paths:
            return {}
        listed = self._run("ls-tree", "-r", "-z", commit, "--", *paths).decode(errors="surrogateescape")
        entries: dict[str, tuple[str, int]] = {}
        for record in filter(None, listed.split("\0")):
            meta, path = record.split("\t", 1)
            mode, _kind, sha = meta.split()
            entries[path] = (sha, 0o755 if mode == "100755" else 0o644)
        if not entries:
            return {}
        batch = self._run("cat-file", "--batch", input="".join(f"{sha}\n" for sha, _ in entries.values()).encode())
        out: dict[str, tuple[bytes, int]] = {}
        offset = 0
        for path, (_sha, file_mode) in entries.items():
            header_end = batch.index(b"\n", offset)
            size = int(batch[offset:header_end].split()[2])
            start = header_end + 1
            out[path] = (batch[start:start + size], file_mode)
            offset = start + size + 1
        return out

    def current(self, path: str) -> bytes | None:
        target = self.project / path
        try:
            return target.read_bytes() if target.is_file() else None
        except OSError:
            return None
