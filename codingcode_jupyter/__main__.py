"""Command line: ``codingcode acp`` (the agent for editors, docs/acp.md), ``python -m codingcode_jupyter permissions check [--project DIR] [--mode MODE] TOOL 'JSON'``.

Runs approval layers 1-5 for one call and prints one JSON object (decision, layer, rule,
reason); nobody is asked, so a call that would reach a person prints ``ask``.

``codingcode sandbox check [--project DIR] [--json]`` prints the sandbox in force for the
project, why that backend, what it confines and what it does not cover;
``codingcode sandbox run [--project DIR] -- COMMAND...`` runs one command exactly as
execute_command would (same backend, policy, environment, proxy), printing its output and
returning its exit code — or refusing with the reason when no sandbox can run (it never
runs a command unconfined). ``permissions`` and ``sandbox`` import nothing from Jupyter.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["main", "check_permission"]


@functools.lru_cache(maxsize=1)
def _known_tools() -> list[Any]:
    """Every tool a session on this machine may offer whose definition is known without a kernel."""
    from .engine.agents.dispatch import dispatch_agent_tool
    from .engine.tools.builtin import builtin_tools
    from .engine.tools.skill import load_skill_tool
    from .notebook.kernel.tools import kernel_tools

    # load_skill's definition is the same for every project (the project's skills are read when it runs).
    return [*builtin_tools(), *kernel_tools(namespace={}), dispatch_agent_tool(), load_skill_tool(Path("."))]


def _tool_definition(name: str) -> Any:
    """The tool ``name`` as a session would judge it: its own definition when it is one we ship;
    an MCP tool (``server:tool``, ``mcp__server__tool``) or a cell's custom tool otherwise, both
    judged as able to reach anything their arguments name."""
    from .engine.tools.base import AnyArgs, ToolDefinition

    for tool in _known_tools():
        if name in (tool.name, tool.display_name):
            return tool

    async def _never(args: Any, ctx: Any) -> str:  # pragma: no cover - never executed
        raise RuntimeError("permissions check does not run tools")

    server_tool = name.split("__", 2)[1:] if name.startswith("mcp__") else name.split(":", 1)
    is_mcp = len(server_tool) == 2 and all(server_tool)
    display = ":".join(server_tool) if is_mcp else name
    return ToolDefinition(
        name=display.replace(":", "__"), description=f"{display} (stand-in for permissions check)", parameters=AnyArgs,
        execute=_never, display_name=display, source="mcp" if is_mcp else "custom",
    )


def _ours(tool: str, tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A call named the way Claude Code names it (``Read`` with ``file_path``) as ours (read_file with ``path``)."""
    from .engine.claude.names import claude_tool
    from .engine.claude.tool_input import from_claude_input

    known = claude_tool(tool)
    if known is None or not known.tools:
        return tool, tool_input
    return known.tools[0], from_claude_input(known.tools[0], tool_input, {})


def _assumed_sandbox(project: Path, available: bool) -> Any:
    """A factory of sandboxes that are (not) available, as ``--sandbox on|off`` says, never probed."""
    from .engine.sandbox import CommandSandbox

    def make(settings: Any, allowed_env_files: list[str]) -> CommandSandbox:
        return CommandSandbox(project, settings, bwrap="bwrap", allowed_env_files=allowed_env_files,
                              unavailable_reason=None if available else "assumed unavailable (--sandbox off)")

    return make


