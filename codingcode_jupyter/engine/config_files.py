"""Reading a configuration file the project supplies: a regular file of bounded size.

A committed symlink can point ``.claude/settings.json``, ``.mcp.json`` or an agent file at
``/dev/zero``, ``/dev/stdin`` or a named pipe; read whole, it would hang the kernel or fill
its memory before any trust decision. Such a file is refused with an :class:`OSError`
saying why, which each reader reports as it reports an unreadable file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["MAX_CONFIG_BYTES", "RefusedFile", "read_config_bytes", "read_config_text"]

# Far above any real settings, .mcp.json or agent file.
MAX_CONFIG_BYTES = 4 << 20


class RefusedFile(OSError):
    """A configuration file that is not read, and why (``strerror``, as for any OSError)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.strerror = reason


def read_config_bytes(path: Path | str, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The contents of ``path``; OSError when it is not a regular file or is larger than ``limit``."""
    # Non-blocking, so opening a named pipe returns at once; the check is on what was opened.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile("not a regular file (a device, a pipe or a directory is never read as configuration)")
        if info.st_size > limit:
            raise RefusedFile(f"{info.st_size} bytes is too large for a configuration file (max {limit})")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise RefusedFile(f"too large for a configuration file (max {limit} bytes)")
    return data


def read_config_text(path: Path | str, limit: int = MAX_CONFIG_BYTES) -> str:
    """:func:`read_config_bytes` decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_config_bytes(path, limit).decode("utf-8")
