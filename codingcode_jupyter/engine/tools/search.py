"""search_code and search_files: ripgrep over the project, with a pure-Python fallback.

ripgrep (the binary from the ``ripgrep`` package) gives .gitignore handling, binary
skipping and speed. Only the first ``max_results`` matches are parsed; the total comes from
rg's own summary, so a query with a million hits costs little more than running rg.
"""

from __future__ import annotations

import asyncio
import fnmatch
import heapq
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from pydantic import BaseModel, Field

from ..deadline import within
from .access import BUILTIN_ACCESS
from .base import ToolContext, ToolDefinition, ToolError
from .files import SKIP_DIRS, SNIFF_BYTES, display_path, resolve_arg

__all__ = [
    "SearchCodeArgs",
    "SearchFilesArgs",
    "find_rg",
    "search_code_tool",
    "search_files_tool",
]

CODE_DEFAULT, CODE_MAX = 30, 100
FILES_DEFAULT, FILES_MAX = 50, 500
MAX_MATCH_CHARS = 300
SEARCH_TIMEOUT_S = 60.0


def find_rg() -> str | None:
    """The rg binary: next to the running interpreter (the ripgrep wheel), else on PATH."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def _clamp(value: int, maximum: int, name: str, notes: list[str]) -> int:
    if value > maximum:
        notes.append(f"({name} {value} is above the maximum; clamped to {maximum})")
        return maximum
    return value


def _strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _one_line(text: str) -> str:
    text = text.rstrip("\r\n")
    if len(text) > MAX_MATCH_CHARS:
        return text[:MAX_MATCH_CHARS] + " [... cut]"
    return text


@dataclass
class _Matches:
    hits: list[tuple[str, int, str]]
    total: int
    files: int
    warnings: str = ""


class SearchCodeArgs(BaseModel):
    """Parameters of search_code."""

    pattern: str = Field(min_length=1, description="Regular expression (Rust regex syntax, like ripgrep).")
    glob: str = Field(default="**/*", description="Only files matching this glob, e.g. '*.py' or 'src/**/*.ts' (default '**/*').")
    max_results: int = Field(default=CODE_DEFAULT, ge=1, description=f"Most matching lines to return (default {CODE_DEFAULT}, max {CODE_MAX}).")


def _glob_flags(glob: str) -> list[str]:
    glob = glob.strip()
    if glob in ("", "*", "**", "**/*"):
        return []
    return ["--glob", glob]


async def _rg_search(rg: str, args: SearchCodeArgs, limit: int, root: Path) -> _Matches:
    argv = [rg, "--json", "--no-require-git", *_glob_flags(args.glob), "-e", args.pattern, "--", "."]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=root,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=1 << 24,
    )
    try:
        hits: list[tuple[str, int, str]] = []
        assert proc.stdout is not None and proc.stderr is not None
        stderr_task = asyncio.ensure_future(proc.stderr.read())
        # Parse matches until we have enough, then only keep the last line (rg's summary).
        while len(hits) < limit:
            try:
                line = await proc.stdout.readline()
            except ValueError:
                # A single match line above the stream limit (minified files): skip it; the
                # summary still counts it.
                continue
            if not line:
                break
            if not line.startswith(b'{"type":"match"'):
                continue
            data = json.loads(line)["data"]
            path = data["path"].get("text") or "<non-UTF-8 path>"
            text = data["lines"].get("text")
            if text is None:
                text = "<non-UTF-8 line>"
            hits.append((_strip_dot(path), int(data["line_number"] or 0), _one_line(text)))
        tail = b""
        while True:
            chunk = await proc.stdout.read(1 << 20)
            if not chunk:
                break
            tail = (tail + chunk)[-65536:]
        stderr = (await stderr_task).decode("utf-8", errors="replace").strip()
        code = await proc.wait()
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    total, files = len(hits), len({h[0] for h in hits})
    summary_line = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1] if tail else b""
    if summary_line.startswith(b"{"):
        try:
            summary = json.loads(summary_line)
            if summary.get("type") == "summary":
                stats = summary["data"]["stats"]
                total, files = int(stats["matched_lines"]), int(stats["searches_with_match"])
        except (ValueError, KeyError, TypeError):
            pass
    if code == 2 and not hits:
        raise ToolError(f"search_code failed: {stderr or 'ripgrep exited with an error'}")
    return _Matches(hits, total, files, warnings=stderr if code == 2 else "")


def _gitignore_patterns(root: Path) -> list[str]:
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith(("#", "!"))]


def _ignored(rel: str, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p.lstrip("/")) for p in patterns)


def _glob_match(rel: str, glob: str) -> bool:
    if not _glob_flags(glob):
        return True
    glob = glob.strip()
    if "/" not in glob:
        return fnmatch.fnmatch(rel.rsplit("/", 1)[-1], glob)
    return fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(rel, glob.replace("**/", ""))


def _walk(root: Path, glob: str) -> Iterator[tuple[str, Path]]:
    """Files under root as (relative posix path, absolute path); basic .gitignore only."""
    patterns = _gitignore_patterns(root)
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in SKIP_DIRS and not d.startswith(".") and not _ignored(rel_dir + d, d, patterns)
        )
        for name in sorted(filenames):
            rel = rel_dir + name
            if name.startswith(".") or _ignored(rel, name, patterns) or not _glob_match(rel, glob):
                continue
            yield rel, base / name


def _python_search(args: SearchCodeArgs, limit: int, root: Path) -> _Matches:
    try:
        regex = re.compile(args.pattern)
    except re.error as error:
        raise ToolError(f"search_code failed: invalid regex {args.pattern!r}: {error}") from None
    hits: list[tuple[str, int, str]] = []
    total = 0
    files = 0
    for rel, path in _walk(root, args.glob):
        try:
            with open(path, "rb") as fh:
                if b"\x00" in fh.read(SNIFF_BYTES):
                    continue
                fh.seek(0)
                matched = False
                for number, raw in enumerate(fh, start=1):
                    line = raw.decode("utf-8", errors="replace")
                    if regex.search(line.rstrip("\r\n")):
                        matched = True
                        total += 1
                        if len(hits) < limit:
                            hits.append((rel, number, _one_line(line)))
                files += matched
        except OSError:
            continue
    return _Matches(hits, total, files)


async def _search_code(args: SearchCodeArgs, ctx: ToolContext) -> str:
    notes: list[str] = []
    limit = _clamp(args.max_results, CODE_MAX, "max_results", notes)
    root = ctx.resolve(".")
    rg = find_rg()
    if rg is not None:
        result = await within(_rg_search(rg, args, limit, root), SEARCH_TIMEOUT_S)
    else:
        result = await asyncio.to_thread(_python_search, args, limit, root)
    if not result.hits:
        where = f" in files matching {args.glob!r}" if _glob_flags(args.glob) else ""
        return f"No matches for /{args.pattern}/{where}."
    hits = sorted(result.hits, key=lambda h: (h[0], h[1]))
    lines = [f"{result.total} matching line{'s' if result.total != 1 else ''} in {result.files} file{'s' if result.files != 1 else ''}"]
    lines += notes
    lines += [f"{path}:{number}: {text}" for path, number, text in hits]
    if result.total > len(hits):
        lines.append(f"({result.total - len(hits)} more not shown; narrow the pattern or glob, or raise max_results)")
    if result.warnings:
        lines.append(f"(some files could not be searched: {result.warnings[:500]})")
    return "\n".join(lines)


class SearchFilesArgs(BaseModel):
    """Parameters of search_files."""

    pattern: str = Field(min_length=1, description="Glob of file paths, e.g. '*.py', '**/test_*.py', 'src/**/*.ts'.")
    path: str = Field(default=".", description="Directory to search under (default '.', the project root).")
    max_results: int = Field(default=FILES_DEFAULT, ge=1, description=f"Most paths to return (default {FILES_DEFAULT}, max {FILES_MAX}).")


async def _rg_files(rg: str, pattern: str, root: Path) -> list[str]:
    argv = [rg, "--files", "--no-require-git", *_glob_flags(pattern), "--", "."]
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=root, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await within(proc.communicate(), SEARCH_TIMEOUT_S)
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if proc.returncode == 2 and not out:
        raise ToolError(f"search_files failed: {err.decode('utf-8', errors='replace').strip()}")
    return [_strip_dot(line) for line in out.decode("utf-8", errors="surrogateescape").splitlines() if line]


def _by_mtime(root: Path, rels: list[str]) -> list[tuple[float, str]]:
    stamped = []
    # Plain strings, not a Path per file: on thousands of matches the pathlib objects cost
    # as much as the stat calls themselves (benchmarks/bench_search.py).
    prefix = os.path.join(str(root), "")
    stat = os.stat
    for rel in rels:
        try:
            stamped.append((stat(prefix + rel).st_mtime, rel))
        except OSError:
            continue
    return stamped


def _newest_first(item: tuple[float, str]) -> tuple[float, str]:
    return -item[0], item[1]


async def _search_files(args: SearchFilesArgs, ctx: ToolContext) -> str:
    notes: list[str] = []
    limit = _clamp(args.max_results, FILES_MAX, "max_results", notes)
    root = resolve_arg(ctx, args.path)
    if not root.exists():
        raise ToolError(f"Directory not found: {root}")
    if not root.is_dir():
        raise ToolError(f"{root} is a file, not a directory; search_files searches under a directory.")
    rg = find_rg()
    if rg is not None:
        rels = await _rg_files(rg, args.pattern, root)
    else:
        rels = await asyncio.to_thread(lambda: [rel for rel, _ in _walk(root, args.pattern)])
    stamped = await asyncio.to_thread(_by_mtime, root, rels)
    if not stamped:
        return f"No files match {args.pattern!r} under {root}."
    # Only what is shown is put in order: thousands of matches, a page of them listed.
    shown = heapq.nsmallest(limit, stamped, key=_newest_first)
    header = f"{len(stamped)} file{'s' if len(stamped) != 1 else ''} match {args.pattern!r} under {root} (newest first)"
    lines = [header, *notes]
    lines += [display_path(ctx, root / rel) for _, rel in shown]
    if len(stamped) > len(shown):
        lines.append(f"({len(stamped) - len(shown)} more not shown; narrow the pattern or raise max_results)")
    return "\n".join(lines)


def search_code_tool() -> ToolDefinition:
    """The search_code tool."""
    return ToolDefinition(
        name="search_code",
        description=(
            "Search file contents with a regular expression (ripgrep: .gitignore respected, binary files "
            "skipped). Returns `path:line: text` lines, the total number of matching lines and how many "
            f"were not shown. Default {CODE_DEFAULT} results, max {CODE_MAX}."
        ),
        parameters=SearchCodeArgs,
        execute=_search_code,
        # It searches the whole project tree.
        access=BUILTIN_ACCESS["search_code"],
    )


def search_files_tool() -> ToolDefinition:
    """The search_files tool."""
    return ToolDefinition(
        name="search_files",
        description=(
            "Find files by glob under a directory (.gitignore respected), newest first by modification "
            f"time. Default {FILES_DEFAULT} results, max {FILES_MAX}."
        ),
        parameters=SearchFilesArgs,
        execute=_search_files,
        access=BUILTIN_ACCESS["search_files"],
    )
