"""The offline demo model: a short, deterministic coding session on the user's real project.

It answers through the same loop, tools and approval pipeline as Claude would: it looks for
Python files, reads one, writes a todo list, proposes a new file (which a person approves
or denies) and runs it. Each step is decided from what the conversation holds so far, so a
denial or an error changes what it does next, as a real model's would.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from ..events import Usage
from .base import ModelRequest, ModelResponse, TextCallback

__all__ = ["DemoModel", "DEMO_FILE"]

DEMO_FILE = "codingcode_demo.py"

_SCRIPT = '''"""Written by the codingcode-jupyter demo: a tiny summary of {target}."""
import ast
import pathlib

path = pathlib.Path({target!r})
source = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
print(f"{{path}}: {{len(source.splitlines())}} lines")
try:
    tree = ast.parse(source)
except SyntaxError as error:
    print(f"could not parse it: {{error}}")
else:
    names = [node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    print("defines:", ", ".join(names) if names else "nothing yet")
'''


def _turn_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the current turn, each with its result text and error flag."""
    start = 0
    for index, message in enumerate(messages):
        if message["role"] == "user" and any(b.get("type") == "text" for b in message["content"]):
            start = index
    calls: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    for message in messages[start:]:
        for block in message["content"]:
            if block.get("type") == "tool_use":
                calls.append({"id": block["id"], "name": block["name"], "input": block["input"]})
            elif block.get("type") == "tool_result":
                content = block.get("content")
                text = content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content or [])
                results[block["tool_use_id"]] = {"text": text, "is_error": bool(block.get("is_error"))}
    for call in calls:
        call.update(results.get(call["id"], {"text": "", "is_error": True}))
    return calls


def _prompt(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message["role"] == "user":
            texts = [b["text"] for b in message["content"] if b.get("type") == "text"]
            if texts:
                return texts[-1].strip()
    return ""


class DemoModel:
    """A scripted model; see the module docstring."""

    name = "demo"

    def __init__(self, *, delay: float = 0.004) -> None:
        self._delay = delay
        self._ids = 0

    async def count_tokens(self, request: ModelRequest) -> int | None:
        return len(json.dumps(request.model_dump())) // 4

    async def stream(self, request: ModelRequest, on_text: TextCallback) -> ModelResponse:
        text, call = self._next_step(request)
        for i in range(0, len(text), 6):
            on_text(text[i : i + 6])
            await asyncio.sleep(self._delay)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        if call is not None:
            self._ids += 1
            content.append({"type": "tool_use", "id": f"toolu_demo_{self._ids:03d}_{len(request.messages)}", "name": call[0], "input": call[1]})
        usage = Usage(input_tokens=len(json.dumps(request.messages)) // 4, output_tokens=max(1, len(text) // 4))
        return ModelResponse(content=content, stop_reason="tool_use" if call else "end_turn", usage=usage)

    def _next_step(self, request: ModelRequest) -> tuple[str, tuple[str, dict[str, Any]] | None]:
        offered = {tool["name"] for tool in request.tools}
        calls = _turn_calls(request.messages)
        done = [c["name"] for c in calls]
        prompt = _prompt(request.messages)

        if not calls:
            intro = (
                "I'm the offline **demo model**: no API key is needed, and what follows is a scripted session on your "
                "real project, through the real tools and approval pipeline.\n\n"
            )
            if prompt:
                intro += f"You asked: *{prompt[:200]}*. I'll show how I'd start: by looking around.\n\n"
            return intro, ("search_files", {"pattern": "**/*.py", "max_results": 20})

        target = self._target(calls)
        if "read_file" not in done and target and "read_file" in offered:
            return f"Let me read `{target}`.\n\n", ("read_file", {"path": target, "limit": 60})
        if done.count("todo_write") == 0:
            plan = [
                {"step": "Look around the project", "status": "completed"},
                {"step": f"Write {DEMO_FILE}, a summary script", "status": "in_progress"},
                {"step": "Run it and report", "status": "pending"},
            ]
            return "Here is my plan.\n\n", ("todo_write", {"plan": plan})
        if "write_file" not in done:
            script = _SCRIPT.format(target=target or DEMO_FILE)
            return (
                f"I'll add `{DEMO_FILE}`. Writing a file needs your approval: the card shows the exact diff.\n\n",
                ("write_file", {"path": DEMO_FILE, "content": script}),
            )
        write = next(c for c in calls if c["name"] == "write_file")
        if write["is_error"]:
            # A denial's text is addressed to the model; the demo says in its own words what happened.
            why = "it was not approved" if write["text"].startswith("Denied") else _first_line(write["text"])
            return (
                f"The file was not written ({why}), so I won't run anything. "
                "That is the approval pipeline doing its job: nothing changes without your say.", None
            )
        if "execute_command" not in done:
            return "Now let me run it; commands need approval too.\n\n", (
                "execute_command",
                {"command": f"python3 {DEMO_FILE}", "timeout_ms": 30000},
            )
        if done.count("todo_write") == 1:
            plan = [
                {"step": "Look around the project", "status": "completed"},
                {"step": f"Write {DEMO_FILE}, a summary script", "status": "completed"},
                {"step": "Run it and report", "status": "completed"},
            ]
            return "", ("todo_write", {"plan": plan})
        run = next(c for c in calls if c["name"] == "execute_command")
        if run["is_error"]:
            why = "it was not approved" if run["text"].startswith("Denied") else _first_line(run["text"])
            return f"The command did not run ({why}). The file `{DEMO_FILE}` is there for you to try.", None
        output = "\n".join(line for line in run["text"].splitlines() if line.strip())[:600]
        return (
            f"Done. I wrote `{DEMO_FILE}` and ran it:\n\n```\n{output}\n```\n\n"
            "Every decision is in `.codingcode/audit.jsonl` (`%agent audit`). "
            "Set ANTHROPIC_API_KEY to work with Claude for real.",
            None,
        )

    @staticmethod
    def _target(calls: list[dict[str, Any]]) -> str | None:
        found = next((c for c in calls if c["name"] == "search_files"), None)
        if not found or found["is_error"]:
            return None
        for line in found["text"].splitlines():
            match = re.search(r"([\w./-]+\.py)\b", line)
            if match and not match.group(1).endswith(DEMO_FILE):
                return match.group(1)
        return None


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:200]
