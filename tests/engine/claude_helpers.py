"""The Claude-Code-shaped corpus of tests/data/claude, copied into a fresh project per test."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "data" / "claude"


def install_corpus(root: Path, monkeypatch: Any) -> tuple[Path, Path]:
    """(project, the person's Claude Code directory): the corpus in ``root``, CLAUDE_CONFIG_DIR pointed at it."""
    project = root / "project"
    shutil.copytree(CORPUS / "project", project)
    claude_dir = root / "claude-home"
    shutil.copytree(CORPUS / "home", claude_dir)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    return project, claude_dir


def fill(value: Any, **names: str) -> Any:
    """``value`` with ``{project}``, ``{claude_dir}``, ``{home}`` filled in (recursively)."""
    if isinstance(value, str):
        for key, text in names.items():
            value = value.replace("{" + key + "}", text)
        return value
    if isinstance(value, list):
        return [fill(item, **names) for item in value]
    if isinstance(value, dict):
        return {key: fill(item, **names) for key, item in value.items()}
    return value


def deny_cases(project: Path, claude_dir: Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    raw = json.loads((CORPUS / "deny_cases.json").read_text())
    return fill(raw, project=str(project), claude_dir=str(claude_dir), home=os.path.expanduser("~"))


def corpus_rules(claude_dir: Path, project: Path, action: str) -> list[str]:
    """Every rule of ``action`` the corpus's settings files write, as written."""
    rules: list[str] = []
    for path in (project / ".claude" / "settings.json", project / ".claude" / "settings.local.json",
                 claude_dir / "settings.json"):
        rules.extend(json.loads(path.read_text()).get("permissions", {}).get(action, []))
    return rules