async def check_permission(
    project: Path, tool: str, tool_input: dict[str, Any], mode: str | None = None, sandbox: str | None = None,
    *, with_warnings: bool = False, review: bool = False,
) -> dict[str, Any]:
    """Layers 1-4 for one call: ``{"decision", "layer", "rule", "reason", "mode", "sandbox"}``.

    ``mode`` None takes the settings' mode, as a session would. ``sandbox`` "on"/"off" judges
    as if the command sandbox were (not) available; None judges as a session on this machine would.
    """
    from .engine.approval.pipeline import ApprovalPipeline
    from .engine.deps import SessionDeps
    from .engine.modes import decide_mode
    from .engine.project_settings import ProjectSettings
    from .engine.runtime import sandbox_factory
    from .engine.tools.base import ToolCall, ToolContext

    project = Path(project).resolve()
    tool, tool_input = _ours(tool, tool_input)
    settings = ProjectSettings(project)
    factory = _assumed_sandbox(project, sandbox == "on") if sandbox in ("on", "off") else sandbox_factory(project)
    deps = SessionDeps(project=project, settings=settings, sandbox_factory=factory)
    pipeline = ApprovalPipeline(project, settings=settings, audit=False)
    choice = decide_mode(cell=mode, settings=settings.current())  # type: ignore[arg-type]
    ctx = ToolContext.standalone(project, deps=deps, session_id="permissions-check", turn_id=0, mode=choice.mode)
    call = ToolCall(tool_use_id="check", tool=_tool_definition(tool), input=tool_input)
    evaluation = await pipeline.evaluate(call, ctx)
    box = deps.sandbox()
    result: dict[str, Any] = {"decision": str(evaluation.kind), "layer": evaluation.layer, "rule": evaluation.rule, "reason": evaluation.reason,
              "mode": choice.mode, "sandbox": "on" if box is not None and box.active else "off"}
    if choice.mode == "auto":
        result["reviewer"] = await _reviewer_check(call, ctx, evaluation, settings.current(), review)
    if with_warnings:
        result["warnings"] = list(settings.current().warnings)
    return result


def _project_sandbox(project: Path) -> Any:
    """The sandbox a session in ``project`` would use now (its settings, the `.env` files its rules allow)."""
    from .engine.deps import SessionDeps
    from .engine.project_settings import ProjectSettings
    from .engine.runtime import sandbox_factory

    settings = ProjectSettings(project)
    deps = SessionDeps(project=project, settings=settings, sandbox_factory=sandbox_factory(project))
    return deps, deps.sandbox()


def sandbox_check(project: Path, as_json: bool) -> tuple[int, str]:
    """(exit status, text) of ``sandbox check``: 0 when a backend confines commands, 3 when none can."""
    from .engine.sandbox.report import sandbox_report

    _deps, box = _project_sandbox(project.resolve())
    report = sandbox_report(box)
    text = json.dumps(report.as_json(), ensure_ascii=False) if as_json else "\n".join(report.lines())
    return (0 if report.state == "on" else 3), text


async def sandbox_run(project: Path, command: list[str]) -> int:
    """Run ``command`` as execute_command would, output passed through; its exit status (3: no sandbox)."""
    import shlex

    from .engine.tools.shell import command_env

    project = project.resolve()
    deps, box = _project_sandbox(project)
    try:
        if not box.active:
            why = box.unavailable_reason or "the sandbox is disabled in settings (sandbox.enabled is false)"
            print(f"codingcode: no sandbox to run it in: {why}; the command was not run", file=sys.stderr)
            return 3
        line = command[0] if len(command) == 1 else shlex.join(command)
        env = command_env(deps.settings.current().merged.env)

        from .engine.approval.host_files import settle_host_files

        # As execute_command starts it (own session, closed stdin), its output passed straight through,
        # and compared after it: what it left that the host runs is moved aside (nobody to ask here).
        with box.command():
            watch = box.watch_host()
            proc = await asyncio.create_subprocess_exec(*box.argv_for(line, project, watch=watch), cwd=project,
                                                        env=env, stdin=asyncio.subprocess.DEVNULL,
                                                        start_new_session=True)
            code = await proc.wait()
            for note in await settle_host_files(watch, line, None):
                print(note, file=sys.stderr)
        return code if code >= 0 else 128 - code
    finally:
        await box.aclose()


async def _reviewer_check(call: Any, ctx: Any, evaluation: Any, effective: Any, review: bool) -> dict[str, Any]:
    """In auto mode: whether the reviewer would be asked, what it would be sent, and (``review``) its answer."""
    from .engine.approval.reviewer import (
        REVIEWABLE,
        ask_reviewer,
        build_params,
        review_input,
        review_prompt,
        reviewer_settings,
    )
    from .engine.approval.types import Decision

    if evaluation.kind is not Decision.ASK:
        return {"asked": False, "why": f"the call is {evaluation.kind} before any reviewer"}
    if evaluation.forced or evaluation.layer not in REVIEWABLE:
        return {"asked": False, "why": f"the {evaluation.layer} layer's ask is the person's to answer"}
    model, timeout, guidance = reviewer_settings(effective)
    shown = await review_input(call, ctx, evaluation, guidance)
    params = build_params(shown, model)
    out: dict[str, Any] = {"asked": True, "model": model, "timeout": timeout, "sent": review_prompt(shown)}
    if guidance.ignored:
        out["ignored_guidance"] = list(guidance.ignored)
    if review:
        import os

        if not os.environ.get("ANTHROPIC_API_KEY"):
            out["answer"] = "not asked: --review needs ANTHROPIC_API_KEY"
            return out
        from .engine.models.clients import shared_client

        outcome = await ask_reviewer(shared_client(), params, timeout)
        out["answer"] = (f"{outcome.answer.decision}: {outcome.answer.reason}" if outcome.answer is not None
                         else f"ask the person (the reviewer failed: {outcome.failure})")
        out["latency_ms"] = outcome.latency_ms
    return out


