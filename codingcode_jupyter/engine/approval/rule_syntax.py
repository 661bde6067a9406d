"""The rule language: `tool(pattern)` in our names or Claude Code's, parsed into a :class:`Rule`.

Parsing only: what a rule text means, where it came from, and what it names (checked when it is
parsed, :func:`check_tool_name`: a name no tool could have is an error; tools registered later —
kernel, custom, MCP — cannot be known when settings load, so any identifier and any
``server:tool`` or ``mcp__`` form passes, unless it is a near miss of a known name). How a rule
matches a call is :mod:`.rules`. Settings files and the trust boundary read rules through this
module alone, so reading settings never loads the command judge.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..claude.names import CLAUDE_TOOLS, PatternKind, is_mcp_form, known_tool_names, mcp_display_name
from ..domains import validate_domain_patterns

__all__ = ["Rule", "RuleError", "parse_rule", "escape_pattern", "Action", "SOURCE_PRIORITY", "check_tool_name",
           "SOURCE_FILES", "Style", "source_file"]

Action = Literal["allow", "deny", "ask"]
SOURCE_PRIORITY = {"builtin": 1000, "session": 100, "local": 100, "project": 100}
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.:*?\-\[\]]+")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
# Where a rule's source lives, for the reason a decision gives.
SOURCE_FILES = {"project": ".codingcode/settings.json", "local": ".codingcode/settings.local.json",
                "user": "~/.codingcode/settings.json", "claude-project": ".claude/settings.json",
                "claude-local": ".claude/settings.local.json", "claude-user": "~/.claude/settings.json",
                "managed": "your organisation's managed settings",
                "claude-managed": "your organisation's managed settings (Claude Code's file)"}


def source_file(source: str) -> str:
    """Where a rule of ``source`` lives, for the reason a decision gives (a managed drop-in by its name)."""
    base, _, fragment = source.partition(".d/")
    if fragment and base in ("managed", "claude-managed"):
        return f"your organisation's managed settings (managed-settings.d/{fragment})"
    return SOURCE_FILES.get(source, source)


class RuleError(ValueError):
    """A rule string that cannot be understood."""


Style = Literal["codingcode", "claude"]


@dataclass(frozen=True)
class Rule:
    """One permission rule: which tools, which arguments, what to do, from where."""

    tool: str
    pattern: str | None
    action: Action
    source: str = "session"
    priority: int = 100
    # Our tools (display-name globs) it applies to; () when it names a tool we do not have.
    tools: tuple[str, ...] = ()
    # Claude Code's rules read their patterns Claude Code's way (see the module docstring).
    style: Style = "codingcode"
    # How a Claude Code rule's pattern is read; None: by what the call declares (our rules).
    kind: PatternKind | None = None
    # The pattern as matched (`:*` suffix made ` *`, NotebookEdit's implicit `**/*.ipynb`).
    match_pattern: str | None = None
    # The directory a Claude Code `/path` pattern starts from.
    anchor: str | None = None
    # Why the rule has nothing to apply to here ("" when it does).
    missing: str = ""

    def __post_init__(self) -> None:
        if not self.tools and not self.missing:
            object.__setattr__(self, "tools", (self.tool,))
        if self.match_pattern is None:
            object.__setattr__(self, "match_pattern", self.pattern)

    @property
    def text(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


def check_tool_name(name: str) -> str | None:
    """Why ``name`` can name no tool (a sentence with a suggestion), or None when it can."""
    ours = known_tool_names()
    if name in CLAUDE_TOOLS or name in ours or any(ch in name for ch in "*?["):
        if name.startswith("mcp__") and name != "mcp__*" and not is_mcp_form(name):
            return (f"{name!r} is not an MCP tool name: write mcp__SERVER, mcp__SERVER__TOOL or mcp__SERVER__* "
                    "(no wildcard in the server part)")
        return None
    if name.startswith("mcp__"):
        return None if is_mcp_form(name) else (
            f"{name!r} is not an MCP tool name: write mcp__SERVER, mcp__SERVER__TOOL or mcp__SERVER__*")
    if ":" in name:
        server, _, tool = name.partition(":")
        return None if server and tool else f"{name!r} is not a tool name: an MCP tool is written SERVER:TOOL"
    known = [*CLAUDE_TOOLS, *sorted(ours)]
    same_but_case = [known_name for known_name in known if known_name.lower() == name.lower()]
    if same_but_case:
        return f"{name!r} is not a tool name (tool names are case-sensitive); did you mean {same_but_case[0]!r}?"
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.85)
    if close:
        return f"{name!r} is not a tool we know; did you mean {close[0]!r}?"
    if _IDENTIFIER.match(name):
        return None  # may be a custom tool registered from a cell
    return f"{name!r} is not a tool name (letters, digits, _ and -; SERVER:TOOL or mcp__SERVER__TOOL for MCP)"


# Claude Code's `Tool(param:value)` rules name an input parameter; these have nothing to match here
# (our tool has no such parameter, so no call can carry it). Task's subagent_type is our agent name.
_PARAMETERS: dict[str, frozenset[str]] = {
    "Bash": frozenset({"run_in_background", "description", "timeout", "dangerouslyDisableSandbox"}),
    "Task": frozenset({"model", "isolation", "description", "run_in_background"}),
    "Agent": frozenset({"model", "isolation", "description", "run_in_background"}),
    "Read": frozenset({"pages"}),
    "WebFetch": frozenset({"prompt"}),
    "WebSearch": frozenset({"allowed_domains", "blocked_domains"}),
    "Grep": frozenset({"output_mode", "type", "multiline", "head_limit", "-i", "-n", "-A", "-B", "-C"}),
}
_PARAMETER = re.compile(r"^\s*([A-Za-z_-][A-Za-z0-9_-]*)\s*:\s*(.*)$")


def _claude_rule(name: str, pattern: str | None, action: Action, source: str, priority: int,
                 anchor: str | None) -> Rule:
    tool = CLAUDE_TOOLS[name]
    # `Bash(timeout:*)` is always a command prefix, never the parameter `timeout`.
    prefix = tool.pattern == "command" and (pattern or "").rstrip().endswith(":*")
    parameter = _PARAMETER.match(pattern or "") if tool.pattern != "url" and not prefix else None
    if parameter is not None and parameter.group(1) in _PARAMETERS.get(name, frozenset()):
        return Rule(tool=name, pattern=pattern, action=action, source=source, priority=priority, tools=(),
                    style="claude", missing=f"{name}'s parameter {parameter.group(1)} has no counterpart here, "
                                            "so no call can carry it")
    written = pattern
    if parameter is not None and parameter.group(1) == "subagent_type" and tool.pattern == "agent":
        pattern = parameter.group(2)
    if not tool.has_counterpart:
        return Rule(tool=name, pattern=pattern, action=action, source=source, priority=priority, tools=(),
                    style="claude", missing=tool.missing)
    tools = tool.tools
    match = pattern
    if pattern is not None and pattern.strip() == "*" and tool.pattern != "path":
        match = None  # `Bash(*)` is `Bash`
    if tool.pattern == "path" and match is not None and tool.path_tools:
        tools = tool.path_tools
    if tool.pattern == "path" and match is None and tool.implicit_pattern:
        match = tool.implicit_pattern
    if tool.pattern == "command" and match is not None:
        match = _prefix_form(match)
    if tool.pattern == "agent" and match is not None:
        # Claude Code's built-in sub-agents are ours in lower case.
        match = {"Explore": "explore", "Plan": "plan"}.get(match.strip(), match.strip())
    return Rule(tool=name, pattern=written, action=action, source=source, priority=priority, tools=tools,
                style="claude", kind=tool.pattern, match_pattern=match, anchor=anchor)


def _prefix_form(pattern: str) -> str:
    """Claude Code's `prefix:*` is `prefix *` (only at the end; elsewhere `:` is a plain character)."""
    return pattern[:-2].rstrip() + " *" if pattern.endswith(":*") and len(pattern) > 2 else pattern


