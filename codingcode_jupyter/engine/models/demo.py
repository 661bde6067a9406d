"""The offline demo model: a short, deterministic coding session on the user's real project.

It does not understand free text: a few words of the request pick one of a few scripted
sessions (look around and explain a file, write a new file and run it, run the tests; anything else is a
question it says it cannot answer), and it says so first. Each plays through the same loop,
tools and approval pipeline as Claude would, and each step is decided from what the turn
holds so far, so a denial or an error changes what it does next, as a real model's would.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, replace
from typing import Any

from ..events import Usage
from ..messages import ContentBlockParam, MessageParam, blocks, result_text, text_block, tool_name
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


@dataclass(frozen=True)
class _Call:
    """One tool call of the turn, with what came of it (a call not answered yet reads as an error)."""

    name: str
    text: str = ""
    is_error: bool = True


def _turn_calls(messages: list[MessageParam]) -> list[_Call]:
    """Tool calls of the current turn, each with its result text and error flag."""
    start = 0
    for index, message in enumerate(messages):
        if message["role"] == "user" and any(b["type"] == "text" for b in blocks(message)):
            start = index
    uses: list[tuple[str, str]] = []
    results: dict[str, _Call] = {}
    for message in messages[start:]:
        for block in blocks(message):
            if block["type"] == "tool_use":
                uses.append((block["id"], block["name"]))
            elif block["type"] == "tool_result":
                results[block["tool_use_id"]] = _Call("", result_text(block), bool(block.get("is_error")))
    return [replace(results.get(id_, _Call(name)), name=name) for id_, name in uses]


def _prompt(messages: list[MessageParam]) -> str:
    for message in reversed(messages):
        if message["role"] == "user":
            texts: list[str] = [b["text"] for b in blocks(message) if b["type"] == "text"]
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
        content: list[ContentBlockParam] = [text_block(text)] if text else []
        if call is not None:
            self._ids += 1
            content.append({"type": "tool_use", "id": f"toolu_demo_{self._ids:03d}_{len(request.messages)}", "name": call[0], "input": call[1]})
        usage = Usage(input_tokens=len(json.dumps(request.messages)) // 4, output_tokens=max(1, len(text) // 4))
        return ModelResponse(content=content, stop_reason="tool_use" if call else "end_turn", usage=usage)

    def _next_step(self, request: ModelRequest) -> tuple[str, tuple[str, dict[str, Any]] | None]:
        calls = _turn_calls(request.messages)
        prompt = _prompt(request.messages)
        script = choose_script(prompt)
        if not calls:
            # The request is not understood, only sorted by its words: say so before anything else.
            intro = (
                "This is the offline **demo**: a scripted session, not a model. It does not understand what you write; "
                f"it picks one of four scripts by a few words of the request. For this request: **{SCRIPTS[script]}**.\n\n"
            )
            if script == "unknown":
                return intro + _CANNOT, None
        else:
            intro = ""
        step = getattr(self, f"_{script}")(calls, prompt, {name for tool in request.tools if (name := tool_name(tool))})
        return intro + step[0], step[1]

    # -- the scripts: each step decided from what the turn holds so far (a denial changes what comes next) --

    def _look(self, calls: list[_Call], prompt: str, offered: set[str]) -> _Step:
        done = [c.name for c in calls]
        if not calls:
            return "First, the Python files of the project.\n\n", ("search_files", {"pattern": "**/*.py", "max_results": 20})
        target = _named_file(prompt, calls) or self._target(calls)
        if "read_file" not in done and target and "read_file" in offered:
            return f"Let me read `{target}`.\n\n", ("read_file", {"path": target, "limit": 200})
        files = _listed(calls)
        read = next((c for c in calls if c.name == "read_file"), None)
        if not files:
            return "I found no Python files here (`**/*.py`)." + _LAST, None
        answer = f"The project has {len(files)} Python file{'s' if len(files) != 1 else ''}: " + \
            ", ".join(f"`{f}`" for f in files[:10]) + (", ..." if len(files) > 10 else "") + "."
        if read is not None and not read.is_error:
            lines, names = _outline(read.text)
            answer += f"\n\n`{target}` has {lines} lines" + (
                f" and defines {', '.join(f'`{n}`' for n in names)}." if names else " and defines no function or class.")
        return answer + _LAST, None

    def _edit(self, calls: list[_Call], prompt: str, offered: set[str]) -> _Step:
        done = [c.name for c in calls]
        if not calls:
            return "I'll look around, then write a new file; writing needs your approval.\n\n", (
                "search_files", {"pattern": "**/*.py", "max_results": 20})
        target = self._target(calls)
        if "read_file" not in done and target and "read_file" in offered:
            return f"Let me read `{target}`.\n\n", ("read_file", {"path": target, "limit": 60})
        plan = [("Look around the project", "completed"), (f"Write {DEMO_FILE}, a summary script", "in_progress"),
                ("Run it and report", "pending")]
        if done.count("todo_write") == 0:
            return "Here is my plan.\n\n", _todo(plan)
        if "write_file" not in done:
            script = _SCRIPT.format(target=target or DEMO_FILE)
            return (
                f"I'll add `{DEMO_FILE}`. You see the exact file and decide before anything is written.\n\n",
                ("write_file", {"path": DEMO_FILE, "content": script}),
            )
        write = next(c for c in calls if c.name == "write_file")
        if write.is_error:
            if done.count("todo_write") == 1:  # the write step did not happen: it is not in progress any more
                return "", _todo([plan[0], (plan[1][0], "pending"), plan[2]])
            why = "you did not allow it" if write.text.startswith("Denied") else _first_line(write.text)
            return f"The file was not written ({why}), so I won't run anything." + _LAST, None
        if "execute_command" not in done:
            return "Now let me run it; commands need approval too.\n\n", (
                "execute_command", {"command": f"python3 {DEMO_FILE}", "timeout_ms": 30000})
        run = next(c for c in calls if c.name == "execute_command")
        ran = not run.is_error and run.text.startswith("exit code 0")
        if done.count("todo_write") == 1:
            return "", _todo([plan[0], (plan[1][0], "completed"), (plan[2][0], "completed" if ran else "pending")])
        if not ran:
            why = "you did not allow it" if run.text.startswith("Denied") else _first_line(run.text)
            return f"The command did not run as hoped ({why}). `{DEMO_FILE}` is there for you to try." + _LAST, None
        return f"Done. I wrote `{DEMO_FILE}` and ran it:\n\n```\n{_stdout(run.text)}\n```" + _LAST, None

    def _test(self, calls: list[_Call], prompt: str, offered: set[str]) -> _Step:
        done = [c.name for c in calls]
        if not calls:
            return "First, the test files.\n\n", ("search_files", {"pattern": "**/test*.py", "max_results": 20})
        tests = _listed(calls)
        if not tests:
            return "I found no test files (`test*.py`), so there is nothing to run." + _LAST, None
        plan = [("Find the tests", "completed"), ("Run them with pytest", "in_progress"), ("Report", "pending")]
        if done.count("todo_write") == 0:
            return f"{len(tests)} test file{'s' if len(tests) != 1 else ''}. Here is my plan.\n\n", _todo(plan)
        if "execute_command" not in done:
            return "Running them; a command needs your approval.\n\n", (
                "execute_command", {"command": "python3 -m pytest -q", "timeout_ms": 120000})
        run = next(c for c in calls if c.name == "execute_command")
        ran = not run.is_error and run.text.startswith("exit code 0")
        if done.count("todo_write") == 1:
            return "", _todo([plan[0], (plan[1][0], "completed" if ran else "pending"), (plan[2][0], "completed")])
        if run.is_error:
            why = "you did not allow it" if run.text.startswith("Denied") else _first_line(run.text)
            return f"The tests did not run ({why})." + _LAST, None
        verdict = "They pass" if ran else f"They did not all pass ({_first_line(run.text)})"
        return f"{verdict}:\n\n```\n{_stdout(run.text)}\n```" + _LAST, None

    @staticmethod
    def _target(calls: list[_Call]) -> str | None:
        found = next((c for c in calls if c.name == "search_files"), None)
        if not found or found.is_error:
            return None
        for line in found.text.splitlines():
            match = re.search(r"([\w./-]+\.py)\b", line)
            if match and not match.group(1).endswith(DEMO_FILE):
                return match.group(1)
        return None


_Step = tuple[str, "tuple[str, dict[str, Any]] | None"]

# The scripts and the words that pick them, in this order (the first that matches); anything else is
# a question the demo cannot answer.
# Each says what the script does: the "edit" one writes a file of its own, it never changes yours.
SCRIPTS = {"test": "run the tests", "edit": "write a new file and run it", "look": "look around and explain a file",
           "unknown": "a question a script cannot answer"}
_WORDS = {
    "test": re.compile(r"\b(run|execute|pytest)\b.*\btests?\b|\bpytest\b|\btests? (pass|fail)", re.I | re.S),
    "edit": re.compile(r"\b(add|edit|change|write|fix|create|rename|refactor|update|implement|remove|delete|make)\b", re.I),
    "look": re.compile(r"\b(files?|project|code|explain|read|look|show|list|summari[sz]e|structure|modules?|functions?|"
                       r"class(es)?|what does)\b|\.py\b", re.I),
}
_CANNOT = ("A script cannot answer that. Ask it to *look around* (\"what files are in this project?\", \"explain "
           "cli.py\"), to *write a new file and run it* (\"add a summary script\") or to *run the tests*, and it plays that session "
           "through the real tools, asking you before each change. `%agent login` sets an API key to work with Claude for real.")
_LAST = "\n\nEvery decision is in the audit (`%agent audit`). This was the scripted demo: `%agent login` to work with Claude for real."


def choose_script(prompt: str) -> str:
    """Which scripted session answers ``prompt`` (a key of :data:`SCRIPTS`)."""
    for name, words in _WORDS.items():
        if words.search(prompt):
            return name
    return "unknown"


def _todo(plan: list[tuple[str, str]]) -> tuple[str, dict[str, Any]]:
    return "todo_write", {"plan": [{"step": step, "status": status} for step, status in plan]}


def _listed(calls: list[_Call]) -> list[str]:
    """The files the turn's search found (the lines after its heading), all of them: the answer counts
    what the search said it found (a file the demo wrote earlier included)."""
    found = next((c for c in calls if c.name == "search_files"), None)
    if not found or found.is_error:
        return []
    return [line.strip() for line in found.text.splitlines()[1:] if line.strip() and not line.startswith(("(", " "))]


def _named_file(prompt: str, calls: list[_Call]) -> str | None:
    """A file the request names that the search found (``explain cli.py``)."""
    files = _listed(calls)
    for word in re.findall(r"[\w./-]+\.py\b", prompt):
        for path in files:
            if path == word or path.endswith("/" + word):
                return path
    return None


def _outline(text: str) -> tuple[int, list[str]]:
    """(lines, functions and classes defined) of a read_file result."""
    rows = [re.sub(r"^\s*\d+\| ?", "", line) for line in text.splitlines()[1:]]
    names = [m.group(2) for row in rows if (m := re.match(r"(async def|def|class)\s+(\w+)", row))]
    return len(rows), names[:12]


def _stdout(text: str) -> str:
    """What a command printed (without the result's own headings)."""
    body = text.split("--- stdout ---", 1)[-1].split("--- stderr ---", 1)[0]
    return "\n".join(line for line in body.splitlines() if line.strip() and line.strip() != "(empty)")[:600]


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:200]
