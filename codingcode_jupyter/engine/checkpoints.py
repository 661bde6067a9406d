"""Checkpoints: what a turn changed, so ``%agent undo`` can put it back.

Two records per turn, under :func:`~.user_dir.checkpoints_dir` ``/<session>/<turn>/`` (outside the
project, in the person's directory). Before a file tool
first changes a file, the file is snapshotted (its bytes and mode, or the fact that it did
not exist; files outside the project too) and after each change the hash of what the turn
left is recorded. And before the turn's first call that can change files — a command,
run_python, a custom or MCP tool that is not read-only — the whole project is committed to
the shadow repository (:mod:`.snapshots`), and again when the turn ends, so what commands
changed is covered too. Being on disk, a checkpoint outlives a
kernel restart. Undo restores the newest turn not undone yet: files the turn created are
deleted, the others get their old bytes and mode back. A file changed again since the turn
(by a person, a later command...) is a conflict: undo refuses unless forced, so it never
silently throws away work that is not the agent's.

The manifest lives on disk, where a process of the person's (or an unsandboxed command) could
rewrite it, so nothing in it is trusted blindly: blob names must be plain file names in the turn's own folder, blobs
must match their recorded hash, and paths outside the project (re-resolved at undo time,
so a symlink swapped in since cannot redirect a restore) are refused unless allowed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from pydantic import BaseModel, Field, ValidationError

from .approval.audit import AuditLog
from .approval.audit_records import UndoRecord
from .atomic import atomic_write
from .paths import is_within
from .snapshots import ShadowRepo, SnapshotError
from .user_dir import checkpoints_dir, legacy_checkpoints_dir

if TYPE_CHECKING:
    pass

__all__ = [
    "CheckpointError",
    "FileSnapshot",
    "TurnCheckpoint",
    "FileRestore",
    "UndoPlan",
    "CheckpointStore",
    "checkpoints_dir",
    "KERNEL_VARIABLES",
]

# A limit a front that restores the variables itself leaves out of what it shows.
KERNEL_VARIABLES = "the kernel's variables"
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_BLOB_NAME = re.compile(r"^[0-9]{1,6}$")
# Diffs of text files only; larger or binary content is summarised by size.
_MAX_DIFF_BYTES = 2_000_000
_MAX_DIFF_CHARS = 40_000


class CheckpointError(Exception):
    """A checkpoint cannot be taken, read or restored; the message says why."""


def _adopt_legacy(project: Path) -> None:
    """Checkpoints an earlier version kept inside the project move to their place outside it, so
    undo still finds them; left where they are (and still read there) if the move fails."""
    legacy, root = legacy_checkpoints_dir(project), checkpoints_dir(project)
    if not legacy.is_dir() or root.exists():
        return
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(legacy), str(root))
    except OSError:
        pass


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class FileSnapshot(BaseModel):
    """One file as it was before the turn changed it."""

    path: str
    existed: bool
    mode: int | None = None
    blob: str | None = None
    sha256: str | None = None
    size: int = 0
    # What the turn's last change left in the file; None until the change is done.
    after_sha256: str | None = None
    after_exists: bool = True


class TurnCheckpoint(BaseModel):
    """Everything one turn changed, as recorded on disk."""

    session_id: str
    turn_id: int
    created: str
    files: list[FileSnapshot] = Field(default_factory=list)
    undone: str | None = None
    # Shadow-repository commits of the whole project: before the turn's first change, and at its end.
    before_tree: str | None = None
    after_tree: str | None = None
    # Why the project could not be snapshotted (undo then covers file edits only).
    snapshot_error: str | None = None

    @property
    def has_changes(self) -> bool:
        return bool(self.files) or self.before_tree is not None

    @property
    def label(self) -> str:
        return f"session {self.session_id}, turn {self.turn_id}"


class FileRestore(BaseModel):
    """What undo will do to one file, with the diff a person reads before it happens."""

    path: str
    action: Literal["restore", "delete", "unchanged", "refused"]
    diff: str = ""
    conflict: str | None = None
    refused: str | None = None


class UndoPlan(BaseModel):
    """The restores of one turn's checkpoint, checked against the files as they are now."""

    checkpoint: TurnCheckpoint
    files: list[FileRestore]
    # What undo cannot take back, said plainly.
    limits: list[str] = Field(default_factory=list)

    @property
    def conflicts(self) -> list[FileRestore]:
        return [item for item in self.files if item.conflict]

    @property
    def refused(self) -> list[FileRestore]:
        return [item for item in self.files if item.action == "refused"]

    def render(self) -> str:
        """The plan as text: one line per file, then the diffs."""
        lines = [f"Undo {self.checkpoint.label} ({len(self.files)} file{'s' if len(self.files) != 1 else ''}):"]
        for item in self.files:
            note = f" — CONFLICT: {item.conflict}" if item.conflict else ""
            note += f" — REFUSED: {item.refused}" if item.refused else ""
            lines.append(f"  {item.action:<9} {item.path}{note}")
        lines.extend(f"  (cannot undo: {limit})" for limit in self.limits)
        diffs = [item.diff for item in self.files if item.diff]
        return "\n".join(lines) + ("\n\n" + "".join(diffs) if diffs else "")