def _parser() -> argparse.ArgumentParser:
    from .engine.settings import MODES

    parser = argparse.ArgumentParser(prog="codingcode", description="codingcode-jupyter command line tools")
    commands = parser.add_subparsers(dest="command", required=True)
    permissions = commands.add_parser("permissions", help="inspect the approval pipeline")
    sub = permissions.add_subparsers(dest="action", required=True)
    check = sub.add_parser("check", help="what the approval pipeline decides for one call (nobody is asked)")
    check.add_argument("--project", default=".", help="project directory (default: the current directory)")
    check.add_argument("--mode", choices=MODES, default=None,
                       help="permission mode (default: the settings' defaultMode, else default)")
    check.add_argument("--review", action="store_true",
                       help="with --mode auto and ANTHROPIC_API_KEY set: ask the reviewer, not only show what it is sent")
    check.add_argument("--sandbox", choices=["on", "off"], default=None,
                       help="judge as if the command sandbox were available (on) or not (off); default: this machine")
    check.add_argument("tool", help="tool name as rules see it: execute_command, read_file, run_python, server:tool "
                       "(or Claude Code's: Bash, Read, mcp__server__tool)")
    check.add_argument("input", help="the tool's input as a JSON object, e.g. '{\"command\": \"ls\"}'")
    sandbox = commands.add_parser("sandbox", help="the command sandbox on this machine")
    boxes = sandbox.add_subparsers(dest="action", required=True)
    box_check = boxes.add_parser("check", help="the backend in force, why, what it confines and does not cover")
    box_check.add_argument("--project", default=".", help="project directory (default: the current directory)")
    box_check.add_argument("--json", action="store_true", help="one JSON object instead of text")
    box_run = boxes.add_parser("run", help="run one command exactly as execute_command would")
    box_run.add_argument("--project", default=".", help="project directory (default: the current directory)")
    box_run.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND... (one word is run by bash -c as is)")
    acp = commands.add_parser("acp", help="the agent for editors, over the Agent Client Protocol on stdio "
                              "(docs/acp.md); its sessions run in a Jupyter kernel")
    acp.add_argument("--existing", metavar="CONNECTION_FILE", default=None,
                     help="run in this running kernel (a notebook's: its variables are shared) instead of starting one")
    acp.add_argument("--kernel", metavar="NAME", default=None,
                     help="the kernelspec of the kernel to start (default: this Python's, which has codingcode)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``codingcode`` / ``python -m codingcode_jupyter``."""
    args = _parser().parse_args(argv)
    from .engine.settings import SettingsError

    if args.command == "sandbox":
        return _sandbox_main(args)
    if args.command == "acp":
        from .acp.main import serve

        return serve(args.existing, args.kernel)
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
        result = asyncio.run(check_permission(project, args.tool, tool_input, args.mode, args.sandbox,
                                              with_warnings=True, review=args.review))
    except SettingsError as error:
        print(f"codingcode: {error}", file=sys.stderr)
        return 1
    for warning in result.pop("warnings", []):
        print(f"codingcode: warning: {warning}", file=sys.stderr)
    print(json.dumps(result, ensure_ascii=False))
    return 0


def _sandbox_main(args: argparse.Namespace) -> int:
    from .engine.settings import SettingsError

    project = Path(args.project)
    if not project.is_dir():
        print(f"codingcode: project directory {project} does not exist", file=sys.stderr)
        return 2
    try:
        if args.action == "check":
            code, text = sandbox_check(project, args.json)
            print(text)
            return code
        command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not command:
            print("codingcode: usage: codingcode sandbox run [--project DIR] -- COMMAND...", file=sys.stderr)
            return 2
        return asyncio.run(sandbox_run(project, command))
    except SettingsError as error:
        print(f"codingcode: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
