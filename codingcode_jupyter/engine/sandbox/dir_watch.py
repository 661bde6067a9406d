"""Which directories of a project's walk may have changed since they were last listed, told by
inotify instead of a stat of every directory before each command.

A directory is watched before it is stat'ed and listed, so whatever changes it after that is an
event in the queue; the queue is read before each use. The kernel queues an event during the
system call that made the change, so once a command's processes are gone everything it did is in
the queue. Whatever leaves a doubt (the queue overflowed, an event for a watch nobody asked for,
a read that failed, the project's root or the mount table changed) marks every watched directory
changed: the next walk is then the stat walk, never a stale answer.

inotify sees only what this machine's kernel does: a change another machine makes to a network
filesystem's directory makes no event. So only directories on a filesystem of the local kind
(:data:`LOCAL_FS`) are watched; the others, and every directory when the project itself is not
on one, are stat'ed before each use as before.
"""

from __future__ import annotations

import errno
import os
import select
import threading

from inotify_simple import INotify, flags, parse_events

__all__ = ["LOCAL_FS", "DirWatch", "mount_table", "fs_type"]

# Filesystems whose every change goes through this kernel (or whose other writers, an overlay's
# layers, are not the project's): their inotify events are the whole story.
LOCAL_FS = frozenset(("ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "ramfs", "bcachefs"))

# No IN_MODIFY: a file's content is not what the walk lists. IN_ATTRIB: ``touch -r`` on the
# directory (its mtime set back after an entry was added) is a change, as its ctime says to a stat.
MASK = (
    flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.ATTRIB
    | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW
)  # fmt: skip
# At most this share of the user's inotify watches (fs.inotify.max_user_watches) for one project:
# the limit is the user's, shared with their editors' and build tools' watchers, and a command
# making a few hundred thousand directories would otherwise take every watch for the sandbox's
# life (the person's IDE then reports "System limit for number of file watchers reached").
# Directories beyond it are stat'ed before each use, as on a network filesystem.
WATCH_SHARE = 4


def _watch_budget() -> int:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as file:
            return max(256, int(file.read()) // WATCH_SHARE)
    except (OSError, ValueError):
        return 8192 // WATCH_SHARE


# The watched directory itself went (or its filesystem did): its path may now name another
# directory, and so may every path below it.
_GONE = flags.DELETE_SELF | flags.MOVE_SELF | flags.IGNORED | flags.UNMOUNT


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes.
    if "\\" not in field:
        return field
    out, index = [], 0
    while index < len(field):
        if field[index] == "\\" and field[index + 1 : index + 4].isdigit():
            out.append(chr(int(field[index + 1 : index + 4], 8)))
            index += 4
        else:
            out.append(field[index])
            index += 1
    return "".join(out)


def mount_table(text: str | None = None) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount this process sees, in /proc/self/mountinfo's
    order (a later mount on the same point is on top)."""
    if text is None:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as file:
            text = file.read()
    table: list[tuple[str, str]] = []
    for line in text.splitlines():
        before, sep, after = line.partition(" - ")
        fields = before.split()
        if not sep or len(fields) < 5 or not after:
            continue
        table.append((_unescape(fields[4]), after.split()[0]))
    return table


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def fs_type(path: str, table: list[tuple[str, str]]) -> str | None:
    """The type of the filesystem ``path`` (absolute, no symlinks) lies on: the longest mount
    point above it, the last mounted there if several."""
    best: tuple[int, str] | None = None
    for point, kind in table:
        if _within(path, point) and (best is None or len(point) >= best[0]):
            best = (len(point), kind)
    return best[1] if best is not None else None


class DirWatch:
    """One inotify instance watching the directories of one project's walk (see the module).

    Used only by the process that made it: a forked child shares the descriptor (reading it
    would take the parent's events, adding or removing a watch would change the parent's) and
    falls back to stats, as :meth:`usable` says. For the same reason a fork that runs the agent's
    code must not keep it: the confined fork closes every descriptor but its pipes
    (notebook/kernel/fork_child.py), and commands get it closed on exec."""

    def __init__(self, root: str, table: list[tuple[str, str]] | None = None) -> None:
        """Raises OSError when inotify cannot start (too many instances) or ``root`` is gone."""
        self.root = root
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._wds: dict[int, set[str]] = {}
        self._wd_of: dict[str, int] = {}
        # Watches removed here whose IN_IGNORED (or last events) may still be queued: not a doubt.
        self._retired: set[int] = set()
        self.dirty: set[str] = set()
        # add_watch said ENOSPC (the user's watch limit): no more tries until a watch is removed.
        self._full = False
        self._budget = _watch_budget()
        self._root_id = self._identity()
        self._mounts = open("/proc/self/mountinfo", "rb", buffering=0)  # noqa: SIM115 - kept for poll
        self._poll = select.poll()
        self._poll.register(self._mounts.fileno(), select.POLLPRI)
        self._poll.poll(0)  # the mount table as it is now is the one read below
        self._foreign: list[str] = []
        self.local = self._read_mounts(table)
        self._inotify = INotify(inheritable=False, nonblocking=True)

    @classmethod
    def open(cls, root: str) -> DirWatch | None:
        """A watch for the project at ``root``, or None: not on a local filesystem, or no inotify."""
        try:
            watch = cls(root)
        except OSError:
            return None
        if not watch.local:
            watch.close()
            return None
        return watch

    def _identity(self) -> tuple[int, int]:
        st = os.stat(self.root)
        return (st.st_dev, st.st_ino)

    def _read_mounts(self, table: list[tuple[str, str]] | None = None) -> bool:
        """Read the mount table: whether the root's filesystem is local; the mount points inside
        the project that are not (never watched). What is above the root does not matter: a rename
        up there that puts another directory at the root's path shows in the root's identity,
        which :meth:`drain` compares."""
        table = mount_table() if table is None else table
        inside = {point: kind for point, kind in table if point != self.root and _within(point, self.root)}
        self._foreign = sorted((point for point, kind in inside.items() if kind not in LOCAL_FS), key=len)
        return fs_type(self.root, table) in LOCAL_FS

    def usable(self) -> bool:
        return not self._inotify.closed and os.getpid() == self.pid

    def close(self) -> None:
        self._inotify.close()
        self._mounts.close()

    def watched(self, path: str) -> bool:
        return path in self._wd_of

    def clean(self, path: str) -> bool:
        """Watched, and no event for it since it was armed: as it was when last listed."""
        return path in self._wd_of and path not in self.dirty

    def pending(self) -> list[str]:
        """The paths marked changed, as a list another thread's drain cannot change under a loop."""
        with self._lock:
            return list(self.dirty)

    def _everything(self) -> None:
        self.dirty.update(self._wd_of)

    def drain(self) -> None:
        """Read every queued event (without waiting) into :attr:`dirty`."""
        with self._lock:
            try:
                if self._poll.poll(0):
                    self.local = self._read_mounts()
                    self._everything()
                identity = self._identity()
                if identity != self._root_id:
                    self._root_id = identity
                    self._everything()
            except OSError:
                self._everything()
            data = b""
            try:
                while True:
                    chunk = os.read(self._inotify.fileno(), 1 << 16)
                    if not chunk:
                        break
                    data += chunk
            except BlockingIOError:
                pass
            except OSError:
                self._everything()
            gone: set[str] = set()
            for event in parse_events(data):
                if event.mask & flags.Q_OVERFLOW:
                    self._everything()
                    continue
                paths = self._wds.get(event.wd)
                if paths is None:
                    if event.wd in self._retired:
                        if event.mask & flags.IGNORED:
                            self._retired.discard(event.wd)
                        continue
                    self._everything()
                    continue
                self.dirty.update(paths)
                if event.mask & _GONE:
                    gone.update(paths)
                    del self._wds[event.wd]
                    for path in paths:
                        del self._wd_of[path]
                    if not event.mask & flags.IGNORED:
                        self._retired.add(event.wd)  # its IN_IGNORED follows
                        self._rm_watch(event.wd)
            if gone:
                self._below(gone)

    def _below(self, gone: set[str]) -> None:
        """Every watched path under one that went: it may now name another directory (``a`` renamed
        and a new ``a/b`` made), whose watch is on the old one."""
        for path in self._wd_of:
            parent = path
            while len(parent) > len(self.root):
                parent = parent.rpartition("/")[0]
                if parent in gone:
                    self.dirty.add(path)
                    break

    def _rm_watch(self, wd: int) -> None:
        self._full = False
        try:
            self._inotify.rm_watch(wd)
        except OSError:
            pass  # already gone with its directory

    def _unmap(self, path: str) -> None:
        wd = self._wd_of.pop(path, None)
        if wd is None:
            return
        paths = self._wds.get(wd)
        if paths is not None:
            paths.discard(path)
            if not paths:
                del self._wds[wd]
                self._retired.add(wd)
                self._rm_watch(wd)

    def arm(self, path: str) -> bool:
        """Watch ``path`` before it is stat'ed and listed, and count it unchanged from now: whether
        it is watched (not on a network filesystem, within inotify's limits). Called right before
        the stat, so an event queued meanwhile (another thread's drain) marks it again."""
        with self._lock:
            self.dirty.discard(path)
            over = path not in self._wd_of and len(self._wds) >= self._budget
            if over or self._full or not self.local or any(_within(path, point) for point in self._foreign):
                self._unmap(path)
                return False
            try:
                wd = self._inotify.add_watch(path, MASK)
            except OSError as error:
                if error.errno == errno.ENOSPC:
                    self._full = True
                self._unmap(path)
                return False
            if self._wd_of.get(path) != wd:
                self._unmap(path)
                self._wds.setdefault(wd, set()).add(path)
                self._wd_of[path] = wd
                self._retired.discard(wd)
            return True

    def mark(self, path: str) -> None:
        """``path`` could not be confirmed (its stat or listing failed, or it changed)."""
        with self._lock:
            if path in self._wd_of:
                self.dirty.add(path)

    def forget(self, path: str) -> None:
        """``path`` left the walk."""
        with self._lock:
            self._unmap(path)
            self.dirty.discard(path)
