"""The one way the judge looks at the filesystem: it never raises and never blocks.

The judge probes words that may be paths (an argument, a redirect's target, a literal in inline
code) before anything runs. Most words an agent sends are not paths at all: a here-document's
body, a `python3 -c` script, a long grep pattern. A probe of such a word must neither fail (a
name longer than the kernel takes raises ENAMETOOLONG) nor wait (opening a FIFO, a device or a
socket blocks until a writer comes). So every probe here first asks whether the text could name
a file at all (:func:`could_be_path`), answers "no such file" when it cannot, and opens only regular files, without
waiting, and reads at most a bounded number of bytes.
"""

from __future__ import annotations

import os
import stat as stat_module

__all__ = ["NAME_MAX", "PATH_MAX", "WORD_MAX", "could_be_path", "probe", "is_file", "is_dir", "exists", "read_head",
           "read_text"]

# Linux's limits (<linux/limits.h>): a path given to a system call holds at most PATH_MAX - 1 bytes,
# each of its names at most NAME_MAX; past them the call fails with ENAMETOOLONG, whatever is on disk.
PATH_MAX = 4096
NAME_MAX = 255
_GLOB_MAGIC = frozenset("*?[")
# The longest word that may still name files once its braces and globs are expanded (a bracket
# expression or a brace list can be long): a longer word is a script or a text, not a path.
WORD_MAX = 16 * PATH_MAX


def could_be_path(text: str | os.PathLike[str]) -> bool:
    """Whether ``text`` could name a file a program opens: no NUL, within PATH_MAX and NAME_MAX.

    A glob pattern is judged by what it may match, not by its own length (a bracket expression of
    300 characters matches one character of a short name), up to a bound. A newline is kept: Linux
    allows it in a name, and `dir⏎/../.git/hooks/x` reaches `.git` once `dir⏎` exists.
    """
    raw = os.fspath(text)
    if not raw or "\x00" in raw:
        return False
    if not _GLOB_MAGIC.isdisjoint(raw):
        return len(raw) <= WORD_MAX
    try:
        encoded = os.fsencode(raw)
    except (UnicodeError, ValueError):
        return False
    return len(encoded) < PATH_MAX and max(map(len, encoded.split(b"/"))) <= NAME_MAX


def probe(path: str | os.PathLike[str], *, follow: bool = True) -> os.stat_result | None:
    """The file's status, or None when it does not exist, cannot be looked at or cannot be a path."""
    if not could_be_path(path):
        return None
    try:
        return os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return None


def is_file(path: str | os.PathLike[str]) -> bool:
    """A regular file (symbolic links followed)."""
    info = probe(path)
    return info is not None and stat_module.S_ISREG(info.st_mode)


def is_dir(path: str | os.PathLike[str]) -> bool:
    info = probe(path)
    return info is not None and stat_module.S_ISDIR(info.st_mode)


def exists(path: str | os.PathLike[str], *, follow: bool = True) -> bool:
    return probe(path, follow=follow) is not None


def read_head(path: str | os.PathLike[str], limit: int, *, max_size: int | None = None) -> bytes | None:
    """At most ``limit`` bytes from the start of a regular file, or None: not a regular file (a FIFO,
    a device, a socket, a directory), larger than ``max_size``, or unreadable. Opened without
    waiting, and checked after opening, so a file swapped for a FIFO meanwhile is not waited on."""
    if not could_be_path(path):
        return None
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode) or (max_size is not None and info.st_size > max_size):
            return None
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], limit: int = 1 << 20) -> str | None:
    """A regular file's text (UTF-8, errors replaced), or None when it is not one or is over ``limit`` bytes."""
    data = read_head(path, limit + 1, max_size=limit)
    if data is None or len(data) > limit:
        return None
    return data.decode("utf-8", errors="replace")

