"""A command run in a throwaway copy of the project, to show what it would change before it runs.

The command runs confined as it would for real (the same masks, protections, home view and
seccomp filter, built by :class:`~.bwrap.CommandSandbox` from the same settings) with three
differences: no network (no allowlist, no proxy), no writable directory but the project, and the
project is a throwaway:

- **overlay** (bubblewrap 0.9 and later, which mounts overlays): the project is an overlay at its
  own path, its upper layer a temporary directory; what the command wrote, created or deleted is
  read from that layer afterwards (a whiteout is a deletion, an opaque directory hides what was
  below it). Nothing is copied: the cost does not grow with the project.
- **copy** (Landlock; bubblewrap without overlays): the project is copied (``cp -a
  --reflink=auto``: copy-on-write where the filesystem shares extents, btrfs and XFS) into a
  temporary directory outside the project, on its filesystem when a writable place there is known
  (the system's temp directory, else beside the project); bubblewrap mounts the copy at the
  project's own path, Landlock runs the command in the copy (absolute paths into the project are
  then not writable). A project over ``sandbox.preview.maxFiles`` / ``maxMB`` is not copied.
  The changes are the files whose ctime is at or after a marker written once the copy was done
  (a command can set an mtime back, not a ctime), compared with the project by content, plus the
  names only one side has.

The policy is the one the real command gets, which is compared after it ends (``.git`` writable but
for what git runs, the top level writable under Landlock): the throwaway is discarded, so nothing
a compare would catch can reach the host, and a stricter policy would show failures the real run
does not have. The person's deny rules name the project's own paths; in a copy elsewhere the same
files are hidden or kept read-only at their place in the copy.

``.codingcode/`` is never part of the copy or the comparison (it is read-only to commands); undo's
checkpoints are outside the project, in the person's directory, which the preview's sandbox hides
as every command's does. A repository's own files are reported as one line per ``.git``.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Literal, Mapping

from ..command_preview import CommandPreview, PreviewedFile
from ..processes import run_process
from ..settings import SandboxFilesystem, SandboxNetwork
from .bwrap import CommandSandbox
from .project_scan import ProjectScan

__all__ = ["Method", "preview_method", "copy_budget_problem", "overlay_supported", "run_preview", "MAX_LISTED"]

Method = Literal["overlay", "copy"]
# Files listed on a card; the rest are counted.
MAX_LISTED = 200
_MAX_DIFF_BYTES = 1_000_000
_MAX_DIFF_CHARS = 20_000
_OUTPUT_TAIL = 4_000
_SKIP_TOP = ".codingcode"

_overlay_cache: dict[str, bool] = {}


def overlay_supported(bwrap: str | None) -> bool:
    """Whether this bubblewrap mounts overlays (``--overlay-src``, bubblewrap 0.9); asked once per path."""
    if bwrap is None:
        return False
    if bwrap not in _overlay_cache:
        try:
            done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
            _overlay_cache[bwrap] = "--overlay-src" in (done.stdout + done.stderr)
        except (OSError, subprocess.SubprocessError):
            _overlay_cache[bwrap] = False
    return _overlay_cache[bwrap]


def preview_method(sandbox: CommandSandbox) -> Method:
    return "overlay" if sandbox.backend == "bwrap" and overlay_supported(sandbox.bwrap) else "copy"


def copy_budget_problem(project: Path, max_files: int, max_bytes: int) -> str | None:
    """Why the project is too large to copy for a preview (None: it fits), counted without reading a file."""
    files = 0
    size = 0
    for _path, info in _walk(project):
        files += 1
        if stat.S_ISREG(info.st_mode):
            size += info.st_size
        if files > max_files:
            return (
                f"the project has more than {max_files:,} files, which a preview would copy (sandbox.preview.maxFiles)"
            )
        if size > max_bytes:
            return (
                f"the project holds more than {max_bytes // (1024 * 1024):,} MB, which a preview would copy "
                "(sandbox.preview.maxMB)"
            )
    return None


def _walk(root: Path, rel: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``root`` (relative path, lstat), directories included, .codingcode left out."""
    try:
        entries = list(os.scandir(root / rel if rel else root))
    except OSError:
        return
    for entry in entries:
        name = f"{rel}/{entry.name}" if rel else entry.name
        if name == _SKIP_TOP:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        yield name, info
        if stat.S_ISDIR(info.st_mode):
            yield from _walk(root, name)


