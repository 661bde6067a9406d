"""Which files a git repository tracks, read from its index file without running git.

`git grep` reads only tracked files, so whether it reaches a file named for secrets depends on
the index, not on the directory: an ignored `.env` is not read, a committed `config/secrets.yaml`
is. Running `git ls-files` to learn that would run git on the host in a repository the agent may
have written to (a planted `core.fsmonitor` is a program git starts), so the index is parsed
here instead: versions 2 to 4, SHA-1 and SHA-256 object names. What cannot be read for certain
(no index, a split index, a format not known here) is None, and the caller treats every file as
tracked.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import fs_probe

__all__ = ["TrackedFiles", "tracked_files", "parse_index", "repository_top", "find_repository"]

_SIGNATURE = b"DIRC"
# ctime, mtime (8 bytes each), dev, ino, mode, uid, gid, size (4 each): before the object name.
_STAT_BYTES = 40
_EXTENDED = 0x4000
_NAME_MASK = 0x0FFF
_SPARSE_DIR_MODE = 0o040000
# The most read of git's small files (HEAD, a `.git` file, commondir), of a config, and of an index
# (100,000 entries take about 10 MB): a larger one is not read, and every file then counts as tracked.
_SMALL = 64 * 1024
_CONFIG_BYTES = 1 << 20
_INDEX_BYTES = 256 << 20
_SHA256 = re.compile(r"^\s*objectformat\s*=\s*sha256\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class TrackedFiles:
    """The paths the index of the repository at ``top`` holds, relative to ``top``; ``directories``
    are a sparse index's collapsed directories, everything under which is tracked."""

    top: Path
    paths: frozenset[str]
    directories: tuple[str, ...] = ()
    # Each file's mtime (ns) and size as the index recorded them, and when the index was written.
    stats: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    written_ns: int = 0

    def unchanged(self, path: Path) -> bool:
        """Whether git sees the working copy of ``path`` as the index's without reading it: same
        mtime and size as recorded, recorded before the index was written (git re-reads a file
        changed in the same instant, "racily clean"). False when unsure: the file may differ."""
        try:
            rel = path.relative_to(self.top).as_posix()
            info = os.lstat(path)
        except (ValueError, OSError):
            return False
        recorded = self.stats.get(rel)
        # The index keeps the low 32 bits of the size.
        return recorded is not None and recorded == (info.st_mtime_ns, info.st_size & 0xFFFFFFFF) \
            and recorded[0] < self.written_ns

    def tracks(self, path: Path) -> bool:
        """Whether ``path`` (absolute, real) is a file the index holds."""
        try:
            rel = path.relative_to(self.top).as_posix()
        except ValueError:
            return False
        return rel in self.paths or any(rel.startswith(d) for d in self.directories)


def _git_dir(top: Path) -> Path | None:
    """The git directory of the working tree ``top``: ``top/.git``, or where a `.git` file points."""
    marker = top / ".git"
    if fs_probe.is_dir(marker):
        return marker
    text = fs_probe.read_text(marker, _SMALL)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    return target if target.is_absolute() else (top / target)


_HEAD = re.compile(r"^(?:ref: refs/\S+|[0-9a-f]{40}|[0-9a-f]{64})\s*$")
# A configuration that may move the working tree away from the directory holding `.git` (or include
# a file that does): the index's paths would then be relative to somewhere else.
_MOVED = re.compile(r"^\s*worktree\s*=|^\s*\[\s*include", re.IGNORECASE | re.MULTILINE)


def _takes(git_dir: Path) -> Path | None:
    """The common directory of ``git_dir`` if git takes it for a repository: a HEAD, an objects and
    a refs directory, as git's own check asks (a linked worktree's in its `commondir`)."""
    head = fs_probe.read_text(git_dir / "HEAD", _SMALL)
    if head is None:
        return None
    common = git_dir
    if fs_probe.exists(git_dir / "commondir"):
        named = fs_probe.read_text(git_dir / "commondir", _SMALL)
        if named is None:
            return None
        common = git_dir / named.strip()
    return common if _HEAD.match(head) and fs_probe.is_dir(common / "objects") and fs_probe.is_dir(common / "refs") \
        else None


def _is_repository(git_dir: Path) -> bool:
    """Whether git takes ``git_dir`` for a repository whose working tree is where its `.git` is. A
    `.git` git does not take is passed over for the one above it, so its index (which may be
    planted) says nothing."""
    common = _takes(git_dir)
    if common is None:
        return False
    for config in (common / "config", git_dir / "config.worktree"):
        if not fs_probe.exists(config):
            continue
        text = fs_probe.read_text(config, _CONFIG_BYTES)
        if text is None or _MOVED.search(text):
            return False  # a config git reads but this cannot (a FIFO, too large) may move the tree
    return True


