"""One tool call as the rules see it: its command parsed, its paths canonicalised.

Built once per call from what the tool declares it reaches (:class:`~..tools.access.ToolAccess`),
so every layer and every built-in rule judges the same facts: the simple commands bash
will run, and each path the call can reach, resolved the way the filesystem will resolve
it (symlinks, ``..``, ``~``, globs, brace lists). A tool that declares nothing about an
argument is not judged on it; an opaque tool is judged on every path any argument names.
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator
from urllib.parse import unquote, urlparse

from ..tools.access import ToolAccess
from .command_paths import command_paths
from .ipython_syntax import read_cell
from .path_refs import Access, PathRef, resolve_all
from .paths import canonical
from .python_code import PythonReading, analyse_python
from .shell_parse import ParsedCommand, SimpleCommand, parse_command

if TYPE_CHECKING:
    from ..tools.base import ToolDefinition

__all__ = ["PathRef", "Subject", "build_subject"]

# Argument names an opaque tool's value is a path under even without a slash (`{"path": "x.txt"}`).
_PATH_KEYS = frozenset({"path", "file_path", "filepath", "filename", "file", "dir", "directory", "cwd", "source",
                        "destination", "dest", "target", "paths", "files", "root", "src", "dst", "notebook_path"})


@dataclass
class Subject:
    """Everything the layers judge about one call."""

    tool: str
    name: str
    input: dict[str, Any]
    project: Path
    access: ToolAccess
    source: str
    command: ParsedCommand | None = None
    paths: list[PathRef] = field(default_factory=list)
    # What non-path rules match: the key argument, the URL, or the whole input as JSON.
    main: str | None = None
    # For a tool that runs Python code: what the code does, and the shell commands it starts,
    # each judged as a command of its own.
    code: PythonReading | None = None
    inner: list["Subject"] = field(default_factory=list)

    @property
    def read_only(self) -> bool:
        return self.access.read_only

    @property
    def rules_match_paths(self) -> bool:
        """Rules with a pattern match this call's declared paths (else its main argument)."""
        return bool(self.access.paths)

    @property
    def is_command(self) -> bool:
        return self.command is not None

    @property
    def judged_commands(self) -> list[SimpleCommand]:
        """Simple commands an allow rule must cover (`bash -c` shells are covered by their script)."""
        return [c for c in self.command.commands if not c.container] if self.command else []


def _path_like(value: str) -> bool:
    return 0 < len(value) < 4096 and "\n" not in value and (
        "/" in value or value.startswith("~") or value.startswith(".")
    )


def _walk_strings(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 6:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk_strings(item, depth + 1)
    elif isinstance(value, list):
        for item in value[:200]:
            yield from _walk_strings(item, depth + 1)


# A URL in text: a request, not a path (its `//host/...` is no file); a `file:` URL is a path.
_URL_IN_TEXT = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*)://([^\s'\"<>()`]*)")


def _without_urls(text: str) -> str:
    """``text`` with its URLs taken out, a `file:` URL's path left in their place."""
    return _URL_IN_TEXT.sub(lambda m: f" {unquote(urlparse(m.group(0)).path)} " if m.group(1).lower() == "file" else " ",
                            text)


def _opaque_paths(subject: Subject, raw_input: dict[str, Any], seen: set[str]) -> None:
    """Every path any argument names, as far as words go (`{"cmd": "cat /etc/shadow"}` included)."""
    for key, value in raw_input.items():
        if key.lower() in _PATH_KEYS:
            for text in _walk_strings(value):
                if text not in seen:
                    seen.add(text)
                    subject.paths.extend(resolve_all(subject.project, text, str(subject.project), "unknown",
                                                     f"{subject.tool} {key}"))
    code = _code_text(subject.access, raw_input) or ""
    for text in _walk_strings(raw_input):
        if "://" in text and len(text) < 100_000:
            text = _without_urls(text)
        words = [text] + (re.split(r"[\s'\"=,;:()<>|&]+", text)[:200] if len(text) < 100_000 else [])
        if text and text in code:
            words = _code_words(text, subject.access.ipython)
        for word in words:
            if word not in seen and _path_like(word):
                seen.add(word)
                subject.paths.extend(resolve_all(subject.project, word, str(subject.project), "unknown",
                                                 f"{subject.tool} argument"))


def _code_words(text: str, ipython: bool) -> list[str]:
    """What of the code an opaque tool runs the scan of its words reads: the code's string literals
    (where a path is written: in `total / len(rows)` the `/` divides) and its shell lines, whole;
    the text's words when it cannot be parsed."""
    python = read_cell(text).python if ipython else text  # a shell line is a call whose arguments are its text
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [text, *re.split(r"[\s'\"=,;:()<>|&]+", text)[:200]]
    literals = [node.value.decode("utf-8", "replace") if isinstance(node.value, bytes) else node.value
                for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))]
    words = [word for line in literals for word in [line, *re.split(r"[\s'\"=,;:()<>|&]+", line)[:200]]]
    return words[:400]  # as bounded as the scan of a text's words


