"""The system prompt: who the agent is, where it works, and the project's own instructions.

Instruction files, in this order: the person's ``~/.claude/CLAUDE.md``; the project's
``AGENTS.md``, ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``CLAUDE.local.md`` (personal) and
``.codingcode/instructions.md``. The ``CLAUDE`` files' ``@path`` imports are followed as
Claude Code follows them (:mod:`.claude.instructions`): a project file imports only from the
project, no file imports a secret. All of it shares one size budget.
"""

from __future__ import annotations

import os
import platform
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from pydantic import BaseModel

if TYPE_CHECKING:
    from .agents.profiles import AgentProfile

__all__ = [
    "INSTRUCTION_FILES",
    "MAX_INSTRUCTION_CHARS",
    "project_instructions",
    "InstructionFile",
    "loaded_instructions",
    "build_system_prompt",
    "agent_profiles_section",
]

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md", ".codingcode/instructions.md")
# The files whose `@path` imports are followed (Claude Code's).
_IMPORTING = frozenset({"CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md", "~/.claude/CLAUDE.md"})
USER_INSTRUCTIONS = "~/.claude/CLAUDE.md"
MAX_INSTRUCTION_CHARS = 20_000

_BASE = """You are codingcode, a coding agent running inside a Jupyter kernel. You help the person \
working in this notebook with their project: you read and edit files, search code and run \
commands through your tools.

Working rules:
- Paths are relative to the project root unless absolute. Read a file before you edit it.
- Every tool call passes an approval pipeline; a person may deny a call. When a call is \
denied, do not retry the same call: adapt, or ask the person what they want.
- Prefer edit_file for small changes to existing files; keep changes minimal and explain them.
- Use todo_write to keep a short plan for multi-step work and update it as you go.
- Be concise: the answer is shown in a notebook cell, rendered as Markdown."""


class InstructionFile(BaseModel):
    """One project instruction file as it went into the system prompt (for ``%agent status``)."""

    name: str
    path: str
    chars: int  # characters of the file (with what it imports)
    used_chars: int  # characters that went into the prompt
    truncated: bool = False
    imports: list[str] = []  # the files its `@path` imports brought in
    refused: list[str] = []  # imports not followed, and why

    def describe(self) -> str:
        """One line for the person."""
        if not self.chars and self.refused:
            return f"{self.name} ({self.refused[0]})"
        cut = f", cut to {self.used_chars:,}" if self.truncated else ""
        more = f", {len(self.imports)} import(s)" if self.imports else ""
        refused = f", {len(self.refused)} import(s) refused" if self.refused else ""
        return f"{self.name} ({self.chars:,} characters{more}{cut}{refused})"


def _instruction_paths(project: Path) -> list[tuple[str, Path, Path | None]]:
    """(name, path, the directory its imports are confined to) of every instruction file, in order."""
    from .claude.files import claude_dir

    project = Path(project)
    return [(USER_INSTRUCTIONS, claude_dir() / "CLAUDE.md", None),
            *((name, project / name, project) for name in INSTRUCTION_FILES)]


def _read_instructions(project: Path) -> list[tuple[InstructionFile, str]]:
    from .claude.instructions import expand_imports, refusal

    found: list[tuple[InstructionFile, str]] = []
    budget = MAX_INSTRUCTION_CHARS
    for name, path, root in _instruction_paths(project):
        if not path.is_file() or budget <= 0:
            continue
        # The file itself is held to what it may import: a project's CLAUDE.md that is a link
        # to the person's key, or to a dotenv file, is not sent with the system prompt.
        why = refusal(Path(os.path.realpath(path)), Path(os.path.realpath(root)) if root is not None else None)
        if why is not None:
            found.append((InstructionFile(name=name, path=str(path), chars=0, used_chars=0, truncated=False,
                                          refused=[f"not read: {why}"]), ""))
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # unreadable (permissions, a dangling link): the session must still start
        if not text.strip():
            continue
        imports: list[str] = []
        refused: list[str] = []
        if name in _IMPORTING:
            expanded = expand_imports(path, text, root=root)
            text, imports, refused = expanded.text, expanded.imported, expanded.refused
        size, used = len(text), min(len(text), budget)
        if size > used:
            text = text[:used] + f"\n[... {name} cut at {used} characters ...]"
        budget -= used
        info = InstructionFile(name=name, path=str(path), chars=size, used_chars=used, truncated=size > used,
                               imports=imports, refused=refused)
        found.append((info, text))
    return found


def project_instructions(project: Path) -> list[tuple[str, str]]:
    """(file name, text) of each instruction file present, each cut to the size limit."""
    return [(info.name, text) for info, text in _read_instructions(project) if text]


def loaded_instructions(project: Path) -> list[InstructionFile]:
    """Which instruction files the system prompt takes from the project, with their sizes."""
    return [info for info, _ in _read_instructions(project)]


def agent_profiles_section(profiles: Iterable["AgentProfile"]) -> str:
    """The part of a system prompt that lists the sub-agents dispatch_agent can run ("" if none)."""
    lines = [f"- {p.name}: {' '.join(p.description.split())}" for p in profiles]
    if not lines:
        return ""
    return (
        "Sub-agents: dispatch_agent(agent, prompt) runs one of these in a fresh context and returns its "
        "final answer. It sees none of this conversation, so put everything it needs in the prompt. "
        "Several dispatch_agent calls in one message run in parallel; use that for independent "
        "searches.\n" + "\n".join(lines)
    )


def build_system_prompt(project: Path, extra: str = "", *, base: str | None = None) -> str:
    """The system prompt; ``base`` replaces the default agent description (an agent profile's body)."""
    parts = [
        _BASE if base is None else base,
        f"Project root: {project}\nPlatform: {platform.system()} {platform.release()}\nToday: {date.today().isoformat()}",
    ]
    for name, text in project_instructions(project):
        whose = "the person's own" if name == USER_INSTRUCTIONS else "the project's own"
        parts.append(f"Instructions from {name} ({whose}; follow them):\n<{name}>\n{text}\n</{name}>")
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)