def _preview_sandbox(sandbox: CommandSandbox, project: Path) -> CommandSandbox:
    """The same sandbox for ``project``, without network and without writable directories besides it."""
    settings = sandbox.settings.model_copy(
        update={
            "network": SandboxNetwork(),
            "filesystem": sandbox.settings.filesystem.model_copy(update={"allowWrite": []}),
        }
    )
    assert isinstance(settings.filesystem, SandboxFilesystem)
    twin = CommandSandbox(
        project,
        settings,
        bwrap=sandbox.bwrap,
        unavailable_reason=None,
        allowed_env_files=sandbox.allowed_env_files,
        home=sandbox.home,
        backend=sandbox.backend or "bwrap",
        backend_reason=sandbox.backend_reason,
    )
    twin.agent_venvs = set(sandbox.agent_venvs)
    twin.host_accepted = dict(sandbox.host_accepted)
    # The project's walk (dotenv files, host-executed names) is the sandbox's own, warm: a copy holds
    # what the project holds, at its own path. A cold walk of a large project is most of a preview's cost.
    twin._scan = sandbox.project_scan if project == sandbox.project else _CopiedScan(sandbox, project)
    if project == sandbox.project:
        # Placeholders in the project itself are the sandbox's: they stay while any of its commands, real or
        # previewed, runs (removing a mount point under a live sandbox would detach its read-only mount).
        twin._placeholders = sandbox._placeholders
    return twin


class _CopiedScan(ProjectScan):
    """The project's walk, told of its copy: the same entries under the copy's path. The person's deny
    rules name the project's own paths, which the copy is not at: what they hide or keep read-only in
    the project is hidden or kept read-only at its place in the copy."""

    def __init__(self, sandbox: CommandSandbox, copy: Path) -> None:
        original = sandbox.project_scan
        super().__init__(copy, original.allowed_env_files, watch_directories=False)
        self.original = original
        self._denied_read = [path for path in sandbox.deny_read if _within(str(path), str(sandbox.project))]
        self._denied_write = [path for path, _kind in sandbox.deny_write if _within(str(path), str(sandbox.project))]

    def _moved(self, path: Path) -> Path:
        return self.project / path.relative_to(self.original.project)

    def env_files(self, learn: bool = True) -> list[Path]:
        found = self.original.env_files(learn)
        self.host_found = [self._moved(path) for path in self.original.host_found]
        self.write_denied_found = [self._moved(path) for path in [*self.original.write_denied_found, *self._denied_write]]
        return [self._moved(path) for path in dict.fromkeys([*found, *self._denied_read])]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _rebind(argv: list[str], project: Path, *, copy: Path | None, upper: Path | None, work: Path | None) -> list[str]:
    """bubblewrap's argv with the project's writable binds pointed at the throwaway: the project's own
    bind becomes the copy (or the overlay), a directory of it bound onto itself (a pin against renames)
    becomes the copy's (with an overlay it is left out: renames there reach nothing real)."""
    root = str(project)
    out: list[str] = []
    index = 0
    separator = argv.index("--") if "--" in argv else len(argv)
    while index < len(argv):
        word = argv[index]
        if index < separator and word == "--bind" and index + 2 < len(argv) and _within(argv[index + 1], root):
            source, target = argv[index + 1], argv[index + 2]
            if upper is not None and work is not None:
                if source == root and target == root:
                    out += ["--overlay-src", root, "--overlay", str(upper), str(work), root]
            else:
                assert copy is not None
                out += ["--bind", str(copy) + source[len(root) :], target]
            index += 3
            continue
        out.append(word)
        index += 1
    return out


