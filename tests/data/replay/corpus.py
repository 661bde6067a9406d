"""The replay corpus: tool inputs coding agents really sent (commands.jsonl, README.md beside it).

Loads the rows, turns each into a call of our tools, makes a project to judge them in, and says,
by a classifier of its own that knows nothing of the judge, which commands only read inside the
project (the ones a question about is needless).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codingcode_jupyter.engine.tools.access import ToolAccess
from codingcode_jupyter.engine.tools.base import AnyArgs, ToolDefinition

__all__ = ["Row", "load", "call_of", "make_project", "reads_in_project", "CORPUS"]

CORPUS = Path(__file__).with_name("commands.jsonl")


@dataclass(frozen=True)
class Row:
    tool: str
    input: Any
    source: str
    license: str
    agent: str


def load(path: Path = CORPUS) -> list[Row]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            rows.append(Row(data["tool"], data["input"], data.get("source", ""), data.get("license", ""),
                            data.get("agent", "")))
    return rows


async def _never(args: Any, ctx: Any) -> str:
    raise AssertionError("a replayed call is judged, never run")


# Code run in the kernel, declared as the kernel's run_python declares it.
RUN_PYTHON = ToolDefinition(name="run_python", description="Python in the kernel", parameters=AnyArgs,
                            execute=_never, source="builtin", access=ToolAccess(code="code", opaque=True, ipython=True))


def call_of(row: Row) -> tuple[str | ToolDefinition, dict[str, Any]]:
    """The row as a call of our tools: (tool name or definition, input)."""
    if row.tool == "bash":
        return "execute_command", {"command": row.input}
    if row.tool == "python":
        return RUN_PYTHON, {"code": row.input}
    if row.tool in ("read_file", "write_file", "edit_file"):
        return row.tool, dict(row.input) if isinstance(row.input, dict) else {"path": row.input}
    raise ValueError(f"unknown tool {row.tool!r} in the replay corpus")


def make_project(root: Path) -> Path:
    """A small repository like the ones the agents worked in: sources, tests, an ignored .env."""
    project = root / "replay-project"
    for name, text in {"src/app.py": "x = 1\n", "tests/test_app.py": "def test_x():\n    assert True\n",
                       "README.md": "# app\n", "setup.py": "", ".gitignore": ".env\n", ".env": "KEY=1\n",
                       "docs/index.md": "docs\n"}.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "."], check=True)
    subprocess.run(["git", "-C", str(project), "-c", "user.email=r@x", "-c", "user.name=r", "commit", "-qm", "init"],
                   check=True)
    return project


# -- which commands only read inside the project, by their words alone -------------------------------

_READERS = frozenset({"cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "wc", "nl", "sort", "uniq", "cut", "tr",
                      "ls", "tree", "find", "stat", "file", "du", "diff", "echo", "printf", "pwd", "which", "sed",
                      "awk", "od", "hexdump", "xxd", "column", "basename", "dirname", "realpath", "readlink", "true",
                      "test", "[", "cd", "git", "python", "python3"})
_GIT_READS = frozenset({"status", "log", "diff", "show", "blame", "ls-files", "rev-parse", "branch", "remote",
                        "describe", "shortlog"})
_SINKS = frozenset({"2>/dev/null", ">/dev/null", "&>/dev/null", "2>&1", "1>/dev/null"})
_SECRETS = re.compile(r"(^|/)\.env|secret|credential|\.pem$|id_rsa|\.key$", re.IGNORECASE)


def _segments(command: str) -> list[list[str]] | None:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    out: list[list[str]] = [[]]
    for token in tokens:
        if token in (";", "&&", "||", "|", "&"):
            out.append([])
        else:
            out[-1].append(token)
    return [segment for segment in out if segment]


def _segment_reads(words: list[str]) -> bool:
    words = [w for w in words if w not in _SINKS]
    name, args = words[0], words[1:]
    if name not in _READERS or any(">" in w or "<" in w for w in words):
        return False
    for word in args:
        for piece in (word, word.split("=", 1)[-1]):
            if piece.startswith(("/", "~")) or ".." in piece.split("/") or _SECRETS.search(piece):
                return False
    if name in ("python", "python3"):
        return args in (["--version"], ["-V"])
    if name in ("grep", "egrep", "fgrep") and any(a.startswith("-") and not a.startswith("--") and ("r" in a or "R" in a)
                                                  or a.startswith("--recursive") for a in args):
        return False  # it reads every file under the tree, the ignored .env included: a question is due
    if name == "rg" and any(a in ("--hidden", "-uu", "-uuu") for a in args):
        return False
    if name == "sed":
        return not any(a.startswith("-i") or (a.startswith("-") and not a.startswith("--") and "i" in a) for a in args)
    if name == "find":
        return not any(a in ("-exec", "-execdir", "-delete", "-ok", "-fprint", "-fls") for a in args)
    if name == "awk":
        return not any(re.search(r"system|getline|>|\|", a) for a in args if not a.startswith("-"))
    if name == "git":
        sub = next((a for a in args if not a.startswith("-")), "")
        if sub not in _GIT_READS or any(a.startswith(("-c", "-C", "--output", "--ext-diff")) for a in args):
            return False
        rest = args[args.index(sub) + 1:]
        return sub not in ("branch", "remote") or all(a.startswith("-") and a not in ("-d", "-D", "-m", "-M")
                                                     for a in rest)
    return True


def reads_in_project(command: str) -> bool:
    """Whether a shell command only reads, and only inside the project, by its words: readers only,
    no redirect but to /dev/null, no absolute, home or parent path, no file named for secrets, no
    expansion run at run time, no here-document."""
    if any(mark in command for mark in ("$(", "`", "<<", "$", "\n")):
        return False
    segments = _segments(command)
    return bool(segments) and all(_segment_reads(words) for words in segments)
