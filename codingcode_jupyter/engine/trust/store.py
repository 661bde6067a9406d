"""The person's trust decisions, per project and per content, in their own directory.

``<user dir>/trusted.json``: for each project (by real path) the fingerprints of the items
the person trusted and, for the record, the hash of each file they came from when trusted.
A changed item has a new fingerprint and is asked about again; the others stay trusted.

Besides the store, a project is trusted wholesale when the environment says
``CODINGCODE_TRUST=1`` (CI and scheduled runs the person sets up), or when the person's
own settings list it under ``trustedProjects`` (paths or globs).
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..atomic import atomic_write
from ..user_dir import user_dir
from .items import TrustItem

__all__ = ["TrustStore", "ProjectTrust", "ENV_VAR", "trusted_by_environment"]

ENV_VAR = "CODINGCODE_TRUST"


def trusted_by_environment() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes")


@dataclass
class ProjectTrust:
    """What the person decided about one project."""

    fingerprints: set[str] = field(default_factory=set)
    files: dict[str, str] = field(default_factory=dict)
    trusted_at: float | None = None


class TrustStore:
    """Reads and writes ``trusted.json`` (atomic, locked)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else user_dir() / "trusted.json"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"projects": {}}
        except (OSError, json.JSONDecodeError):
            # A store we cannot read trusts nothing; it is rewritten on the next decision.
            return {"projects": {}}
        return data if isinstance(data, dict) and isinstance(data.get("projects"), dict) else {"projects": {}}

    def stamp(self) -> tuple[int, int]:
        try:
            info = self.path.stat()
            return info.st_mtime_ns, info.st_size
        except FileNotFoundError:
            return -1, -1

    def project(self, project: Path) -> ProjectTrust:
        entry = self._read()["projects"].get(str(Path(os.path.realpath(project))), {})
        return ProjectTrust(set(entry.get("fingerprints", [])), dict(entry.get("files", {})), entry.get("trusted_at"))

    def _update(self, project: Path, change: Any) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._read()
            key = str(Path(os.path.realpath(project)))
            entry = data["projects"].setdefault(key, {"fingerprints": [], "files": {}})
            change(entry)
            if not entry["fingerprints"]:
                del data["projects"][key]
            atomic_write(self.path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode(), mode=0o600)

    def grant(self, project: Path, items: Iterable[TrustItem], files: dict[str, str]) -> None:
        """Trust ``items`` of ``project`` (kept with the other items trusted before)."""
        chosen = [item.fingerprint for item in items]

        def change(entry: dict[str, Any]) -> None:
            entry["fingerprints"] = sorted(set(entry.get("fingerprints", [])) | set(chosen))
            entry["files"] = {**entry.get("files", {}), **files}
            entry["trusted_at"] = time.time()

        self._update(project, change)

    def revoke(self, project: Path) -> None:
        """Forget every trust decision about ``project``."""
        self._update(project, lambda entry: entry.update(fingerprints=[], files={}))


def listed_in(patterns: Iterable[str], project: Path) -> bool:
    """True when ``project`` matches one of the person's ``trustedProjects`` entries."""
    real = str(Path(os.path.realpath(project)))
    for pattern in patterns:
        expanded = os.path.realpath(os.path.expanduser(pattern)) if not any(c in pattern for c in "*?[") \
            else os.path.expanduser(pattern)
        if real == expanded or fnmatch.fnmatchcase(real, expanded):
            return True
    return False