def find_repository(path: Path) -> tuple[Path | None, Path] | None:
    """(working tree's top, git directory) of the repository git finds from ``path`` as it looks for
    one (a `.git` it does not take is passed over; a directory that is itself a git directory is a
    bare repository: no working tree, top None), or None when git finds none and stops."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate / ".git"):
            git_dir = _git_dir(candidate)
            if git_dir is not None and _takes(git_dir) is not None:
                return candidate, git_dir
        if _takes(candidate) is not None:
            return None, candidate
    return None


def repository_top(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding a `.git` (directory or file)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def _hash_size(git_dir: Path) -> int:
    # A linked worktree's git directory has no config of its own: its `commondir` names the shared one.
    config = git_dir / "config"
    common = git_dir / "commondir"
    if not fs_probe.exists(config) and fs_probe.exists(common):
        named = fs_probe.read_text(common, _SMALL)
        if named is not None:
            config = (git_dir / named.strip()) / "config"
    text = fs_probe.read_text(config, _CONFIG_BYTES)
    return 32 if text is not None and _SHA256.search(text) else 20


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset encoding (each continuation adds one before shifting), as index version 4 uses it."""
    byte = data[at]
    at += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[at]
        at += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at


def parse_index(data: bytes, hash_size: int = 20,
                stats: dict[str, tuple[int, int]] | None = None) -> tuple[list[str], list[str]] | None:
    """(file paths, sparse directories) of an index file's content, or None when it cannot be read
    for certain (unknown signature or version, truncated, or a split index whose entries live in
    another file). ``stats``, when given, receives each file's recorded (mtime in ns, size)."""
    if len(data) < 12 or data[:4] != _SIGNATURE:
        return None
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    files: list[str] = []
    directories: list[str] = []
    at = 12
    previous = b""
    try:
        for _ in range(count):
            start = at
            mode = int.from_bytes(data[at + 24:at + 28], "big")
            at += _STAT_BYTES + hash_size
            flags = int.from_bytes(data[at:at + 2], "big")
            at += 2
            if flags & _EXTENDED:
                if version < 3:
                    return None
                at += 2
            if version == 4:
                strip, at = _varint(data, at)
                end = data.index(b"\0", at)
                if strip > len(previous):
                    return None
                name = previous[:len(previous) - strip] + data[at:end]
                at = end + 1
            else:
                end = data.index(b"\0", at)
                name = data[at:end]
                if (flags & _NAME_MASK) != _NAME_MASK and len(name) != flags & _NAME_MASK:
                    return None
                # Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
                at = start + ((end - start) // 8 + 1) * 8
            previous = name
            text = name.decode("utf-8", "surrogateescape")
            if not _plain_path(text.rstrip("/")):
                return None  # git opens a name as it is: `src/../config/x` reads config/x
            if mode & 0o170000 == _SPARSE_DIR_MODE:
                directories.append(text if text.endswith("/") else text + "/")
            else:
                files.append(text)
                if stats is not None:
                    mtime = int.from_bytes(data[start + 8:start + 12], "big") * 1_000_000_000 \
                        + int.from_bytes(data[start + 12:start + 16], "big")
                    stats[text] = (mtime, int.from_bytes(data[start + 36:start + 40], "big"))
    except (ValueError, IndexError):
        return None
    # Extensions follow the entries: a split index ("link") keeps most entries in a shared file.
    while at + 8 <= len(data) - hash_size:
        signature = data[at:at + 4]
        size = int.from_bytes(data[at + 4:at + 8], "big")
        if signature == b"link":
            return None
        at += 8 + size
    return files, directories


def _plain_path(name: str) -> bool:
    """A path as git itself writes them: relative, no empty, `.`, `..` or `.git` part."""
    return bool(name) and all(part not in ("", ".", "..") and part.lower() != ".git" for part in name.split("/"))


# The last index read per file, keyed by its stat: a call judged again reads it again only if it changed.
_READ: dict[Path, tuple[tuple[int, int, int], TrackedFiles | None]] = {}


def tracked_files(path: Path) -> TrackedFiles | None:
    """What the repository holding ``path`` tracks, or None when that cannot be read for certain."""
    top = repository_top(path)
    if top is None:
        return None
    git_dir = _git_dir(top)
    if git_dir is None or not _is_repository(git_dir):
        return None
    index = git_dir / "index"
    info = fs_probe.probe(index)
    if info is None:
        return None
    key = (info.st_ino, info.st_size, info.st_mtime_ns)
    cached = _READ.get(index)
    if cached is not None and cached[0] == key:
        return cached[1]
    # Only a regular file, opened without waiting: an index that is a FIFO would hang the judge.
    data = fs_probe.read_head(index, _INDEX_BYTES, max_size=_INDEX_BYTES)
    if data is None:
        return None
    stats: dict[str, tuple[int, int]] = {}
    parsed = parse_index(data, _hash_size(git_dir), stats)
    found = None if parsed is None else TrackedFiles(top, frozenset(parsed[0]), tuple(parsed[1]), stats,
                                                     info.st_mtime_ns)
    if len(_READ) > 16:
        _READ.clear()
    _READ[index] = (key, found)
    return found