def _make_copy(project: Path, base: Path) -> tuple[Path, int]:
    copy = base / "project"
    copy.mkdir(parents=True)
    names = [entry.name for entry in os.scandir(project) if entry.name != _SKIP_TOP]
    if names:
        done = subprocess.run(
            ["cp", "-a", "--reflink=auto", "-t", str(copy), *names],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise OSError(f"the project could not be copied: {done.stderr.strip()[:300]}")
    marker = base / "copied"
    marker.write_bytes(b"")
    return copy, marker.stat().st_ctime_ns


async def run_preview(
    sandbox: CommandSandbox, command: str, workdir: Path, *, env: Mapping[str, str], timeout: float
) -> CommandPreview:
    """Run ``command`` in ``workdir`` (inside the project) in a throwaway copy; what it would change."""
    project = sandbox.project
    method = preview_method(sandbox)
    started = time.monotonic()
    try:
        base = Path(tempfile.mkdtemp(prefix="codingcode-preview-", dir=_scratch(project)))
    except OSError as error:
        return CommandPreview(error=f"no room for the preview: {error}", method=method)
    try:
        files: list[PreviewedFile]
        if method == "overlay":
            upper, work = base / "upper", base / "work"
            upper.mkdir()
            work.mkdir()
            twin = _preview_sandbox(sandbox, project)
            with sandbox.command():
                argv = _rebind(twin.argv_for(command, workdir, thrown_away=True), project, copy=None, upper=upper, work=work)
                run = await run_process(argv, cwd=workdir, env=env, timeout=timeout)
                files = _changes_in_overlay(project, upper)
        elif sandbox.backend == "bwrap":
            twin = _preview_sandbox(sandbox, project)
            with sandbox.command():
                # The argv first: the placeholders it makes in the project are then in the copy too, and
                # the changes are read before they go.
                argv = twin.argv_for(command, workdir, thrown_away=True)
                copy, marker = _make_copy(project, base)
                argv = _rebind(argv, project, copy=copy, upper=None, work=None)
                run = await run_process(argv, cwd=workdir, env=env, timeout=timeout)
                files = _changes_in_copy(project, copy, marker)
        else:
            copy, marker = _make_copy(project, base)
            inside = copy / workdir.relative_to(project)
            twin = _preview_sandbox(sandbox, copy)
            with twin.command():
                argv = twin.argv_for(command, inside, thrown_away=True)
                run = await run_process(argv, cwd=inside, env=env, timeout=timeout)
                # The copy's own placeholders (protected paths the project lacks) are the sandbox's, not the command's.
                made = {path.relative_to(copy).as_posix() for path in twin.placeholders}
                files = [f for f in _changes_in_copy(project, copy, marker) if f.path.rstrip("/") not in made]
        tail = _tail(run.stdout.render(), run.stderr.render())
        files = _fold_git(files)
        listed = files[:MAX_LISTED]
        return CommandPreview(
            exit_code=run.returncode,
            timed_out=run.timed_out,
            files=listed,
            more_files=len(files) - len(listed),
            output_tail=tail,
            method=method,
            seconds=round(time.monotonic() - started, 3),
        )
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        return CommandPreview(error=str(error)[:500], method=method, seconds=round(time.monotonic() - started, 3))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _fold_git(files: list[PreviewedFile]) -> list[PreviewedFile]:
    """A repository's own files (objects, refs, the index, logs) as one line per ``.git``: a commit
    writes dozens of them, none of which a person reads as a diff, and they would crowd out the
    files the command changes in the work tree."""
    kept: list[PreviewedFile] = []
    folded: dict[str, dict[str, int]] = {}
    for changed in files:
        parts = changed.path.split("/")
        if ".git" in parts[:-1]:
            repo = "/".join(parts[: parts.index(".git") + 1])
            counts = folded.setdefault(repo, {"created": 0, "modified": 0, "deleted": 0})
            counts[changed.change] += 1
        else:
            kept.append(changed)
    for repo, counts in folded.items():
        said = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
        kept.append(PreviewedFile(path=repo + "/", change="modified", diff=f"{repo}: git's own files, {said}\n"))
    return sorted(kept, key=lambda f: f.path)


def _scratch(project: Path) -> str:
    """Where the throwaway goes: outside the project (its walks, the host-file compare and an overlay's
    lower layer must never meet it), on the project's filesystem when a writable place there is known
    (a copy is then reflinked where the filesystem can), else the system's temp directory."""
    system = tempfile.gettempdir()
    try:
        device = project.stat().st_dev
    except OSError:
        return system
    for place in (system, str(project.parent)):
        try:
            if os.stat(place).st_dev == device and os.access(place, os.W_OK | os.X_OK):
                return place
        except OSError:
            continue
    return system


def _tail(stdout: str, stderr: str) -> str:
    parts = []
    if stdout.strip():
        parts.append(stdout.rstrip()[-_OUTPUT_TAIL:])
    if stderr.strip():
        parts.append("[stderr]\n" + stderr.rstrip()[-_OUTPUT_TAIL:])
    return "\n".join(parts)


# -- what changed -------------------------------------------------------------------------------


def _read(path: Path) -> bytes | None:
    try:
        if path.is_symlink():
            return b"symlink -> " + os.fsencode(os.readlink(path))
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def _kinds(root: Path, rel: str = "") -> Iterator[tuple[str, bool]]:
    """Every entry under ``root`` and whether it is a directory, from the directory listing alone (no stat:
    the project's side of the comparison needs names, the copy's side says what changed)."""
    try:
        entries = list(os.scandir(root / rel if rel else root))
    except OSError:
        return
    for entry in entries:
        name = f"{rel}/{entry.name}" if rel else entry.name
        if name == _SKIP_TOP:
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        yield name, is_dir
        if is_dir:
            yield from _kinds(root, name)


def _changes_in_copy(project: Path, copy: Path, marker_ctime: int) -> list[PreviewedFile]:
    before = dict(_kinds(project))
    after = dict(_walk(copy))
    changes: list[PreviewedFile] = []
    for name in sorted(set(before) | set(after)):
        was_dir, new = before.get(name), after.get(name)
        if new is None:
            if was_dir is False:
                changes.append(
                    PreviewedFile(path=name, change="deleted", diff=_diff(name, _read(project / name), None))
                )
            continue
        if stat.S_ISDIR(new.st_mode):
            if was_dir is None and not any(os.scandir(copy / name)):
                changes.append(PreviewedFile(path=name + "/", change="created"))  # an empty directory
            continue
        if was_dir is None or was_dir:
            changes.append(PreviewedFile(path=name, change="created", diff=_diff(name, None, _read(copy / name))))
            continue
        if new.st_ctime_ns < marker_ctime:
            continue  # untouched since the copy: any change, of content or mode, moves a ctime to now
        try:
            old = os.lstat(project / name)
        except OSError:
            continue
        found = _compared(name, project / name, copy / name, old, new)
        if found is not None:
            changes.append(found)
    return changes


def _compared(
    name: str, original: Path, changed: Path, old: os.stat_result, new: os.stat_result
) -> PreviewedFile | None:
    before, after = _read(original), _read(changed)
    if before == after and stat.S_IMODE(old.st_mode) == stat.S_IMODE(new.st_mode):
        return None
    if before == after:
        mode = f"mode {stat.S_IMODE(old.st_mode):o} -> {stat.S_IMODE(new.st_mode):o}\n"
        return PreviewedFile(path=name, change="modified", diff=mode)
    return PreviewedFile(path=name, change="modified", diff=_diff(name, before, after))


def _changes_in_overlay(project: Path, upper: Path) -> list[PreviewedFile]:
    changes: list[PreviewedFile] = []
    for name, info in sorted(_walk(upper)):
        original = project / name
        if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:  # a whiteout: deleted
            if original.is_dir() and not original.is_symlink():
                changes += [
                    PreviewedFile(path=f"{name}/{sub}", change="deleted")
                    for sub, sub_info in _walk(original)
                    if not stat.S_ISDIR(sub_info.st_mode)
                ]
            else:
                changes.append(PreviewedFile(path=name, change="deleted", diff=_diff(name, _read(original), None)))
            continue
        if stat.S_ISDIR(info.st_mode):
            if _opaque(upper / name) and original.is_dir():
                kept = {sub for sub, _ in _walk(upper / name)}
                changes += [
                    PreviewedFile(path=f"{name}/{sub}", change="deleted")
                    for sub, sub_info in _walk(original)
                    if sub not in kept and not stat.S_ISDIR(sub_info.st_mode)
                ]
            continue
        if not os.path.lexists(original):
            changes.append(PreviewedFile(path=name, change="created", diff=_diff(name, None, _read(upper / name))))
        else:
            found = _compared(name, original, upper / name, original.lstat(), info)
            if found is not None:
                changes.append(found)
    return changes


def _opaque(directory: Path) -> bool:
    for attribute in ("user.overlay.opaque", "trusted.overlay.opaque"):
        try:
            if os.getxattr(directory, attribute, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _diff(name: str, before: bytes | None, after: bytes | None) -> str:
    def lines(data: bytes | None) -> list[str] | None:
        if data is None:
            return []
        if len(data) > _MAX_DIFF_BYTES or b"\x00" in data[:8192]:
            return None
        try:
            return data.decode("utf-8").splitlines(keepends=True)
        except UnicodeDecodeError:
            return None

    old, new = lines(before), lines(after)
    if old is None or new is None:

        def size(data: bytes | None) -> str:
            return "missing" if data is None else f"{len(data)} bytes"

        return f"Binary or large file {name}: {size(before)} -> {size(after)}\n"
    out = []
    for line in difflib.unified_diff(
        old,
        new,
        fromfile=f"a/{name}" if before is not None else "/dev/null",
        tofile=f"b/{name}" if after is not None else "/dev/null",
    ):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    text = "".join(out)
    if len(text) > _MAX_DIFF_CHARS:
        text = text[:_MAX_DIFF_CHARS] + f"\n[... diff cut: {len(text) - _MAX_DIFF_CHARS} more characters ...]\n"
    return text
