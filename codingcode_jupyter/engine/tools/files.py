"""read_file, write_file and edit_file: the agent's hands on the project's files.

Every path is resolved (symlinks, ``..``) before anything looks at it, and results name the
resolved path so the approval rules judge what is really touched. Writes are atomic and
refuse to clobber a file the agent has not read, or that changed on disk since it read it.
"""

from __future__ import annotations

import asyncio
import difflib
import mimetypes
import os
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, Field

from .. import telemetry
from ..atomic import atomic_write
from ..checkpoints import CheckpointError, CheckpointStore
from ..paths import is_within
from ..state import FileStamp
from .access import BUILTIN_ACCESS
from .base import NoChange, ToolContext, ToolDefinition, ToolError, ToolResult, text_block
from .images import MAX_IMAGE_BYTES, image_block, sniff_image

__all__ = [
    "ReadFileArgs",
    "WriteFileArgs",
    "EditFileArgs",
    "read_file_tool",
    "write_file_tool",
    "edit_file_tool",
    "display_path",
    "resolve_arg",
    "unified_diff",
    "atomic_write",
]

READ_DEFAULT_LIMIT = 200
READ_MAX_LIMIT = 500
MAX_LINE_CHARS = 2000
# A line is read with at most this many bytes; the rest of a giant line is skipped, not held.
MAX_LINE_BYTES = MAX_LINE_CHARS * 4
CHUNK = 1 << 20
SNIFF_BYTES = 8192
MAX_DIFF_CHARS = 30_000
# Bounds the tree walk that looks for close matches of a missing path.
MAX_SUGGESTION_SCAN = 20_000
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".tox"}



def resolve_arg(ctx: ToolContext, raw: str) -> Path:
    """``ctx.resolve`` with a clear error for a path the OS cannot take (NUL bytes, ...)."""
    if "\x00" in raw:
        raise ToolError(f"Invalid path {raw!r}: it contains a NUL byte.")
    try:
        return ctx.resolve(raw)
    except (ValueError, OSError) as error:
        raise ToolError(f"Invalid path {raw!r}: {error}") from None


def display_path(ctx: ToolContext, path: Path) -> str:
    """The path as a person reads it: relative inside the project, absolute outside."""
    root = Path(os.path.realpath(ctx.project_path))
    if is_within(path, root) and path != root:
        return str(path.relative_to(root))
    return str(path)


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head


def _describe_type(path: Path) -> str:
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


