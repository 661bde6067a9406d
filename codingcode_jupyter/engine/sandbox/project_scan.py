"""The walk of a project that finds its dotenv files (hidden in the sandbox) and the entries the
host may execute (kept read-only), listing again only the directories that changed.

An entry added, removed or renamed changes its directory's mtime, so a directory whose mtime
is unchanged since the last walk is taken from the cache: one stat per directory on a warm walk.
The mtime alone is not proof: a command can put it back (``touch -r``) after adding an entry,
so the cache is keyed on the directory's ctime and inode too, which no unprivileged process
can set back (any change to the directory, ``utimes`` included, moves its ctime to now).

A secret is hidden by what it is, not only by its name: a command may rename ``config/.env`` to
``config/notes`` or hard-link it there (Landlock lets a name be made in the same directory, and a
later command's plan would grant the new name), so the inode of every dotenv file found is kept for
the scan's life, and an entry of a directory listed again whose inode is a known secret's is hidden
too. A link or rename shows in its directory's listing (the directory changed); a secret that has
more links than names found (made before the session, in a directory taken from the cache) brings
one search of every directory for its inode.

Where the project is on a local filesystem, inotify (:mod:`.dir_watch`) says which directories
changed instead: a directory watched since before it was last stat'ed, with no event since, is taken
from the cache without a stat, so a warm walk with nothing changed costs no system call per
directory. A directory with an event, not watched (a network filesystem mounted inside the project,
inotify's limits), or any directory in a process forked from the one that made the watch, goes
through the stat above.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..host_paths import name_may_be_host_executed
from ..secret_files import is_env_file
from .dir_watch import DirWatch

__all__ = ["ProjectScan"]


@dataclass
class _DirCache:
    # (inode, mtime, ctime): see the module's docstring.
    stamp: tuple[int, int, int]
    env_files: list[str]
    subdirs: list[str]
    # Entries whose name may match a row of the host-executed table (engine/host_paths.py).
    host_files: list[str] = field(default_factory=list)
    # The dotenv files' inode numbers as listed, and the entries whose inode was a known secret's.
    env_inodes: dict[str, int] = field(default_factory=dict)
    inode_hits: list[str] = field(default_factory=list)
    # Entries a deny rule's pattern covers: to hide (Read), to keep read-only (Edit).
    read_denied: list[str] = field(default_factory=list)
    write_denied: list[str] = field(default_factory=list)


@dataclass
class _Walk:
    stamps: list[tuple[str, tuple[int, int, int]]]
    found: list[Path]
    listed: dict[Path, int]
    hits: list[str]
    host: list[Path]
    write_denied: list[Path]
    # Each directory's stamp by path; the directories not watched when walked (stat'ed every time).
    index: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    unwatched: list[tuple[str, tuple[int, int, int]]] = field(default_factory=list)


def _covers(patterns: list[re.Pattern[str]], path: str, is_dir: bool) -> bool:
    """A pattern covers a path, or (a directory) everything in it: then the directory goes whole."""
    return any(p.fullmatch(path) or (is_dir and p.fullmatch(path + "/\0")) for p in patterns)


class ProjectScan:
    """One project's dotenv files and host-executed names, kept between walks."""

    def __init__(self, project: Path, allowed_env_files: Iterable[str], *, watch_directories: bool = True) -> None:
        self.project = project
        # Patterns (relative to the project, or bare names) of dotenv files a rule let through.
        self.allowed_env_files = [entry.strip("/") for entry in allowed_env_files if entry.strip("/")]
        self._cache: dict[str, _DirCache] = {}
        # What the last walk found that the host may execute (engine/host_paths.py's table).
        self.host_found: list[Path] = []
        # Every secret seen in the scan's life: inode number as listed -> (device, inode) as stat says.
        self._secrets: dict[int, tuple[int, int]] = {}
        # Secrets with more than one link, by the link count their names were last searched at.
        self._searched: dict[tuple[int, int], int] = {}
        # Paths the sandbox hides besides dotenv files (denyRead inside the project): their inodes count too.
        self.extra_hidden: list[Path] = []
        # The person's deny rules as absolute-path patterns (engine/path_globs.py), matched as the walk
        # lists each directory: Read's entries are hidden as dotenv files are, Edit's kept read-only.
        self.read_denied: list[re.Pattern[str]] = []
        self.write_denied: list[re.Pattern[str]] = []
        self.write_denied_found: list[Path] = []
        # Moves whenever a directory is listed again or leaves the walk: a plan built from the walk
        # (the sandbox's mounts or Landlock rules) holds while it stays where it was.
        self.generation = 0
        # The last complete walk, with every directory's stamp: while none moved it is the answer.
        self._last: _Walk | None = None
        # inotify instead of a stat per directory (sandbox.watchDirectories); made at the first walk,
        # so a scan that never walks (a preview's, which borrows the sandbox's) holds no descriptor.
        self._watch_directories = watch_directories
        self._watch: DirWatch | None = None
        self._directories: tuple[int, frozenset[str]] | None = None

    def _dir_watch(self) -> DirWatch | None:
        """The watch, when this process may use it."""
        if self._watch_directories and self._watch is None:
            self._watch_directories = False  # tried once: a project not on a local filesystem stays so
            self._watch = DirWatch.open(str(self.project))
        watch = self._watch
        return watch if watch is not None and watch.usable() else None

    def close(self) -> None:
        """Close the inotify descriptor (the scan keeps working, by stats)."""
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.close()

    def _allowed(self, rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        for entry in self.allowed_env_files:
            if fnmatch.fnmatchcase(rel, entry) or ("/" not in entry and fnmatch.fnmatchcase(name, entry)):
                return True
        return False

    def env_files(self, learn: bool = True) -> list[Path]:
        """Every dotenv file of the project not allowed by a rule, in any directory, and every other
        name of a secret's inode (and, in :attr:`host_found`, every entry that may be host-executed).

        ``learn`` False (the walk right after a command): a dotenv file found now is hidden by its
        name, but its inode is not remembered. The command wrote it, or linked to it a file it wrote
        and could read all along; what was a secret before the command was learnt before it."""
        last = self._last
        watch = self._dir_watch()
        if watch is not None:
            # Before any directory is taken as it was, whether by the last walk or one by one below.
            watch.drain()
        if last is not None and self._unchanged(last, watch):
            # No directory changed since the last walk: the same result without listing or gathering.
            self.host_found = list(last.host)
            self.write_denied_found = list(last.write_denied)
            return last.found + self._other_names(dict(last.listed) if learn else None, last.hits, set(last.found))
        self._last = None
        found: list[Path] = []
        host: list[Path] = []
        listed: dict[Path, int] = {}
        hits: list[str] = []
        write_denied: list[Path] = []
        stack = [str(self.project)]
        live: set[str] = set()
        stamps: list[tuple[str, tuple[int, int, int]]] = []
        unwatched: list[tuple[str, tuple[int, int, int]]] = []
        complete = True
        while stack:
            directory = stack.pop()
            live.add(directory)
            cached = self._listing(directory, watch)
            if cached is None:
                complete = False
                blind = self._blind(directory)
                if blind is not None:
                    # Hidden by name only: learning its inode would hide it for the scan's life.
                    found.append(blind)
                continue
            stamps.append((directory, cached.stamp))
            if watch is None or not watch.watched(directory):
                unwatched.append((directory, cached.stamp))
            host.extend(Path(path) for path in cached.host_files)
            hits.extend(cached.inode_hits)
            write_denied.extend(Path(path) for path in cached.write_denied)
            for path in cached.read_denied:
                found.append(Path(path))
                listed[Path(path)] = cached.env_inodes.get(path, -1)
            for path in cached.env_files:
                rel = os.path.relpath(path, self.project).replace(os.sep, "/")
                if not self._allowed(rel):
                    found.append(Path(path))
                    listed[Path(path)] = cached.env_inodes.get(path, -1)
            stack.extend(cached.subdirs)
        for gone in set(self._cache) - live:
            del self._cache[gone]
            self.generation += 1
            if watch is not None:
                watch.forget(gone)
        self.host_found = host
        self.write_denied_found = write_denied
        if complete:
            self._last = _Walk(
                stamps, list(found), dict(listed), list(hits), list(host), list(write_denied), dict(stamps), unwatched
            )
        return found + self._other_names(listed if learn else None, hits, set(found))

    def _blind(self, directory: str) -> Path | None:
        """What to hide whole for a directory the walk could not list: what is in it is unknown, and
        a secret moved into it (a command may move ``config/.env`` into a directory it made beside
        it) must not be granted to the next command because the walk did not see it there. The
        directory itself (made unlistable: ``chmod 000``, which the command can undo), or its
        parent when it cannot even be stat'ed (its path too long to name, a chain of directories past
        PATH_MAX that even root cannot list by path; a parent that can be listed, not searched);
        nothing when it is gone."""
        try:
            st = os.lstat(directory)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:
            # Too long a path, or a parent that lists but cannot be searched: the parent goes whole.
            return Path(directory if directory == str(self.project) else os.path.dirname(directory))
        return Path(directory) if stat.S_ISDIR(st.st_mode) else None

    @staticmethod
    def _unchanged(last: _Walk, watch: DirWatch | None) -> bool:
        """No directory of the last walk changed: by a stat of each, or with a watch (its queue
        read), of each that had an event or is not watched."""
        if watch is None:
            return _same_stamps(last.stamps)
        if not _same_stamps(last.unwatched):
            return False
        for directory in [path for path in watch.pending() if path in last.index]:
            # Watched again before the stat: whatever changes it after the stat is an event.
            if not watch.arm(directory) or not _same_stamps([(directory, last.index[directory])]):
                # Changed, or no longer watched (the walk notes it among those stat'ed every time).
                watch.mark(directory)
                return False
        return True

    def _other_names(self, listed: dict[Path, int] | None, hits: list[str], named: set[Path]) -> list[Path]:
        """The names of known secrets' inodes that are not dotenv names (a rename, a hard link);
        ``listed`` (None: learn nothing) the dotenv files found, by their inode numbers as listed."""
        search = False
        learnt = [] if listed is None else [*listed, *self.extra_hidden]
        listed = listed or {}
        for path in learnt:
            try:
                st = os.lstat(path)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            self._secrets[listed.get(path, st.st_ino)] = key
            self._secrets.setdefault(st.st_ino, key)
            if st.st_nlink > 1 and self._searched.get(key) != st.st_nlink:
                self._searched[key] = st.st_nlink
                search = True
        if search:
            hits = self._search()
        known = set(self._secrets.values())
        others: list[Path] = []
        for raw in dict.fromkeys(hits):
            path = Path(raw)
            if path in named:
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in known:
                others.append(path)
        return others

    def _search(self) -> list[str]:
        """Every entry of every directory listed whose inode number is a known secret's."""
        hits: list[str] = []
        for directory in list(self._cache):
            try:
                with os.scandir(directory) as entries:
                    hits += [entry.path for entry in entries if entry.inode() in self._secrets]
            except OSError:
                continue
        return hits

    def directories(self) -> frozenset[str]:
        """Every directory the last walk listed (or took from its cache). Kept while the walk's
        generation holds: a copy of every path before each command is not free on a large project."""
        if self._directories is None or self._directories[0] != self.generation:
            self._directories = (self.generation, frozenset(self._cache))
        return self._directories[1]

    def _listing(self, directory: str, watch: DirWatch | None = None) -> _DirCache | None:
        """The dotenv files and subdirectories of ``directory``, listed again only if it changed."""
        cached = self._cache.get(directory)
        if watch is not None:
            if cached is not None and watch.clean(directory):
                return cached
            # Before the stat and the listing: a change after them is an event.
            watch.arm(directory)
        try:
            st = os.stat(directory)
        except OSError:
            if watch is not None:
                watch.mark(directory)
            return None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        if cached is not None and cached.stamp == stamp:
            # Adding, removing or renaming an entry changes its directory's mtime and ctime.
            return cached
        env_files: list[str] = []
        subdirs: list[str] = []
        host_files: list[str] = []
        env_inodes: dict[str, int] = {}
        inode_hits: list[str] = []
        read_denied: list[str] = []
        write_denied: list[str] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    if self.read_denied and _covers(self.read_denied, entry.path, is_dir):
                        read_denied.append(entry.path)
                        env_inodes[entry.path] = entry.inode()
                        continue  # hidden whole: nothing in it is read, so nothing to walk
                    if self.write_denied and _covers(self.write_denied, entry.path, is_dir):
                        write_denied.append(entry.path)
                    if name_may_be_host_executed(entry.name):
                        host_files.append(entry.path)
                    if is_env_file(entry.name):
                        env_files.append(entry.path)
                        env_inodes[entry.path] = entry.inode()
                    if entry.inode() in self._secrets:
                        # A dotenv name too: a secret renamed onto a name a read rule lets through
                        # (``mv .env .env.example``) is still the secret.
                        inode_hits.append(entry.path)
                    # A directory named like a dotenv file (``deploy.env/``) is walked too: what it
                    # holds may be host-executed (a nested ``.git``, an ``.envrc``).
                    if is_dir:
                        subdirs.append(entry.path)
        except OSError:
            self.generation += 1
            if watch is not None:
                watch.mark(directory)
            return None
        cached = _DirCache(stamp, env_files, subdirs, host_files, env_inodes, inode_hits, read_denied, write_denied)
        self._cache[directory] = cached
        self.generation += 1
        return cached


def _same_stamps(stamps: list[tuple[str, tuple[int, int, int]]]) -> bool:
    stat = os.stat
    for directory, stamp in stamps:
        try:
            st = stat(directory)
        except OSError:
            return False
        if (st.st_ino, st.st_mtime_ns, st.st_ctime_ns) != stamp:
            return False
    return True