def parse_rule(text: str, action: Action = "allow", source: str = "session", priority: int | None = None,
               *, anchor: str | Path | None = None) -> Rule:
    """``tool`` or ``tool(pattern)`` as a :class:`Rule`; RuleError says what is wrong.

    ``anchor`` is where a Claude Code ``/path`` pattern starts (default: where the rule is
    judged, the project).
    """
    if not isinstance(text, str):
        raise RuleError(f"a rule must be a string like 'execute_command(pytest *)', got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise RuleError("empty rule; write a tool name, e.g. 'read_file' or 'execute_command(pytest *)'")
    pattern = None
    name = stripped
    if "(" in stripped:
        if not stripped.endswith(")"):
            raise RuleError(f"rule {text!r} opens '(' but does not end with ')'")
        name, pattern = stripped[: stripped.index("(")], stripped[stripped.index("(") + 1 : -1]
        if not pattern.strip():
            raise RuleError(f"rule {text!r} has an empty pattern; write the tool name alone to match every call")
    elif stripped.endswith(")"):
        raise RuleError(f"rule {text!r} closes ')' without opening '('")
    name = name.strip()
    if pattern is not None and pattern.startswith("domain:"):
        domain = pattern[len("domain:"):].strip()
        problems = validate_domain_patterns([domain]) if domain != "*" else []
        if problems:
            raise RuleError(f"rule {text!r}: domain {problems[0]}")
    if not _TOOL_NAME.fullmatch(name):
        raise RuleError(f"rule {text!r}: {name!r} is not a tool name or glob (letters, digits, _ - . : and * ?)")
    problem = check_tool_name(name)
    if problem is not None:
        raise RuleError(f"rule {text!r}: {problem}")
    level = SOURCE_PRIORITY.get(source, 100) if priority is None else priority
    where = str(anchor) if anchor is not None else None
    if name in CLAUDE_TOOLS:
        return _claude_rule(name, pattern, action, source, level, where)
    display = mcp_display_name(name) if name.startswith("mcp__") else None
    tools = (display,) if display is not None else (name,)
    match = pattern
    if pattern is not None and any(fnmatch.fnmatchcase("execute_command", tool) for tool in tools):
        match = _prefix_form(pattern)
    return Rule(tool=name, pattern=pattern, action=action, source=source, priority=level, tools=tools,
                style="claude" if display is not None else "codingcode", match_pattern=match, anchor=where)


def escape_pattern(text: str) -> str:
    """``text`` with wildcards escaped, so it matches only itself."""
    return re.sub(r"([\\*?\[])", r"\\\1", text)