def _suggestions(ctx: ToolContext, missing: Path) -> list[str]:
    """Existing files whose names are close to the missing one, nearest first."""
    root = Path(os.path.realpath(ctx.project_path))
    search_root = root if is_within(missing, root) else missing.parent
    while not search_root.is_dir() and search_root != search_root.parent:
        search_root = search_root.parent
    candidates: dict[str, list[Path]] = {}
    seen = 0
    for dirpath, dirnames, filenames in os.walk(search_root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for name in filenames + dirnames:
            candidates.setdefault(name, []).append(Path(dirpath) / name)
            seen += 1
        if seen > MAX_SUGGESTION_SCAN:
            break
    close = difflib.get_close_matches(missing.name, list(candidates), n=5, cutoff=0.6)
    found: list[str] = []
    for name in close:
        for path in sorted(candidates[name], key=lambda p: len(p.parts))[:3]:
            found.append(display_path(ctx, path))
    return found[:8]


def _missing_error(ctx: ToolContext, path: Path) -> ToolError:
    message = f"File not found: {path}"
    close = _suggestions(ctx, path)
    if close:
        message += "\nDid you mean: " + ", ".join(close)
    return ToolError(message)


def _stamp(path: Path) -> FileStamp:
    st = path.stat()
    return FileStamp(mtime_ns=st.st_mtime_ns, size=st.st_size)


def _remember(ctx: ToolContext, path: Path) -> None:
    if ctx.state is not None:
        ctx.state.files_seen[str(path)] = _stamp(path)


def _check_fresh(ctx: ToolContext, path: Path) -> None:
    """Refuse to change an existing file the agent has not read, or that moved on since."""
    if ctx.state is None or not path.exists():
        return
    seen = ctx.state.files_seen.get(str(path))
    if seen is None:
        raise ToolError(
            f"{path} exists and has not been read in this session. "
            "Read it with read_file first, then retry the change."
        )
    now = _stamp(path)
    if now != seen:
        raise ToolError(
            f"{path} changed on disk since you last read it (size {seen.size} -> {now.size} bytes). "
            "Read it again with read_file before changing it."
        )


# --------------------------------------------------------------------------- read_file


class ReadFileArgs(BaseModel):
    """Parameters of read_file."""

    path: str = Field(description="File to read: relative to the project root, or absolute.")
    offset: int = Field(default=1, ge=1, description="1-based line number to start at (default 1).")
    limit: int = Field(
        default=READ_DEFAULT_LIMIT,
        ge=1,
        description=f"How many lines to return (default {READ_DEFAULT_LIMIT}, max {READ_MAX_LIMIT}).",
    )


def _skip_rest_of_line(fh: BinaryIO) -> int:
    """Consume a line's remainder without holding it; returns 1 if a newline ended it."""
    while True:
        chunk = fh.read(CHUNK)
        if not chunk:
            return 0
        index = chunk.find(b"\n")
        if index >= 0:
            fh.seek(index + 1 - len(chunk), os.SEEK_CUR)
            return 1


def _read_window(path: Path, offset: int, limit: int) -> tuple[list[tuple[str, bool]], int, bool]:
    """Lines [offset, offset+limit) as (text, was_cut), the file's total line count, and
    whether ``offset`` was past the end. Memory stays bounded by one chunk plus the window."""
    size = path.stat().st_size
    lines: list[tuple[str, bool]] = []
    newlines = 0  # newlines consumed before the current position
    with open(path, "rb") as fh:
        while newlines < offset - 1:
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            count = chunk.count(b"\n")
            if newlines + count < offset - 1:
                newlines += count
                continue
            index = -1
            for _ in range(offset - 1 - newlines):
                index = chunk.index(b"\n", index + 1)
            newlines = offset - 1
            fh.seek(index + 1 - len(chunk), os.SEEK_CUR)
        past_end = newlines < offset - 1 or (offset > 1 and fh.tell() >= size)
        if not past_end:
            for _ in range(limit):
                raw = fh.readline(MAX_LINE_BYTES)
                if not raw:
                    break
                cut = False
                if raw.endswith(b"\n"):
                    newlines += 1
                    raw = raw[:-1]
                elif len(raw) >= MAX_LINE_BYTES:
                    cut = True
                    newlines += _skip_rest_of_line(fh)
                text = raw.decode("utf-8", errors="replace").rstrip("\r")
                if len(text) > MAX_LINE_CHARS:
                    text, cut = text[:MAX_LINE_CHARS], True
                lines.append((text, cut))
        while True:
            chunk = fh.read(CHUNK)
            if not chunk:
                break
            newlines += chunk.count(b"\n")
    total = newlines + (1 if size and not _ends_with_newline(path) else 0)
    return lines, total, past_end


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        try:
            fh.seek(-1, os.SEEK_END)
        except OSError:
            return False
        return fh.read(1) == b"\n"


async def _read_file(args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
    path = resolve_arg(ctx, args.path)
    if not path.exists():
        raise _missing_error(ctx, path)
    if path.is_dir():
        raise ToolError(f"{path} is a directory, not a file; use search_files to list it.")
    if not path.is_file():
        raise ToolError(f"{path} is not a regular file.")
    notes = []
    limit = args.limit
    if limit > READ_MAX_LIMIT:
        notes.append(f"(limit {limit} is above the maximum; clamped to {READ_MAX_LIMIT})")
        limit = READ_MAX_LIMIT
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except PermissionError:
        raise ToolError(f"Permission denied reading {path}") from None
    image_type = sniff_image(head)
    if image_type is not None:
        size = path.stat().st_size
        if size > MAX_IMAGE_BYTES:
            raise ToolError(f"{path} is an image ({image_type}, {size} bytes), too large to return (max {MAX_IMAGE_BYTES}).")
        block = image_block(path.read_bytes(), image_type)
        _remember(ctx, path)
        return ToolResult(
            [text_block(f"{path}: image ({image_type}, {size} bytes)"), block],
            display=f"{path}: image ({image_type}, {size} bytes)",
        )
    if _looks_binary(head):
        raise ToolError(
            f"{path} is a binary file ({_describe_type(path)}, {path.stat().st_size} bytes); read_file shows text only."
        )
    lines, total, past_end = await asyncio.to_thread(_read_window, path, args.offset, limit)
    _remember(ctx, path)
    if total == 0:
        return ToolResult.text(f"{path}: empty file (0 lines)")
    if past_end or not lines:
        raise ToolError(f"offset {args.offset} is past the end of {path} ({total} lines).")
    first, last = args.offset, args.offset + len(lines) - 1
    width = max(4, len(str(last)))
    body = []
    for number, (text, cut) in enumerate(lines, start=first):
        marker = " [... line cut at 2000 characters]" if cut else ""
        body.append(f"{number:>{width}}| {text}{marker}")
    header = f"{path} (lines {first}-{last} of {total})"
    parts = [header, *notes, "\n".join(body)]
    if last < total:
        parts.append(f"({total - last} more lines; continue with offset={last + 1})")
    return ToolResult.text("\n".join(parts))


# --------------------------------------------------------------------------- write / edit


def unified_diff(before: str, after: str, label: str) -> str:
    """A unified diff of ``before`` -> ``after`` with a/ b/ labels, '' when they are equal."""
    diff = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{label}" if before else "/dev/null",
        tofile=f"b/{label}",
    )
    out = []
    for line in diff:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _cap_diff(diff: str) -> str:
    if len(diff) <= MAX_DIFF_CHARS:
        return diff
    return diff[:MAX_DIFF_CHARS] + f"\n[... diff cut: {len(diff) - MAX_DIFF_CHARS} more characters ...]\n"


def _write(path: Path, text: str) -> None:
    try:
        atomic_write(path, text.encode("utf-8"))
    except OSError as error:
        raise ToolError(f"Could not write {path}: {error.strerror or error}") from None


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    if _looks_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"{path} is a binary file ({_describe_type(path)}); it cannot be edited as text.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ToolError(f"{path} is not valid UTF-8 ({error.reason} at byte {error.start}); it cannot be edited as text.") from None


def _target(ctx: ToolContext, raw: str) -> Path:
    path = resolve_arg(ctx, raw)
    if path.is_dir():
        raise ToolError(f"{path} is a directory, not a file.")
    return path


class WriteFileArgs(BaseModel):
    """Parameters of write_file."""

    path: str = Field(description="File to create or overwrite: relative to the project root, or absolute.")
    content: str = Field(description="The complete new content of the file.")


def _plan_write(args: WriteFileArgs, ctx: ToolContext) -> tuple[Path, str, str]:
    path = _target(ctx, args.path)
    before = ""
    if path.exists():
        try:
            before = _read_text(path)
        except ToolError:
            before = "(binary or non-UTF-8 content)\n"
    return path, before, args.content


async def _write_file(args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
    path = _target(ctx, args.path)
    _check_fresh(ctx, path)
    existed = path.exists()
    path, before, after = _plan_write(args, ctx)
    label = display_path(ctx, path)
    diff = unified_diff(before, after, label)
    snapshot_before_write(ctx, path)
    _write(path, after)
    record_after_write(ctx, path)
    _remember(ctx, path)
    telemetry.lines_changed(diff)  # written: the lines it changed count
    count = after.count("\n") + (1 if after and not after.endswith("\n") else 0)
    verb = "Updated" if existed else "Created"
    summary = f"{verb} {path} ({count} lines, {len(after.encode('utf-8'))} bytes)"
    if existed and not diff:
        summary += " — content unchanged"
    return ToolResult([text_block(summary + ("\n\n" + _cap_diff(diff) if diff else ""))], display=diff or summary)


async def _write_precheck(args: WriteFileArgs, ctx: ToolContext) -> None:
    """A write that would be refused, or would change nothing, fails before anyone is asked."""
    path = _target(ctx, args.path)
    _check_fresh(ctx, path)
    if path.exists():
        try:
            unchanged = path.read_bytes() == args.content.encode("utf-8")
        except OSError:
            return  # let the write itself report it
        if unchanged:
            raise NoChange(f"{display_path(ctx, path)} already has exactly this content; nothing to write.")


async def _write_preview(args: WriteFileArgs, ctx: ToolContext) -> str:
    try:
        path, before, after = _plan_write(args, ctx)
    except ToolError as error:
        return f"(this call would fail: {error})"
    return unified_diff(before, after, display_path(ctx, path)) or f"{path}: no change"


class EditFileArgs(BaseModel):
    """Parameters of edit_file."""

    path: str = Field(description="File to edit: relative to the project root, or absolute.")
    old_string: str = Field(min_length=1, description="Exact text to replace (at least 1 character, must be unique unless replace_all).")
    new_string: str = Field(description="Text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of requiring exactly one (default false).")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _plan_edit(args: EditFileArgs, ctx: ToolContext) -> tuple[Path, str, str, int]:
    path = _target(ctx, args.path)
    if not path.exists():
        raise _missing_error(ctx, path)
    before = _read_text(path)
    old, new = args.old_string, args.new_string
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change.")
    count = before.count(old)
    if count == 0 and "\r\n" in before and "\n" in old and "\r\n" not in old:
        # The model writes \n; a CRLF file should still be editable, and keep its endings.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = before.count(old)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {path}. It must match exactly, including whitespace and "
            "indentation; read the file again and copy the text."
        )
    if count > 1 and not args.replace_all:
        lines: list[int] = []
        start = 0
        while (index := before.find(old, start)) >= 0 and len(lines) < 20:
            lines.append(_line_of(before, index))
            start = index + len(old)
        where = ", ".join(str(n) for n in lines) + (", ..." if count > len(lines) else "")
        raise ToolError(
            f"old_string matches {count} times in {path} (lines {where}). Add surrounding context to make "
            "it unique, or set replace_all to true."
        )
    after = before.replace(old, new) if args.replace_all else before.replace(old, new, 1)
    return path, before, after, count if args.replace_all else 1


async def _edit_file(args: EditFileArgs, ctx: ToolContext) -> ToolResult:
    path = _target(ctx, args.path)
    if path.exists():
        _check_fresh(ctx, path)
    path, before, after, replaced = _plan_edit(args, ctx)
    diff = unified_diff(before, after, display_path(ctx, path))
    snapshot_before_write(ctx, path)
    _write(path, after)
    record_after_write(ctx, path)
    _remember(ctx, path)
    telemetry.lines_changed(diff)  # written: the lines it changed count
    summary = f"Edited {path} ({replaced} replacement{'s' if replaced != 1 else ''})"
    return ToolResult([text_block(summary + "\n\n" + _cap_diff(diff))], display=diff)


async def _edit_precheck(args: EditFileArgs, ctx: ToolContext) -> None:
    """An edit that cannot apply (file unread or changed, text not found, no change) fails before anyone is asked."""
    path = _target(ctx, args.path)
    if path.exists():
        _check_fresh(ctx, path)
    _plan_edit(args, ctx)


async def _edit_preview(args: EditFileArgs, ctx: ToolContext) -> str:
    try:
        path, before, after, _ = _plan_edit(args, ctx)
    except ToolError as error:
        return f"(this call would fail: {error})"
    return unified_diff(before, after, display_path(ctx, path))


def read_file_tool() -> ToolDefinition:
    """The read_file tool."""
    return ToolDefinition(
        name="read_file",
        description=(
            "Read a text file with numbered lines (`  12| text`). Returns the total line count and, "
            f"when more remains, the offset to continue from. Default {READ_DEFAULT_LIMIT} lines, max "
            f"{READ_MAX_LIMIT}. Images are returned as images; other binary files are refused."
        ),
        parameters=ReadFileArgs,
        execute=_read_file,
        access=BUILTIN_ACCESS["read_file"],
    )


def write_file_tool() -> ToolDefinition:
    """The write_file tool."""
    return ToolDefinition(
        name="write_file",
        description=(
            "Create a file or replace its whole content (parent directories are created). An existing "
            "file must have been read with read_file first. Returns a unified diff of the change."
        ),
        parameters=WriteFileArgs,
        execute=_write_file,
        preview=_write_preview,
        precheck=_write_precheck,
        access=BUILTIN_ACCESS["write_file"],
    )


def edit_file_tool() -> ToolDefinition:
    """The edit_file tool."""
    return ToolDefinition(
        name="edit_file",
        description=(
            "Replace exact text in a file: old_string must occur exactly once (or set replace_all). "
            "The file must have been read with read_file first. Returns a unified diff of the change."
        ),
        parameters=EditFileArgs,
        execute=_edit_file,
        preview=_edit_preview,
        precheck=_edit_precheck,
        access=BUILTIN_ACCESS["edit_file"],
    )


def _store(ctx: ToolContext) -> CheckpointStore | None:
    return ctx.deps.checkpoints


def snapshot_before_write(ctx: ToolContext, path: Path) -> None:
    """Called by file tools before they change ``path``: snapshot it for this turn.

    A snapshot that cannot be taken stops the write (ToolError): a change that could not
    be undone is not made silently.
    """
    store = _store(ctx)
    if store is None:
        return
    try:
        store.before_change(ctx.session_id, ctx.turn_id, path)
    except (CheckpointError, OSError) as error:
        raise ToolError(f"Could not checkpoint {path} before changing it, so it was not changed: {error}") from None


def record_after_write(ctx: ToolContext, path: Path) -> None:
    """Called by file tools after they changed ``path``: remember what the turn left there."""
    store = _store(ctx)
    if store is None:
        return
    try:
        store.after_change(ctx.session_id, ctx.turn_id, path)
    except (CheckpointError, OSError):
        # The change is made; without the hash undo reports no conflict for this file.
        pass
