"""Slash commands: Markdown files a person runs as ``%%agent /name args``, as in Claude Code.

Where they live, lowest precedence first: the person's ``~/.claude/commands`` and
``~/.codingcode/commands``, the project's ``.claude/commands`` and ``.codingcode/commands``. A
file ``review.md`` is ``/review``; one in a subdirectory, ``frontend/component.md``, is
``/frontend:component`` and, when no other command has that last name, ``/component`` too
(Claude Code shows the subdirectory as a namespace). The commands of the plugins that apply
(:mod:`.plugins`) are ``/PLUGIN:NAME``, and ``/NAME`` when unambiguous. Every skill is a command
too (``/NAME``, a plugin's ``/PLUGIN:NAME``), as in Claude Code, where a skill wins over a
command of the same name. A name that is also an MCP prompt's ``/server:prompt`` is the command:
MCP prompts keep their form for every other name.

The body is the request. Expansion, in Claude Code's order:

* ``${CLAUDE_PLUGIN_ROOT}`` / ``${CLAUDE_PLUGIN_DATA}`` (a plugin's), ``${CLAUDE_SKILL_DIR}`` (a
  skill's directory) and ``${CLAUDE_SESSION_ID}`` are filled in.
* ``$ARGUMENTS`` is everything after the name, ``$ARGUMENTS[0]`` ... its words from 0, and
  ``$1`` ... ``$9`` its words from 1 (quotes group words); a body with no ``$ARGUMENTS`` gets
  the arguments appended as ``ARGUMENTS: ...`` (nothing typed is lost).
* ``!`command``` runs the command before the turn, through the approval pipeline like any
  execute_command call (the person may be asked), and is replaced by its output; so does a
  fenced block opened with ````` ```! ````` (its lines are one script).
* ``@path`` includes that file of the project (never a secret, never outside the project;
  :mod:`.claude.instructions` says what is refused).

Front matter (read leniently, :mod:`.claude.front_matter`): ``description`` and
``argument-hint`` are listed by ``%agent commands``; ``model`` runs the turn with that
model unless the cell names one; ``allowed-tools`` are allow rules for that turn only. A
project's command that allows tools is a trust item: until the person trusts the project,
its ``allowed-tools`` do nothing (its calls are asked about as usual).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Sequence

from .claude.front_matter import read_front_matter
from .claude.instructions import expand_imports
from .claude.templates import allowed_tools_list, fill_arguments, fill_variables, hint_text, shape_notes

if TYPE_CHECKING:
    from .plugins.catalog import Plugin
    from .skills import Skill

__all__ = ["SlashCommand", "CommandCatalog", "CommandRequest", "command_dirs", "load_commands", "parse_slash",
           "expand_command", "allowed_tools_list", "hint_text", "shell_output", "fill_variables", "fill_arguments",
           "MAX_COMMAND_BYTES", "COMMAND_KEYS"]

Source = Literal["claude-user", "user", "claude-project", "project", "plugin"]
MAX_COMMAND_BYTES = 200_000
_HEAD = re.compile(r"^/(?P<name>[A-Za-z0-9][\w.:-]*)(?:[ \t]+(?P<rest>.*))?$", re.DOTALL)
_BANG = re.compile(r"!`([^`\n]+)`")
# A fenced block opened with ```! : its lines run as one script, its output replaces it.
_FENCED = re.compile(r"^[ \t]*```![ \t]*\n(.*?)\n[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class SlashCommand:
    """One command file as read."""

    name: str
    path: Path
    source: Source
    body: str
    description: str = ""
    argument_hint: str = ""
    model: str | None = None
    allowed_tools: tuple[str, ...] = ()
    # The subdirectory it sits in ("" at the top).
    namespace: str = ""
    # How the file was read where it differs from what it says (front matter notes, keys not used).
    notes: tuple[str, ...] = ()
    # "skill": a skill typed as a command (its body, its directory's files).
    kind: Literal["command", "skill"] = "command"
    # The plugin it comes with (its key), and what its body may name of it.
    plugin: str | None = None
    plugin_root: Path | None = None
    plugin_data: Path | None = None
    skill_dir: Path | None = None

    @property
    def from_project(self) -> bool:
        return self.source in ("claude-project", "project")

    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.argument_hint}" if self.argument_hint else "")


@dataclass
class CommandCatalog:
    """Every command by name (short aliases included), and the files that could not be read."""

    commands: dict[str, SlashCommand] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    # Short names that several namespaced commands end with: no alias, so the person is told which exist.
    ambiguous: dict[str, tuple[str, ...]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def get(self, name: str) -> SlashCommand | None:
        return self.commands.get(name) or self.commands.get(self.aliases.get(name, ""))

    def listed(self) -> list[SlashCommand]:
        return [self.commands[name] for name in sorted(self.commands)]

    def names(self) -> list[str]:
        """Every name a cell may use, `/`-prefixed (for the completer)."""
        return sorted({f"/{name}" for name in [*self.commands, *self.aliases]})


def command_dirs(project: Path, home: Path | None = None) -> list[tuple[Source, Path]]:
    """(source, directory), lowest precedence first."""
    from .claude.files import claude_dir
    from .user_dir import user_dir

    mine = (home / ".codingcode" if home is not None else user_dir()) / "commands"
    theirs = (home / ".claude" if home is not None else claude_dir()) / "commands"
    project = Path(project)
    return [("claude-user", theirs), ("user", mine), ("claude-project", project / ".claude" / "commands"),
            ("project", project / ".codingcode" / "commands")]


_USED = {"description", "argument-hint", "model", "allowed-tools", "name"}
_NOT_USED = {"disable-model-invocation": "commands here run only when a person types them"}
COMMAND_KEYS = frozenset({*_USED, *_NOT_USED})


def _read(path: Path, name: str, namespace: str, source: Source) -> SlashCommand:
    from .config_files import read_config_bytes

    # A regular file of bounded size only: a committed link to /dev/zero must not hang the kernel.
    data = read_config_bytes(path, MAX_COMMAND_BYTES)
    text = data.decode("utf-8", errors="replace")
    front = read_front_matter(text, COMMAND_KEYS)
    notes = list(front.notes)
    fields = front.fields
    for key in fields:
        if key in _NOT_USED:
            notes.append(f"'{key}' is not used: {_NOT_USED[key]}")
        elif key not in _USED:
            notes.append(f"'{key}' is not a command field codingcode knows; left out")
    notes += shape_notes(fields)
    model = fields.get("model")
    return SlashCommand(
        name=name, path=path, source=source, body=front.body.strip("\n"),
        description=" ".join(str(fields.get("description") or "").split()) or _first_line(front.body),
        argument_hint=hint_text(fields.get("argument-hint")),
        model=str(model) if isinstance(model, str) and model.strip() and model != "inherit" else None,
        allowed_tools=allowed_tools_list(fields.get("allowed-tools")), namespace=namespace, notes=tuple(notes))


def _first_line(body: str) -> str:
    line = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return line[:100]


def _from_skill(skill: "Skill") -> SlashCommand:
    return SlashCommand(name=skill.name, path=skill.path, source=skill.source, body=skill.body,
                        description=skill.description, argument_hint=skill.argument_hint, model=skill.model,
                        allowed_tools=skill.allowed_tools, notes=skill.notes, kind="skill", plugin=skill.plugin,
                        plugin_root=skill.plugin_root, plugin_data=skill.plugin_data, skill_dir=skill.directory)


def _plugin_commands(plugin: "Plugin", catalog: CommandCatalog) -> list[str]:
    from dataclasses import replace

    assert plugin.content is not None
    names = []
    for inner, path in plugin.content.commands:
        name = plugin.qualified(inner)
        try:
            command = _read(path, name, plugin.name, "plugin")
        except (OSError, ValueError) as error:
            catalog.errors.append(f"{path}: {error}")
            continue
        catalog.commands[name] = replace(command, plugin=plugin.key, plugin_root=plugin.root,
                                         plugin_data=plugin.data_dir)
        names.append(name)
    return names


def load_commands(project: Path, home: Path | None = None, plugins: Sequence["Plugin"] = (), *,
                  skills: bool = True) -> CommandCatalog:
    """Every command of ``project``, of the person and of ``plugins`` (those that apply), with every
    skill a person may type when ``skills`` (see the module docstring)."""
    catalog = CommandCatalog()
    namespaced: list[str] = []
    for plugin in plugins:
        namespaced += _plugin_commands(plugin, catalog)
    for source, directory in command_dirs(project, home):
        if not directory.is_dir():
            continue
        for path in sorted(directory.rglob("*.md")):
            if not path.is_file():
                continue
            parts = path.relative_to(directory).with_suffix("").parts
            name = ":".join(parts)
            try:
                command = _read(path, name, ":".join(parts[:-1]), source)
            except (OSError, ValueError) as error:
                catalog.errors.append(f"{path}: {error}")
                continue
            catalog.commands[name] = command  # a more specific source replaces the same name
            namespaced.append(name)
    if skills:
        from .skills import load_skills

        for skill in load_skills(project, home, plugins).listed():
            if skill.user_invocable:
                catalog.commands[skill.name] = _from_skill(skill)  # a skill wins over a command of its name
                namespaced.append(skill.name)
    short: dict[str, set[str]] = {}
    for name in dict.fromkeys(namespaced):
        if ":" in name:
            short.setdefault(name.rsplit(":", 1)[1], set()).add(name)
    for alias, names in short.items():
        if alias not in catalog.commands and len(names) == 1:
            catalog.aliases[alias] = next(iter(names))
        elif alias not in catalog.commands:
            catalog.ambiguous[alias] = tuple(sorted(names))
    return catalog


def parse_slash(text: str) -> tuple[str, str] | None:
    """(name, arguments) of a request that starts with ``/name``; None otherwise."""
    match = _HEAD.match(text.strip())
    if match is None:
        return None
    return match.group("name"), (match.group("rest") or "").strip()


@dataclass
class CommandRequest:
    """A command expanded up to its ``!`` lines, which run when the turn starts."""

    command: SlashCommand
    arguments: str
    # The body with each ``!`command``` replaced by a marker ``\0N\0``.
    template: str
    shell: list[str]
    project: Path
    # Notes for the person (refused @file imports, front matter notes).
    notes: list[str] = field(default_factory=list)
    # Text for the model before the command's (what `%agent undo` reverted, MCP notes).
    preface: str = ""

    def render(self, outputs: list[str]) -> str:
        """The request text once the ``!`` commands ran (``outputs`` in order)."""
        text = self.template
        for index, output in enumerate(outputs):
            text = text.replace(f"\0{index}\0", output.rstrip("\n"))
        imported = expand_imports(self.project / f".{self.command.name}.md", text, root=self.project)
        self.notes.extend(imported.refused)
        return self.preface + imported.text


_SECTIONS = re.compile(r"^(?P<head>.*?)\n--- stdout ---\n(?P<out>.*)\n--- stderr ---\n(?P<err>.*)$", re.DOTALL)


def shell_output(result_text: str) -> str:
    """What a `!` line puts in the request: the command's output (stdout, then stderr), as Claude
    Code inlines it; a failed or denied command says so in the text execute_command gave."""
    match = _SECTIONS.match(result_text)
    if match is None:
        return result_text
    parts = [part for part in (match.group("out"), match.group("err")) if part != "(empty)"]
    head = match.group("head")
    if not head.startswith("exit code 0"):
        parts.insert(0, f"({head.strip()})")
    return "\n".join(parts)


def expand_command(command: SlashCommand, arguments: str, project: Path, session_id: str = "") -> CommandRequest:
    """``command`` with ``arguments`` filled in (see the module docstring for the order)."""
    body = fill_variables(command.body, skill_dir=command.skill_dir, plugin_root=command.plugin_root,
                          plugin_data=command.plugin_data, session_id=session_id)
    body = fill_arguments(body, arguments)
    shell: list[str] = []

    def mark(match: re.Match[str]) -> str:
        shell.append(match.group(1))
        return f"\0{len(shell) - 1}\0"

    template = _BANG.sub(mark, _FENCED.sub(mark, body))
    if command.kind == "skill" and command.skill_dir is not None:
        files = _bundled(command.skill_dir)
        if files:
            template += f"\n\n(Files of the skill {command.name}, in {command.skill_dir}: {', '.join(files)}; " \
                        f"read one with load_skill({command.name!r}, file).)"
    return CommandRequest(command, arguments, template, shell, Path(project), notes=list(command.notes))


def _bundled(directory: Path, limit: int = 50) -> list[str]:
    found = []
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != "SKILL.md" and not any(p.startswith(".") for p in path.parts[-2:]):
            found.append(path.relative_to(directory).as_posix())
            if len(found) >= limit:
                break
    return found