def _command(subject: Subject, access: ToolAccess, raw_input: dict[str, Any]) -> None:
    assert access.command is not None
    project = subject.project
    command = raw_input.get(access.command)
    text = command if isinstance(command, str) else ""
    cwd_arg = raw_input.get(access.cwd) if access.cwd else None
    cwd = str(canonical(project, cwd_arg)) if isinstance(cwd_arg, str) and cwd_arg else str(project)
    subject.command = parse_command(text, cwd=cwd)
    if not isinstance(command, str):
        subject.command.unresolved.append("the command is missing or not a string")
    subject.paths.extend(command_paths(project, subject.command))
    if isinstance(cwd_arg, str) and cwd_arg:
        subject.paths.extend(resolve_all(project, cwd_arg, str(project), "read", "cwd"))


_COMMAND = ToolAccess(command="command", cwd="cwd")


def _code(subject: Subject, access: ToolAccess, raw_input: dict[str, Any]) -> None:
    """Python code the tool runs, read with ``ast``: its paths join the subject's, its commands are judged too."""
    assert access.code is not None
    text = _code_text(access, raw_input)
    if text is None:
        return
    project = subject.project
    cwd = _process_cwd()
    reading = analyse_python(text, home=os.path.realpath(os.path.expanduser("~")), cwd=cwd,
                             ipython=access.ipython, names=access.names)
    if cwd is None:
        reading.unresolved.append("the kernel's working directory cannot be read: where the code runs is not known")
    subject.code = reading
    for found in reading.paths:
        subject.paths.extend(resolve_all(project, found.path, str(project), found.access, f"`{found.via}` in the code"))
    for run in reading.commands:
        # Judged from where it runs: where the code's chdir moved, or the cwd the call gives it.
        inner_input = {"command": run.text, **({"cwd": run.cwd} if run.cwd is not None else {})}
        inner = Subject(tool=subject.tool, name=subject.name, input=inner_input, project=project,
                        access=_COMMAND, source=subject.source)
        _command(inner, _COMMAND, inner_input)
        subject.inner.append(inner)
        subject.paths.extend(inner.paths)


def _process_cwd() -> str | None:
    """Where code a tool runs in this process starts: the kernel's working directory, not the
    project's (a gateway starts kernels elsewhere, and an earlier `os.chdir` moved it for good)."""
    try:
        return os.path.realpath(os.getcwd())
    except OSError:
        return None


def _code_text(access: ToolAccess, raw_input: dict[str, Any]) -> str | None:
    """The code argument, and the code cells of the cells argument, as one text (cells apart by `# %%`)."""
    parts: list[str] = []
    text = raw_input.get(access.code) if access.code is not None else None
    if isinstance(text, str):
        parts.append(text)
    cells = raw_input.get(access.cells) if access.cells is not None else None
    if isinstance(cells, list):
        for cell in cells:
            if isinstance(cell, dict) and cell.get("cell_type", "code") == "code" and isinstance(cell.get("source"), str):
                parts.append(cell["source"])
    return "\n# %%\n".join(parts) if parts else None


def build_subject(tool: "ToolDefinition", raw_input: dict[str, Any], project: Path) -> Subject:
    """The facts about calling ``tool`` with ``raw_input`` in ``project``, from its declaration."""
    project = Path(os.path.realpath(project))
    access = tool.access
    display = tool.display_name or tool.name
    subject = Subject(tool=display, name=tool.name, input=dict(raw_input), project=project, access=access,
                      source=tool.source)
    if access.command is not None:
        _command(subject, access, raw_input)
    for arg in access.paths:
        value = raw_input.get(arg.name, arg.default)
        if isinstance(value, str):
            kind: Access = arg.access
            subject.paths.extend(resolve_all(project, value, str(project), kind, f"{tool.name} {arg.name}"))
    if access.url is not None:
        url = raw_input.get(access.url)
        if isinstance(url, str) and url.lower().startswith("file:"):
            local = unquote(urlparse(url).path)
            subject.paths.extend(resolve_all(project, local or "/", str(project), "read", "file URL"))
    if access.code is not None:
        _code(subject, access, raw_input)
    if access.opaque:
        _opaque_paths(subject, raw_input, {ref.raw for ref in subject.paths})
    if access.command is None:
        # A tool with no argument named for the purpose is matched on its whole input.
        subject.main = access.key_value(raw_input) if access.key_argument is not None else json.dumps(
            raw_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return subject
