"""Skills: folders with a ``SKILL.md`` the model loads when a task calls for them, as in Claude Code.

Where they live, lowest precedence first: the person's ``~/.claude/skills`` and
``~/.codingcode/skills``, the project's ``.claude/skills`` and ``.codingcode/skills``; each
skill is a directory ``NAME/SKILL.md`` (front matter ``name``, ``description``,
``allowed-tools``; the body is the instructions) with any files beside it. The skills of the
plugins that apply (:mod:`.plugins`) are ``PLUGIN:NAME``. A project's skill never replaces the
person's skill of the same name (a cloned repository would otherwise rewrite instructions the
person relies on): the person's is the one loaded, the project's is kept in
:attr:`SkillCatalog.shadowed` for listing, and a notice names both files.

Progressive disclosure, as Claude Code's Skill tool works: only each skill's name and
description go into the system prompt (:func:`skills_section`); the model calls
``load_skill(name)`` for the instructions, and ``load_skill(name, file)`` for a file the
skill bundles (``reference/x.md``, a script to read) — only files inside the skill's own
directory. A skill's ``allowed-tools`` are allow rules for the rest of the turn once loaded,
and, for a project's skill, only once the project is trusted (a trust item, like an allow
rule). A sub-agent profile's ``skills:`` starts that agent with those skills' instructions.

Every skill is also a slash command, as in Claude Code (``%%agent /NAME args``, see
:mod:`.commands`): ``argument-hint`` is listed, ``$ARGUMENTS`` is what was typed.
``disable-model-invocation: true`` keeps a skill out of the model's list (only a person runs it),
``user-invocable: false`` out of the slash commands. A skill without a ``description`` is
described by the first paragraph of its body, as Claude Code does, with a note.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Sequence

from .claude.front_matter import read_front_matter
from .claude.templates import allowed_tools_list, hint_text, shape_notes

if TYPE_CHECKING:
    from .plugins.catalog import Plugin

__all__ = ["Skill", "SkillCatalog", "skill_dirs", "load_skills", "skills_section", "skill_bodies", "LOAD_SKILL",
           "MAX_SKILL_BYTES", "SKILL_KEYS", "skill_text"]

Source = Literal["claude-user", "user", "claude-project", "project", "plugin"]
LOAD_SKILL = "load_skill"
MAX_SKILL_BYTES = 400_000


@dataclass(frozen=True)
class Skill:
    """One skill as read."""

    name: str
    description: str
    path: Path
    source: Source
    body: str
    allowed_tools: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    argument_hint: str = ""
    model: str | None = None
    # The model may load it (not `disable-model-invocation: true`); a person may type it (not `user-invocable: false`).
    model_invocable: bool = True
    user_invocable: bool = True
    # The plugin it comes with (its key), whose root and data directory its body may name.
    plugin: str | None = None
    plugin_root: Path | None = None
    plugin_data: Path | None = None

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def from_project(self) -> bool:
        return self.source in ("claude-project", "project")

    def files(self, limit: int = 50) -> list[str]:
        """The files the skill bundles (relative to its directory), SKILL.md left out."""
        found = []
        for root, dirs, names in os.walk(self.directory):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                rel = os.path.relpath(os.path.join(root, name), self.directory)
                if rel != "SKILL.md":
                    found.append(rel)
                if len(found) >= limit:
                    return found
        return found


@dataclass
class SkillCatalog:
    skills: dict[str, Skill] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # A project's skills named like one of the person's: listed, never loaded by that name.
    shadowed: list[Skill] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def listed(self) -> list[Skill]:
        return [self.skills[name] for name in sorted(self.skills)]

    def add(self, skill: Skill) -> None:
        """``skill`` under its name: a later source of the same side replaces an earlier one, a
        project's never replaces the person's."""
        kept = self.skills.get(skill.name)
        if kept is not None and skill.from_project and not kept.from_project:
            self.shadowed.append(skill)
            self.notices.append(f"the project's skill '{skill.name}' ({skill.path}) has the name of yours ({kept.path}): "
                                "yours is the one used")
            return
        self.skills[skill.name] = skill


def skill_dirs(project: Path, home: Path | None = None) -> list[tuple[Source, Path]]:
    """(source, directory), lowest precedence first."""
    from .claude.files import claude_dir
    from .user_dir import user_dir

    mine = (home / ".codingcode" if home is not None else user_dir()) / "skills"
    theirs = (home / ".claude" if home is not None else claude_dir()) / "skills"
    project = Path(project)
    return [("claude-user", theirs), ("user", mine), ("claude-project", project / ".claude" / "skills"),
            ("project", project / ".codingcode" / "skills")]


# Front matter a skill may have (Claude Code's), and why those without effect here have none.
SKILL_KEYS = frozenset({"name", "description", "allowed-tools", "license", "metadata", "version", "argument-hint",
                        "disable-model-invocation", "user-invocable", "model", "when_to_use", "context", "agent",
                        "hooks", "effort", "shell", "arguments", "compatibility", "paths"})
_NOT_USED = {"context": "a skill runs in the conversation that loads it here (no forked context)",
             "agent": "a skill runs in the conversation that loads it here (no forked context)",
             "hooks": "skill-scoped hooks do not run here; put them in a settings file",
             "effort": "codingcode does not set a thinking effort", "shell": "`!` lines run with bash here",
             "paths": "every skill is listed, whatever files the task touches"}


def _first_paragraph(body: str) -> str:
    for block in body.strip().split("\n\n"):
        lines = [line.strip().lstrip("#").strip() for line in block.splitlines() if line.strip()]
        if lines:
            return " ".join(lines)[:300]
    return ""


def _read(path: Path, source: Source) -> Skill:
    from .config_files import read_config_bytes

    # A regular file of bounded size only: a committed link to /dev/zero must not hang the kernel.
    data = read_config_bytes(path, MAX_SKILL_BYTES)
    front = read_front_matter(data.decode("utf-8", errors="replace"), SKILL_KEYS)
    fields, notes = front.fields, list(front.notes)
    name = str(fields.get("name") or path.parent.name).strip()
    description = " ".join(str(fields.get("description") or fields.get("when_to_use") or "").split())
    if not description:
        description = _first_paragraph(front.body)
        if not description:
            raise ValueError("no description in the front matter and no text in the body (the model picks a skill by it)")
        notes.append("no `description`: the first paragraph of the body describes it, as in Claude Code")
    for key in fields:
        if key in _NOT_USED:
            notes.append(f"'{key}' is not used: {_NOT_USED[key]}")
        elif key not in SKILL_KEYS:
            notes.append(f"'{key}' is not a skill field codingcode uses; left out")
    notes += shape_notes(fields)
    model = fields.get("model")
    return Skill(name=name, description=description, path=path, source=source, body=front.body.strip(),
                 allowed_tools=allowed_tools_list(fields.get("allowed-tools")), notes=tuple(notes),
                 argument_hint=hint_text(fields.get("argument-hint")),
                 model=str(model) if isinstance(model, str) and model.strip() and model != "inherit" else None,
                 model_invocable=fields.get("disable-model-invocation") in (None, False),
                 user_invocable=fields.get("user-invocable") is not False)


def _plugin_skills(plugin: "Plugin", catalog: "SkillCatalog") -> None:
    from dataclasses import replace

    assert plugin.content is not None
    for path in plugin.content.skills:
        try:
            skill = _read(path, "plugin")
        except (OSError, ValueError) as error:
            catalog.errors.append(f"{path}: {error}")
            continue
        name = plugin.qualified(skill.name)
        catalog.skills[name] = replace(skill, name=name, plugin=plugin.key, plugin_root=plugin.root,
                                       plugin_data=plugin.data_dir)


def load_skills(project: Path, home: Path | None = None, plugins: Sequence["Plugin"] = ()) -> SkillCatalog:
    """Every skill of the person, of ``project`` and of ``plugins`` (the plugins that apply); a later
    source replaces a same-named skill, except that a project's never replaces the person's
    (:meth:`SkillCatalog.add`)."""
    catalog = SkillCatalog()
    for plugin in plugins:
        _plugin_skills(plugin, catalog)
    for source, directory in skill_dirs(project, home):
        if not directory.is_dir():
            continue
        for entry in sorted(directory.iterdir()):
            path = entry / "SKILL.md"
            if not path.is_file():
                continue
            try:
                skill = _read(path, source)
            except (OSError, ValueError) as error:
                catalog.errors.append(f"{path}: {error}")
                continue
            catalog.add(skill)
    return catalog


def skills_section(catalog: SkillCatalog) -> str:
    """The part of a system prompt that lists the skills the model may load ("" if none)."""
    listed = [skill for skill in catalog.listed() if skill.model_invocable]
    if not listed:
        return ""
    lines = [f"- {skill.name}: {skill.description}" for skill in listed]
    return ("Skills: instructions for particular tasks, loaded on demand. When a task matches a skill's "
            f"description, call {LOAD_SKILL}(name) first and follow what it says; {LOAD_SKILL}(name, file) reads "
            "a file the skill bundles.\n" + "\n".join(lines))


def skill_bodies(catalog: SkillCatalog, names: tuple[str, ...]) -> tuple[str, list[str]]:
    """The instructions of the skills ``names`` (for a sub-agent that names them), and the names not found."""
    parts, missing = [], []
    for name in names:
        skill = catalog.skills.get(name)
        if skill is None:
            missing.append(name)
            continue
        parts.append(f"<skill name=\"{name}\" directory=\"{skill.directory}\">\n{skill_text(skill)}\n</skill>")
    return "\n\n".join(parts), missing


def skill_text(skill: Skill, arguments: str = "", session_id: str = "") -> str:
    """A skill's body with what Claude Code fills in when it is used: ``${CLAUDE_SKILL_DIR}``, a plugin's
    ``${CLAUDE_PLUGIN_ROOT}`` and ``${CLAUDE_PLUGIN_DATA}``, ``${CLAUDE_SESSION_ID}``, and the arguments
    (``$ARGUMENTS``, ``$ARGUMENTS[N]``, ``$1``...)."""
    from .claude.templates import fill_arguments, fill_variables

    text = fill_variables(skill.body, skill_dir=skill.directory, plugin_root=skill.plugin_root,
                          plugin_data=skill.plugin_data, session_id=session_id)
    return fill_arguments(text, arguments, append=False)
