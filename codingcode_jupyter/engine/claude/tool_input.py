"""A call's arguments and result in the shapes Claude Code's hooks know, and a hook's ``updatedInput`` back.

A Claude Code hook reads ``tool_input.file_path`` for Read/Edit/Write, ``tool_input.command``
for Bash, ``tool_input.todos`` for TodoWrite, ``tool_input.subagent_type`` for Task, and
``tool_response`` after the call. Our tools name their arguments otherwise (``path``,
``plan``, ``agent``); this module is the one place that knows both. Arguments Claude Code's
tool does not have (``cwd`` of execute_command, ``max_length`` of fetch_url) are not sent,
and are kept from the original call when a hook's ``updatedInput`` comes back. A tool
Claude Code has no counterpart for (run_python, a custom tool) and every MCP tool is sent
its own arguments unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

__all__ = ["to_claude_input", "from_claude_input", "to_claude_response"]


def _absolute(project: Path, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return os.path.normpath(os.path.join(str(project), os.path.expanduser(value)))


def _pick(source: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``source``'s keys renamed by ``names`` (ours -> theirs), those present only."""
    return {theirs: source[ours] for ours, theirs in names.items() if ours in source}


def _first_line(text: Any, limit: int = 60) -> str:
    line = str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""
    return line[:limit]


def _todos_out(plan: Any) -> list[dict[str, Any]]:
    steps = plan if isinstance(plan, list) else []
    return [{"content": s.get("step", ""), "status": s.get("status", "pending"), "activeForm": s.get("step", "")}
            for s in steps if isinstance(s, dict)]


def _todos_in(todos: Any) -> list[dict[str, Any]]:
    items = todos if isinstance(todos, list) else []
    return [{"step": t.get("content") or t.get("activeForm") or "", "status": t.get("status", "pending")}
            for t in items if isinstance(t, dict)]


_Out = Callable[[dict[str, Any], Path], dict[str, Any]]
_In = Callable[[dict[str, Any]], dict[str, Any]]


def _file_out(extra: dict[str, str]) -> _Out:
    def out(ours: dict[str, Any], project: Path) -> dict[str, Any]:
        shaped = {"file_path": _absolute(project, ours.get("path"))} if "path" in ours else {}
        return {**shaped, **_pick(ours, extra)}
    return out


def _file_in(extra: dict[str, str]) -> _In:
    def back(theirs: dict[str, Any]) -> dict[str, Any]:
        shaped = {"path": theirs["file_path"]} if "file_path" in theirs else {}
        return {**shaped, **{ours: theirs[t] for ours, t in extra.items() if t in theirs}}
    return back


def _renamed(names: dict[str, str]) -> tuple[_Out, _In]:
    return (lambda ours, project: _pick(ours, names),
            lambda theirs: {ours: theirs[t] for ours, t in names.items() if t in theirs})


def _search_out(ours: dict[str, Any], project: Path) -> dict[str, Any]:
    shaped = _pick(ours, {"pattern": "pattern"})
    if "path" in ours:
        shaped["path"] = _absolute(project, ours["path"])
    return shaped


_SHAPES: dict[str, tuple[_Out, _In]] = {
    "execute_command": _renamed({"command": "command", "description": "description", "timeout_ms": "timeout",
                                 "run_in_background": "run_in_background"}),
    "read_file": (_file_out({"offset": "offset", "limit": "limit"}), _file_in({"offset": "offset", "limit": "limit"})),
    "write_file": (_file_out({"content": "content"}), _file_in({"content": "content"})),
    "edit_file": (_file_out({"old_string": "old_string", "new_string": "new_string", "replace_all": "replace_all"}),
                  _file_in({"old_string": "old_string", "new_string": "new_string", "replace_all": "replace_all"})),
    "search_files": (_search_out, lambda theirs: {k: theirs[k] for k in ("pattern", "path") if k in theirs}),
    "search_code": _renamed({"pattern": "pattern", "glob": "glob", "max_results": "head_limit"}),
    "fetch_url": _renamed({"url": "url"}),
    "web_search": _renamed({"query": "query"}),
    "tool_search": _renamed({"query": "query", "max_results": "max_results"}),
    "todo_write": (lambda ours, project: {"todos": _todos_out(ours.get("plan"))},
                   lambda theirs: {"plan": _todos_in(theirs.get("todos"))} if "todos" in theirs else {}),
    "dispatch_agent": (lambda ours, project: {"description": _first_line(ours.get("prompt")),
                                              "prompt": ours.get("prompt", ""), "subagent_type": ours.get("agent", "")},
                       lambda theirs: {**({"agent": theirs["subagent_type"]} if "subagent_type" in theirs else {}),
                                       **({"prompt": theirs["prompt"]} if "prompt" in theirs else {})}),
}


def to_claude_input(tool: str, ours: dict[str, Any], project: Path) -> dict[str, Any]:
    """Our ``tool``'s arguments as Claude Code's tool of that name takes them."""
    shape = _SHAPES.get(tool)
    return dict(ours) if shape is None else shape[0](ours, Path(project))


def from_claude_input(tool: str, theirs: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
    """A Claude Code hook's ``updatedInput`` for our ``tool``, as our arguments.

    Claude Code's ``updatedInput`` replaces the arguments it names; ours that Claude Code's
    tool does not have keep their original values.
    """
    shape = _SHAPES.get(tool)
    if shape is None:
        return dict(theirs)
    return {**original, **shape[1](theirs)}


def to_claude_response(tool: str, ours: dict[str, Any], text: str, is_error: bool, project: Path) -> Any:
    """What Claude Code's hooks get as ``tool_response`` for our ``tool``'s result ``text``."""
    path = _absolute(Path(project), ours.get("path")) if "path" in ours else None
    if tool == "execute_command":
        return {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
    if tool == "read_file":
        return {"type": "text", "file": {"filePath": path, "content": text}}
    if tool == "write_file":
        return {"filePath": path, "content": ours.get("content", ""), "success": not is_error}
    if tool == "edit_file":
        return {"filePath": path, "oldString": ours.get("old_string", ""), "newString": ours.get("new_string", ""),
                "replaceAll": bool(ours.get("replace_all", False)), "success": not is_error}
    return text
