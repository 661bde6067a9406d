"""Command line: ``python -m codingcode_jupyter permissions check [--project DIR] [--mode MODE] TOOL 'JSON'``.

Runs approval layers 1-4 for one call and prints one JSON object (decision, layer, rule,
reason); nobody is asked, so a call that would reach a person prints ``ask``. Imports
nothing from Jupyter.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["main", "check_permission"]


def _tool_definition(name: str) -> Any:
    from .engine.approval.subject import READ_ONLY_TOOLS
    from .engine.tools.base import AnyArgs, ToolDefinition

    try:
        from .engine.tools.builtin import builtin_tools

        for tool in builtin_tools():
            if name in (tool.name, tool.display_name):
                return tool
    except Exception:  # the built-in tool set is optional here; fall back to a stand-in
        pass

    async def _never(args: Any, ctx: Any) -> str:  # pragma: no cover - never executed
        raise RuntimeError("permissions check does not run tools")

    is_builtin = name in READ_ONLY_TOOLS or name in ("execute_command", "write_file", "edit_file")
    return ToolDefinition(
        name=name.replace(":", "__"), description=f"{name} (stand-in for permissions check)", parameters=AnyArgs,
        execute=_never, read_only=name in READ_ONLY_TOOLS, display_name=name,
        source="builtin" if is_builtin else ("mcp" if ":" in name else "custom"),
    )


class _AssumedSandbox:
    """The sandbox as ``--sandbox on|off`` says it is, for judging without starting one."""

    enabled = True
    fail_if_unavailable = False

    def __init__(self, active: bool) -> None:
        self.active = active
        self.unavailable_reason = None if active else "assumed unavailable (--sandbox off)"


def _machine_sandbox(project: Path) -> Any:
    from .engine.runtime import merged_settings
    from .engine.sandbox import CommandSandbox

    return CommandSandbox.create(Path(project).resolve(), merged_settings(Path(project)).sandbox)


async def check_permission(
    project: Path, tool: str, tool_input: dict[str, Any], mode: str | None = None, sandbox: str | None = None
) -> dict[str, Any]:
    """Layers 1-4 for one call: ``{"decision", "layer", "rule", "reason", "sandbox"}``.

    ``sandbox`` "on"/"off" judges as if the command sandbox were (not) available; None
    judges as a session on this machine would.
    """
    from .engine.approval.pipeline import ApprovalPipeline
    from .engine.approval.types import ToolCall
    from .engine.tools.base import ToolContext

    pipeline = ApprovalPipeline(project, mode=mode, audit=False)  # type: ignore[arg-type]
    box = _AssumedSandbox(sandbox == "on") if sandbox in ("on", "off") else _machine_sandbox(project)
    ctx = ToolContext(session_id="permissions-check", turn_id=0, project_path=Path(project), services={"sandbox": box})
    call = ToolCall(tool_use_id="check", tool=_tool_definition(tool), input=tool_input)
    evaluation = await pipeline.evaluate(call, ctx)
    assumed = sandbox if sandbox in ("on", "off") else ("on" if getattr(box, "active", False) else "off")
    return {"decision": evaluation.kind, "layer": evaluation.layer, "rule": evaluation.rule, "reason": evaluation.reason,
            "sandbox": assumed}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codingcode", description="codingcode-jupyter command line tools")
    commands = parser.add_subparsers(dest="command", required=True)
    permissions = commands.add_parser("permissions", help="inspect the approval pipeline")
    sub = permissions.add_subparsers(dest="action", required=True)
    check = sub.add_parser("check", help="what the approval pipeline decides for one call (nobody is asked)")
    check.add_argument("--project", default=".", help="project directory (default: the current directory)")
    check.add_argument("--mode", choices=["default", "acceptEdits", "plan", "bypass"], default=None,
                       help="permission mode (default: the settings' defaultMode, else default)")
    check.add_argument("--sandbox", choices=["on", "off"], default=None,
                       help="judge as if the command sandbox were available (on) or not (off); default: this machine")
    check.add_argument("tool", help="tool name as rules see it: execute_command, read_file, server:tool")
    check.add_argument("input", help="the tool's input as a JSON object, e.g. '{\"command\": \"ls\"}'")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``codingcode`` / ``python -m codingcode_jupyter``."""
    args = _parser().parse_args(argv)
    from .engine.settings import SettingsError

    try:
        tool_input = json.loads(args.input)
    except json.JSONDecodeError as error:
        print(f"codingcode: the input is not valid JSON: {error.msg} (column {error.colno})", file=sys.stderr)
        return 2
    if not isinstance(tool_input, dict):
        print("codingcode: the input must be a JSON object, e.g. '{\"command\": \"ls\"}'", file=sys.stderr)
        return 2
    project = Path(args.project)
    if not project.is_dir():
        print(f"codingcode: project directory {project} does not exist", file=sys.stderr)
        return 2
    try:
        result = asyncio.run(check_permission(project, args.tool, tool_input, args.mode, args.sandbox))
    except SettingsError as error:
        print(f"codingcode: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
