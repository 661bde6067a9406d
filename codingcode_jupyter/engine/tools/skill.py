"""load_skill: a skill's instructions (or a file it bundles) loaded on the agent's request, and the
tools its ``allowed-tools`` name allowed until the turn ends. The skills themselves are read by
:mod:`..skills`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from pydantic import BaseModel, Field

from ..secret_files import credential_store, is_env_file
from ..skills import LOAD_SKILL, MAX_SKILL_BYTES, Skill, load_skills, skill_text
from ..turn_rules import grant_for_turn
from .access import ToolAccess
from .base import ToolContext, ToolDefinition, ToolError

if TYPE_CHECKING:
    from ..plugins.catalog import Plugin

__all__ = ["LoadSkillArgs", "load_skill_tool"]


class LoadSkillArgs(BaseModel):
    """Parameters of load_skill."""

    name: str = Field(min_length=1, description="The skill's name, as listed in the system prompt.")
    file: str | None = Field(default=None, description="A file the skill bundles, relative to its directory "
                                                       "(omit to load the skill's instructions).")
    arguments: str | None = Field(default=None, description="What the skill works on, when its description says "
                                                            "it takes arguments (it reads them as $ARGUMENTS).")


# `!`command`` and ```! blocks: what a person's `/skill` runs first; a skill the model loads shows them as written.
_SHELL = re.compile(r"!`[^`\n]+`|^[ \t]*```!", re.MULTILINE)


def _bundled(skill: Skill, file: str) -> Path:
    target = Path(os.path.realpath(skill.directory / file))
    root = Path(os.path.realpath(skill.directory))
    if target != root and root not in target.parents:
        raise ToolError(f"{file!r} is not inside the skill {skill.name!r}; give a path relative to its directory")
    if is_env_file(target.name) or credential_store(target) is not None:
        raise ToolError(f"{file!r} holds secrets and is not read")
    if not target.is_file():
        listing = ", ".join(skill.files()) or "none"
        raise ToolError(f"The skill {skill.name!r} has no file {file!r} (its files: {listing})")
    return target


def load_skill_tool(project: Path, home: Path | None = None,
                    plugins: Callable[[], Sequence["Plugin"]] | None = None) -> ToolDefinition:
    """The load_skill tool over the skills of ``project`` and of the plugins that apply (``plugins()``),
    read afresh at each call."""

    async def load(args: LoadSkillArgs, ctx: ToolContext) -> str:
        catalog = load_skills(project, home, plugins() if plugins is not None else ())
        skill = catalog.skills.get(args.name)
        if skill is None or not skill.model_invocable:
            names = ", ".join(s.name for s in catalog.listed() if s.model_invocable) or "none"
            why = " (it runs only when a person types it)" if skill is not None else ""
            raise ToolError(f"No skill named {args.name!r}{why}. Skills: {names}.")
        if args.file:
            target = _bundled(skill, args.file)
            with open(target, "rb") as handle:
                data = handle.read(MAX_SKILL_BYTES)
            return data.decode("utf-8", errors="replace")
        _grant(skill, ctx)
        files = skill.files()
        listing = ("\n\nFiles in this skill (read one with load_skill(name, file)): " + ", ".join(files)) if files else ""
        run = ctx.run
        body = skill_text(skill, args.arguments or "", session_id=run.session_id if run is not None else "")
        if _SHELL.search(body):
            listing += ("\n\n(The `!` commands above run first when a person types /" + skill.name + "; loaded "
                        "this way they did not run: run the ones you need with execute_command.)")
        return f"Skill {skill.name} (directory {skill.directory}):\n\n{body}{listing}"

    return ToolDefinition(
        name=LOAD_SKILL,
        description=("Load a skill: its instructions for a kind of task (the skills are listed in the system prompt), "
                     "or, with file, a file the skill bundles."),
        parameters=LoadSkillArgs,
        execute=load,
        read_only=True,
        # What a rule matches: the skill's name, as Claude Code's `Skill(name)` / `Skill(name *)`.
        access=ToolAccess(key="name", read_only=True),
    )


def _grant(skill: Skill, ctx: ToolContext) -> None:
    """The skill's allowed-tools, as allow rules until the turn ends (a project's only once trusted)."""
    if not skill.allowed_tools:
        return
    run = ctx.run
    approver = getattr(run, "approver", None)
    if approver is None:
        return
    grant_for_turn(approver, skill.allowed_tools, f"skill {skill.name}", skill.path,
                   project_file=skill.from_project, notify=getattr(run, "notify", None))