def _diff(path: str, current: bytes | None, restored: bytes | None) -> str:
    import difflib

    def text(data: bytes | None) -> list[str] | None:
        if data is None:
            return []
        if len(data) > _MAX_DIFF_BYTES or b"\x00" in data[:8192]:
            return None
        try:
            return data.decode("utf-8").splitlines(keepends=True)
        except UnicodeDecodeError:
            return None

    before, after = text(current), text(restored)
    if before is None or after is None:
        def size(d: bytes | None) -> str:
            return "missing" if d is None else f"{len(d)} bytes"

        return f"Binary or large file {path}: {size(current)} -> {size(restored)}\n"
    out = []
    for line in difflib.unified_diff(
        before, after,
        fromfile=f"a/{path.lstrip('/')}" if current is not None else "/dev/null",
        tofile=f"b/{path.lstrip('/')}" if restored is not None else "/dev/null",
    ):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    diff = "".join(out)
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + f"\n[... diff cut: {len(diff) - _MAX_DIFF_CHARS} more characters ...]\n"
    return diff


class CheckpointStore:
    """Snapshots of the files each turn changes, and undo of the newest turn."""

    def __init__(self, project: Path | str, shadow: ShadowRepo | None = None) -> None:
        self.project = Path(os.path.realpath(project))
        _adopt_legacy(self.project)
        legacy = legacy_checkpoints_dir(self.project)
        moved = not legacy.is_dir() or checkpoints_dir(self.project).exists()
        self.root = checkpoints_dir(self.project) if moved else legacy
        self.shadow = shadow if shadow is not None else ShadowRepo(self.project, checkpoints=self.root)
        # Sub-agents of one turn may write concurrently; the manifest is read-modify-write.
        self._lock = threading.Lock()

    # -- where things are -------------------------------------------------------------------

    def _shown(self, target: Path | str) -> str:
        """How a diff header names ``target``: relative to the project (as git does), else in full."""
        try:
            return Path(os.path.realpath(target)).relative_to(self.project).as_posix()
        except ValueError:
            return str(target)

    def turn_dir(self, session_id: str, turn_id: int) -> Path:
        if not _SAFE_ID.match(session_id or ""):
            raise CheckpointError(f"Invalid session id for a checkpoint: {session_id!r}")
        if not isinstance(turn_id, int) or turn_id < 0:
            raise CheckpointError(f"Invalid turn id for a checkpoint: {turn_id!r}")
        return self.root / session_id / str(turn_id)

    def _manifest(self, turn_dir: Path) -> Path:
        return turn_dir / "manifest.json"

    def _load(self, turn_dir: Path) -> TurnCheckpoint | None:
        path = self._manifest(turn_dir)
        if not path.exists():
            return None
        try:
            return TurnCheckpoint.model_validate_json(path.read_bytes())
        except (ValidationError, ValueError) as error:
            raise CheckpointError(f"Damaged checkpoint manifest {path}: {error}") from None

    def _save(self, turn_dir: Path, checkpoint: TurnCheckpoint) -> None:
        atomic_write(self._manifest(turn_dir), checkpoint.model_dump_json(indent=1).encode(), 0o600)

    # -- recording ----------------------------------------------------------------------------

    def before_change(self, session_id: str, turn_id: int, path: Path | str) -> bool:
        """Snapshot ``path`` unless this turn already did; True when a snapshot was taken."""
        path = Path(os.path.realpath(path))
        turn_dir = self.turn_dir(session_id, turn_id)
        with self._lock:
            checkpoint = self._load(turn_dir) or TurnCheckpoint(session_id=session_id, turn_id=turn_id, created=_now())
            if any(item.path == str(path) for item in checkpoint.files):
                return False
            snapshot = FileSnapshot(path=str(path), existed=path.exists())
            if snapshot.existed:
                if not path.is_file():
                    raise CheckpointError(f"{path} is not a regular file; it cannot be snapshotted.")
                blob = str(len(checkpoint.files))
                data = path.read_bytes()
                atomic_write(turn_dir / "blobs" / blob, data, 0o600)
                snapshot.mode = stat.S_IMODE(path.stat().st_mode)
                snapshot.blob = blob
                snapshot.sha256 = hashlib.sha256(data).hexdigest()
                snapshot.size = len(data)
            checkpoint.files.append(snapshot)
            self._save(turn_dir, checkpoint)
            return True

    def after_change(self, session_id: str, turn_id: int, path: Path | str) -> None:
        """Record what the turn left in ``path`` (so a later change by someone else shows)."""
        path = Path(os.path.realpath(path))
        turn_dir = self.turn_dir(session_id, turn_id)
        with self._lock:
            checkpoint = self._load(turn_dir)
            if checkpoint is None:
                return
            for item in checkpoint.files:
                if item.path == str(path):
                    item.after_exists = path.exists()
                    item.after_sha256 = _sha256_file(path) if item.after_exists and path.is_file() else None
            self._save(turn_dir, checkpoint)

    def before_call(self, session_id: str, turn_id: int) -> None:
        """Snapshot the whole project before the turn's first call that can change files (once a turn)."""
        turn_dir = self.turn_dir(session_id, turn_id)
        with self._lock:
            checkpoint = self._load(turn_dir) or TurnCheckpoint(session_id=session_id, turn_id=turn_id, created=_now())
            if checkpoint.before_tree is not None or checkpoint.snapshot_error is not None:
                return
            try:
                checkpoint.before_tree = self.shadow.snapshot()
            except (SnapshotError, OSError, subprocess.SubprocessError) as error:
                checkpoint.snapshot_error = str(error)
            self._save(turn_dir, checkpoint)

    def warm(self) -> None:
        """Take the project's first snapshot ahead of need (the slow one: every file is new to it)."""
        with self._lock:
            if self.shadow.available and not (self.shadow.git_dir / "HEAD").exists():
                try:
                    self.shadow.snapshot()
                except (SnapshotError, OSError, subprocess.SubprocessError):
                    pass  # the turn's own snapshot will say what is wrong

    def after_turn(self, session_id: str, turn_id: int) -> None:
        """Snapshot what the turn left, so a later change by someone else shows as a conflict."""
        turn_dir = self.turn_dir(session_id, turn_id)
        with self._lock:
            checkpoint = self._load(turn_dir)
            if checkpoint is None or checkpoint.before_tree is None:
                return
            try:
                checkpoint.after_tree = self.shadow.snapshot()
            except (SnapshotError, OSError, subprocess.SubprocessError) as error:
                checkpoint.snapshot_error = str(error)
            self._save(turn_dir, checkpoint)

    # -- reading -------------------------------------------------------------------------------

    def checkpoints(self, session_id: str | None = None) -> list[TurnCheckpoint]:
        """Recorded turns, oldest first (of one session, or of every session)."""
        if not self.root.is_dir():
            return []
        sessions = [self.root / session_id] if session_id else sorted(p for p in self.root.iterdir() if p.is_dir())
        found = []
        for session_dir in sessions:
            if not session_dir.is_dir():
                continue
            for turn_dir in session_dir.iterdir():
                if turn_dir.is_dir() and turn_dir.name.isdigit():
                    checkpoint = self._load(turn_dir)
                    if checkpoint is not None and checkpoint.has_changes:
                        found.append(checkpoint)
        return sorted(found, key=lambda c: (c.created, c.session_id, c.turn_id))

    def latest(self, session_id: str | None = None) -> TurnCheckpoint | None:
        """The newest turn with changes that has not been undone."""
        pending = [c for c in self.checkpoints(session_id) if c.undone is None]
        return pending[-1] if pending else None

    def turn(self, session_id: str, turn_id: int) -> TurnCheckpoint:
        """One turn's checkpoint (``%agent undo --turn N``); CheckpointError when it changed nothing."""
        checkpoint = self._load(self.turn_dir(session_id, turn_id))
        if checkpoint is None or not checkpoint.has_changes:
            raise CheckpointError(f"Turn {turn_id} of session {session_id} changed no file: nothing to undo.")
        if checkpoint.undone is not None:
            raise CheckpointError(f"Turn {turn_id} of session {session_id} was undone already ({checkpoint.undone}).")
        return checkpoint

    # -- undo -------------------------------------------------------------------------------------

    def _blob(self, checkpoint: TurnCheckpoint, item: FileSnapshot) -> bytes:
        if item.blob is None or not _BLOB_NAME.match(item.blob):
            raise CheckpointError(f"Checkpoint entry for {item.path} names an invalid blob {item.blob!r}.")
        blob = self.turn_dir(checkpoint.session_id, checkpoint.turn_id) / "blobs" / item.blob
        try:
            data = blob.read_bytes()
        except OSError as error:
            raise CheckpointError(f"Snapshot of {item.path} is missing ({blob}: {error.strerror}).") from None
        if item.sha256 is None or hashlib.sha256(data).hexdigest() != item.sha256:
            raise CheckpointError(f"Snapshot of {item.path} does not match its recorded hash; it was altered.")
        return data

    def _target(self, item: FileSnapshot, allow_outside: bool) -> tuple[Path | None, str | None]:
        raw = Path(item.path)
        if not raw.is_absolute():
            return None, "the recorded path is not absolute"
        # Resolved again now: a directory swapped for a symlink since must not redirect us.
        resolved = Path(os.path.realpath(raw))
        if not allow_outside and not is_within(resolved, self.project):
            return None, f"{resolved} is outside the project {self.project} (allow it explicitly to restore it)"
        if resolved != raw and not allow_outside:
            return None, f"{raw} now resolves to {resolved} (a symlink changed since the turn)"
        if resolved.exists() and not resolved.is_file():
            return None, f"{resolved} is no longer a regular file"
        return resolved, None

    def plan_undo(self, checkpoint: TurnCheckpoint | None = None, *, allow_outside: bool = False) -> UndoPlan:
        """What undoing ``checkpoint`` (default: the newest) will do, with diffs and conflicts."""
        checkpoint = checkpoint or self.latest()
        if checkpoint is None:
            raise CheckpointError("Nothing to undo: no turn has changed a file yet (or every change was undone).")
        items = []
        for item in checkpoint.files:
            target, refused = self._target(item, allow_outside)
            if target is None:
                items.append(FileRestore(path=item.path, action="refused", refused=refused))
                continue
            current = target.read_bytes() if target.exists() else None
            restored = self._blob(checkpoint, item) if item.existed else None
            conflict = None
            now_sha = hashlib.sha256(current).hexdigest() if current is not None else None
            if item.after_sha256 is None and item.after_exists:
                conflict = None  # the change never completed; whatever is there is restored
            elif (now_sha if current is not None else None) != (item.after_sha256 if item.after_exists else None):
                conflict = "changed since the turn (edited by someone else or a later command)"
            action: Literal["restore", "delete", "unchanged"]
            if current == restored:
                action = "unchanged"
                conflict = None
            elif restored is None:
                action = "delete"
            else:
                action = "restore"
            diff = _diff(self._shown(target), current, restored) if action != "unchanged" else ""
            items.append(FileRestore(path=str(target), action=action, diff=diff, conflict=conflict))
        items.extend(self._tree_restores(checkpoint, {item.path for item in items}))
        return UndoPlan(checkpoint=checkpoint, files=items, limits=self._limits(checkpoint))

    def _limits(self, checkpoint: TurnCheckpoint) -> list[str]:
        limits = ["changes outside the project made by commands or code", KERNEL_VARIABLES, "anything sent over the network",
                  "files .gitignore ignores, dotenv files, files over "
                  f"{self.shadow.max_file_bytes // (1024 * 1024)} MB and nested git repositories, when a command changed them"]
        if checkpoint.snapshot_error:
            limits.insert(0, f"what commands changed in this turn ({checkpoint.snapshot_error})")
        return limits

    def _tree_restores(self, checkpoint: TurnCheckpoint, done: set[str]) -> list[FileRestore]:
        """What the shadow snapshots say the turn changed in the project, besides the file tools' own records."""
        if checkpoint.before_tree is None:
            return []
        after = checkpoint.after_tree
        if after is None:  # the turn is still running or ended abruptly: what is there now is what it left
            after = self.shadow.snapshot()
        items = []
        changes = [c for c in self.shadow.changes(checkpoint.before_tree, after) if str(self.project / c.path) not in done]
        befores = self.shadow.files(checkpoint.before_tree, [c.path for c in changes])
        lefts = self.shadow.files(after, [c.path for c in changes])
        for change in changes:
            target = self.project / change.path
            before, left = befores.get(change.path), lefts.get(change.path)
            current = self.shadow.current(change.path)
            restored = before[0] if before is not None else None
            conflict = None
            if current != (left[0] if left is not None else None):
                conflict = "changed since the turn (edited by someone else or a later command)"
            if current == restored:
                continue  # already as it was (a placeholder the sandbox made and removed, a change undone by hand)
            action: Literal["restore", "delete"] = "delete" if restored is None else "restore"
            items.append(FileRestore(path=str(target), action=action, diff=_diff(self._shown(target), current, restored),
                                     conflict=conflict))
        return items

    def _restore_from_tree(self, checkpoint: TurnCheckpoint, restore: FileRestore) -> None:
        target = Path(restore.path)
        if restore.action == "delete":
            target.unlink(missing_ok=True)
        elif restore.action == "restore" and checkpoint.before_tree is not None:
            found = self.shadow.read(checkpoint.before_tree, target.relative_to(self.project).as_posix())
            if found is not None:
                atomic_write(target, found[0], found[1])

    def undo(
        self,
        plan: UndoPlan | None = None,
        *,
        force: bool = False,
        allow_outside: bool = False,
        audit: AuditLog | None = None,
        actor: str = "user",
        names: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> UndoPlan:
        """Carry out ``plan`` (default: plan the newest turn) and write an audit record.

        Refuses the whole undo (changing nothing) when a file conflicts, unless ``force``,
        or when an entry was refused; a partial restore would leave a mix of two states.
        ``names``: the front's restore of the turn's variables, run once the files are back; what
        it returns is recorded in the same audit record.
        """
        plan = plan or self.plan_undo(allow_outside=allow_outside)
        if plan.refused:
            reasons = "; ".join(f"{item.path}: {item.refused}" for item in plan.refused)
            raise CheckpointError(f"Undo refused, nothing was changed: {reasons}")
        if plan.conflicts and not force:
            paths = ", ".join(item.path for item in plan.conflicts)
            raise CheckpointError(
                f"Undo stopped, nothing was changed: {paths} changed after the turn; undoing would lose "
                "those later changes. Force it to restore anyway."
            )
        checkpoint = plan.checkpoint
        snapshots = {item.path: item for item in checkpoint.files}
        done: list[dict[str, Any]] = []
        for restore in plan.files:
            target = Path(restore.path)
            item = snapshots.get(restore.path) or next(
                (s for s in checkpoint.files if os.path.realpath(s.path) == restore.path), None)
            if item is None:
                self._restore_from_tree(checkpoint, restore)
                done.append({"path": restore.path, "action": restore.action, "conflict": restore.conflict})
                continue
            if restore.action == "delete":
                target.unlink(missing_ok=True)
            elif restore.action == "restore":
                atomic_write(target, self._blob(checkpoint, item), item.mode if item.mode is not None else 0o644)
            elif restore.action == "unchanged" and item.existed and item.mode is not None and target.exists():
                os.chmod(target, item.mode)
            done.append({"path": restore.path, "action": restore.action, "conflict": restore.conflict})
        turn_dir = self.turn_dir(checkpoint.session_id, checkpoint.turn_id)
        with self._lock:
            stored = self._load(turn_dir) or checkpoint
            stored.undone = _now()
            self._save(turn_dir, stored)
        plan.checkpoint.undone = stored.undone
        restored_names = names() if names is not None else []
        (audit or AuditLog(self.project)).append(UndoRecord(session_id=checkpoint.session_id, turn_id=checkpoint.turn_id,
                                                            by=actor, forced=bool(force and plan.conflicts), files=done,
                                                            names=restored_names))
        return plan
