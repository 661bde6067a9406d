"""Agent profiles: who a (sub-)agent is — its prompt, its tools, its model, its limits.

A profile is a Markdown file whose YAML front matter holds the settings and whose body is
the system prompt::

    ---
    name: reviewer
    description: Reviews a diff for bugs and style.
    tools: [read_file, search_code]      # or "read_file, search_code"; globs allowed
    mcp_servers: [github]
    model: claude-haiku-4-5              # "inherit" (or absent): the dispatching agent's
    max_steps: 20
    permission_mode: plan                # stricter applies at once; looser only once trusted
    disabled: false
    ---
    You review changes...

Claude Code's agent files (``.claude/agents/*.md``, ``~/.claude/agents/*.md``) are read as
they are: ``tools: Read, Grep, Glob`` and ``disallowedTools`` in Claude Code's names (or
``mcp__server__tool``), ``model: sonnet|opus|haiku|inherit`` (aliases mapped to model ids in
:mod:`..models.aliases`), ``permissionMode`` (``bypassPermissions`` is our ``bypass``),
``maxTurns`` (our ``max_steps``), ``mcpServers`` (server names). Fields we do not use
(``color``, ``skills``, ``memory``, ``hooks``, ...) are kept out and listed in
``AgentProfile.ignored``; an unknown field that is a near miss of a known one (``toolz``) is
an error, since a misspelt restriction must not pass silently.

A profile's permission mode stricter than the session's applies at once; a looser one only
when the profile is the person's own or the project is trusted (a trust item, see
:mod:`..trust.items`); otherwise the session's mode stands.

Sources, lowest precedence first: the built-ins (``explore``, ``plan``), the agents of the
plugins that apply (``plugin:agent``; a plugin may not raise its agents' powers: their
``permissionMode`` may only tighten, servers defined inside are not started), the person's ``~/.claude/agents`` then
``~/.codingcode/agents``, the project's ``.claude/agents`` then ``.codingcode/agents`` (at each
level ours is more specific; subdirectories are read too). A file of a higher source
replaces a profile of the same name; ``disabled: true`` hides it. A broken file is a
:class:`ProfileError` naming the file and the field; it hides the profile it would have
defined, so asking for that profile reports the error instead of silently running another.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..claude.front_matter import read_front_matter
from ..claude.names import our_tool_globs
from ..models.aliases import resolve_alias
from ..settings import MODE_ALIASES, MODE_STRICTNESS, PermissionMode, stricter_mode

if TYPE_CHECKING:
    from ..plugins.catalog import Plugin

__all__ = [
    "DISPATCH_TOOL_NAME",
    "MODE_STRICTNESS",
    "AgentProfile",
    "ProfileError",
    "ProfileCatalog",
    "builtin_profiles",
    "parse_profile",
    "load_profile_file",
    "load_profiles",
    "profile_dirs",
    "project_profile_dirs",
    "profile_files",
    "AGENT_KEYS",
    "profile_mode",
    "stricter_mode",
]

DISPATCH_TOOL_NAME = "dispatch_agent"
MAX_PROFILE_CHARS = 100_000
ProfileSource = Literal["builtin", "user", "project", "claude-user", "claude-project", "plugin"]

class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the field."""


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


# Claude Code's front matter fields we do not use, and why (shown in %agent doctor).
_IGNORED_FIELDS = {
    "color": "the notebook does not colour sub-agents",
    "memory": "codingcode has no agent memory",
    "hooks": "agent-scoped hooks do not run here; put them in a settings file",
    "isolation": "sub-agents share the project directory here",
    "background": "sub-agents run in the turn that dispatched them",
    "effort": "codingcode does not set a thinking effort",
    "initialPrompt": "a sub-agent starts from the prompt dispatch_agent gives it",
    "forkContext": "a sub-agent starts from a fresh context",
}
_CLAUDE_MODES = {"dontAsk": "default"}
# Every field an agent file may start a line with (ours, Claude Code's), for front matter whose values
# run on over unindented lines: any other `word:` at the margin is part of the value before it.
AGENT_KEYS = frozenset({"name", "description", "tools", "disallowedTools", "mcp_servers", "mcpServers", "model",
                        "max_steps", "maxTurns", "permission_mode", "permissionMode", "disabled", "skills",
                        "capabilities", "when_to_use", "version", "author", "tags", "category", "license",
                        "metadata", *_IGNORED_FIELDS})


class _FrontMatter(BaseModel):
    """The YAML front matter as written, ours and Claude Code's fields (others are taken out first)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    description: str = Field(min_length=1)
    tools: list[str] | None = None
    disallowedTools: list[str] | None = None
    mcp_servers: list[str] | None = None
    mcpServers: list[Any] | None = None
    model: str | None = None
    max_steps: int | None = Field(default=None, ge=1, le=1000)
    maxTurns: int | None = Field(default=None, ge=1, le=1000)
    permission_mode: PermissionMode | None = None
    permissionMode: PermissionMode | None = None
    disabled: bool = False
    skills: list[str] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.match(value):
            raise ValueError("must be 1-64 letters, digits, '-' or '_', starting with a letter or digit")
        return value

    @field_validator("tools", "disallowedTools", "mcp_servers", "mcpServers", "skills", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        # Claude Code's agent files write `tools: Read, Grep` (or `Read Grep`, as Agent Skills do);
        # accept those as well as a list.
        if isinstance(value, str):
            from ..claude.templates import allowed_tools_list

            return list(allowed_tools_list(value))
        return value

    @field_validator("tools", "disallowedTools", "mcp_servers")
    @classmethod
    def _non_empty_items(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not item.strip() for item in value):
            raise ValueError("entries must be non-empty names")
        return [item.strip() for item in value] if value is not None else None

    @field_validator("permission_mode", "permissionMode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        if isinstance(value, str):
            return MODE_ALIASES.get(value, _CLAUDE_MODES.get(value, value))
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a model name or 'inherit'")
        # `sonnet`, `opus`, `haiku` are families; `inherit` (or absent) is the dispatching agent's model.
        return resolve_alias(value)


def _screen_fields(raw: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """The front matter without the fields we do not use, and a note for each one left out."""
    known = list(_FrontMatter.model_fields)
    kept: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in raw.items():
        key = str(key)
        if key in _FrontMatter.model_fields:
            kept[key] = value
        elif key in _IGNORED_FIELDS:
            notes.append(f"field '{key}' is not used: {_IGNORED_FIELDS[key]}")
        else:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            if close:
                raise ProfileError(f"{where}: field '{key}': unknown field; did you mean '{close[0]}'? "
                                   f"(allowed: {', '.join(known)})")
            notes.append(f"field '{key}' is not a field codingcode knows; left out")
    if isinstance(raw.get("permissionMode"), str) and raw["permissionMode"] in _CLAUDE_MODES:
        notes.append(f"permissionMode '{raw['permissionMode']}' is not available here; 'default' applies "
                     "(it asks you instead)")
    return kept, notes


def _tool_names(entries: list[str] | None, field_name: str, notes: list[str]) -> tuple[str, ...] | None:
    """A tools list in our display names (Claude Code's names and mcp__ forms mapped)."""
    if entries is None:
        return None
    out: list[str] = []
    for entry in entries:
        mapped = our_tool_globs(entry)
        if not mapped:
            notes.append(f"{field_name}: '{entry}' has no counterpart here")
        for name in mapped:
            if name not in out:
                out.append(name)
    return tuple(out)


@dataclass(frozen=True)
class AgentProfile:
    """One usable profile."""

    name: str
    description: str
    system_prompt: str
    # Tool display names or globs; None means every tool the session offers.
    tools: tuple[str, ...] | None = None
    mcp_servers: tuple[str, ...] | None = None
    # None: the dispatching agent's model.
    model: str | None = None
    max_steps: int | None = None
    permission_mode: PermissionMode | None = None
    disabled: bool = False
    source: ProfileSource = "builtin"
    path: Path | None = None
    # Tool display names or globs the profile may never use (Claude Code's disallowedTools).
    disallowed_tools: tuple[str, ...] = ()
    # What the file holds that has no effect here, one sentence each.
    ignored: tuple[str, ...] = ()
    # Whether a permission mode looser than the session's may apply (the person's own file, or trusted).
    mode_trusted: bool = True
    # Skills (by name) whose instructions the agent starts with, as Claude Code's `skills:` field.
    skills: tuple[str, ...] = ()

    def allows_dispatch(self) -> bool:
        """Whether this profile's own tool list names dispatch_agent (a sub-agent needs that)."""
        return self.tools is not None and any(fnmatchcase(DISPATCH_TOOL_NAME, pattern) for pattern in self.tools)

    @property
    def origin(self) -> str:
        return str(self.path) if self.path else f"built-in profile '{self.name}'"


_READ_ONLY_LOCAL = ("read_file", "search_code", "search_files")

_EXPLORE_PROMPT = """You are explore, a sub-agent that finds things in a code base. Another agent \
dispatched you with a question; it cannot see your work, only your final message.

- Search broadly first (search_files for names, search_code for contents), then read the \
relevant parts with read_file. Try several spellings and places before concluding something \
does not exist.
- You are read-only: you cannot change files or run commands. Do not offer to.
- Your final message is your whole answer: list what you found with exact paths and line \
numbers (`path:line`), quote the few lines that matter, and say plainly what you did not \
find. No preamble."""

_PLAN_PROMPT = """You are plan, a sub-agent that designs how to carry out a change. Another \
agent dispatched you with a task; it cannot see your work, only your final message.

- Study the code the task touches (search_files, search_code, read_file) until you know \
where each change goes and what it may break; read the tests too.
- You are read-only: you cannot change files or run commands. Do not make the change.
- Your final message is the plan: numbered steps, each naming the files (and functions) to \
change and how, the tests to add or run, and the risks or open questions. Be concrete and \
short; no preamble."""


def builtin_profiles() -> dict[str, AgentProfile]:
    """The profiles every session has unless a user or project file replaces them."""
    return {
        "explore": AgentProfile(
            name="explore",
            description="Finds files, definitions and usages in the project and reports them with paths and line numbers (read-only).",
            system_prompt=_EXPLORE_PROMPT,
            tools=_READ_ONLY_LOCAL,
            mcp_servers=(),
            max_steps=40,
            permission_mode="plan",
        ),
        "plan": AgentProfile(
            name="plan",
            description="Studies the code a task touches and returns a step-by-step implementation plan (read-only).",
            system_prompt=_PLAN_PROMPT,
            tools=_READ_ONLY_LOCAL,
            mcp_servers=(),
            max_steps=40,
            permission_mode="plan",
        ),
    }


# -- parsing ------------------------------------------------------------------------------

def _described(raw: dict[str, Any], body: str) -> tuple[str, str] | None:
    """A description for a file without one: its ``metadata.description``, else the first paragraph of
    its body (None when it has one, or nothing can stand for one)."""
    if isinstance(raw.get("description"), str) and raw["description"].strip():
        return None
    metadata = raw.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("description"), str) and metadata["description"].strip():
        return metadata["description"].strip(), "its metadata.description"
    for block in body.strip().split("\n\n"):
        text = " ".join(line.strip().lstrip("#").strip() for line in block.splitlines() if line.strip())
        if text:
            return text[:300], "the first paragraph of its body"
    return None


def parse_profile(text: str, *, where: str, default_name: str, source: ProfileSource = "project", path: Path | None = None) -> AgentProfile:
    """A profile from the text of a profile file; ``where`` names it in error messages.

    The front matter is read as Claude Code reads it (:mod:`..claude.front_matter`): a value
    holding an unquoted ``: `` is its plain text, and the profile says so in ``ignored``.
    """
    read = read_front_matter(text, AGENT_KEYS)
    if not read.present:
        raise ProfileError(f"{where}: must start with YAML front matter between '---' lines (name, description, ...)")
    if read.broken:
        raise ProfileError(f"{where}: {read.notes[0]}")
    raw, body = read.fields, read.body
    described = _described(raw, body)
    raw, notes = _screen_fields(raw, where)
    notes[:0] = read.notes
    if described is not None:
        raw["description"], why = described
        notes.append(f"no `description`: {why} describes it (the model picks an agent by it)")
    try:
        meta = _FrontMatter.model_validate(raw)
    except ValidationError as error:
        problems = []
        for item in error.errors(include_url=False):
            loc = item["loc"]
            name = str(loc[0]) if loc else "(front matter)"
            problems.append(f"field '{name}': {item['msg']}")
        raise ProfileError(f"{where}: " + "; ".join(problems)) from None
    name = meta.name or default_name
    if not _NAME.match(name):
        raise ProfileError(f"{where}: field 'name': missing, and the file name '{default_name}' is not a valid profile name")
    prompt = body.strip()
    if not prompt and not meta.disabled:
        raise ProfileError(f"{where}: field 'body': the text after the front matter is the system prompt and must not be empty")
    modes: list[PermissionMode] = [m for m in (meta.permission_mode, meta.permissionMode) if m is not None]
    mode = max(modes, key=lambda m: MODE_STRICTNESS[str(m)]) if modes else None
    if len(set(modes)) > 1:
        notes.append(f"permission_mode and permissionMode differ; the stricter, '{mode}', applies")
    steps = [n for n in (meta.max_steps, meta.maxTurns) if n is not None]
    servers = list(meta.mcp_servers or [])
    for entry in meta.mcpServers or []:
        if isinstance(entry, str):
            servers.append(entry)
        else:
            notes.append("mcpServers: a server defined inside an agent file is not started here; add it to .mcp.json")
    return AgentProfile(
        name=name,
        description=meta.description.strip(),
        system_prompt=prompt,
        tools=_tool_names(meta.tools, "tools", notes),
        mcp_servers=tuple(servers) if meta.mcp_servers is not None or meta.mcpServers is not None else None,
        model=meta.model,
        max_steps=min(steps) if steps else None,
        permission_mode=mode,
        disabled=meta.disabled,
        source=source,
        path=path,
        disallowed_tools=_tool_names(meta.disallowedTools, "disallowedTools", notes) or (),
        ignored=tuple(notes),
        skills=tuple(meta.skills or ()),
    )


def load_profile_file(path: Path, source: ProfileSource = "project") -> AgentProfile:
    """Parse one profile file; ProfileError names the file on any problem."""
    from ..config_files import read_config_bytes

    try:
        data = read_config_bytes(path, MAX_PROFILE_CHARS * 4 + 1)
    except OSError as error:
        raise ProfileError(f"{path}: cannot be read: {error.strerror or error}") from None
    if len(data) > MAX_PROFILE_CHARS:
        raise ProfileError(f"{path}: {len(data)} bytes is too large for a profile (max {MAX_PROFILE_CHARS})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ProfileError(f"{path}: not UTF-8 text (byte {error.start})") from None
    return parse_profile(text, where=str(path), default_name=path.stem, source=source, path=path)


def profile_files(directory: Path) -> list[Path]:
    """The agent files of ``directory``, its subdirectories' included (Claude Code reads
    ``.claude/agents/review/security.md`` as it reads ``.claude/agents/security.md``)."""
    if not directory.is_dir():
        return []
    return sorted(path for path in directory.rglob("*.md") if path.is_file())


def project_profile_dirs(project: Path) -> list[tuple[ProfileSource, Path]]:
    """The project's profile directories, Claude Code's then ours (increasing precedence)."""
    return [("claude-project", Path(project) / ".claude" / "agents"), ("project", Path(project) / ".codingcode" / "agents")]


def profile_dirs(project: Path, home: Path | None = None) -> list[tuple[ProfileSource, Path]]:
    """(source, directory) in increasing precedence; ``home`` stands in for the person's home."""
    from ..claude.files import claude_dir
    from ..user_dir import user_dir

    mine = (home / ".codingcode" if home is not None else user_dir()) / "agents"
    theirs = (home / ".claude" if home is not None else claude_dir()) / "agents"
    return [("claude-user", theirs), ("user", mine), *project_profile_dirs(project)]


def profile_mode(session: PermissionMode, profile: AgentProfile | None) -> PermissionMode:
    """The mode an agent under ``profile`` runs in when the session's is ``session``.

    Stricter applies at once; looser only when the profile's mode is trusted.
    """
    if profile is None or profile.permission_mode is None:
        return session
    if profile.mode_trusted:
        return profile.permission_mode
    return stricter_mode(session, profile.permission_mode)


@dataclass
class ProfileCatalog:
    """The profiles of a session, with the files that failed to load."""

    profiles: dict[str, AgentProfile] = field(default_factory=dict)
    # Profile name (or file stem) -> the error that hid it.
    errors: dict[str, ProfileError] = field(default_factory=dict)

    def available(self) -> list[AgentProfile]:
        """Enabled profiles, by name."""
        return [p for _, p in sorted(self.profiles.items()) if not p.disabled]

    def get(self, name: str) -> AgentProfile:
        """The enabled profile ``name`` (a plugin's ``plugin:agent`` also by its short name when no other
        profile has it); ProfileError saying why not (broken, disabled, unknown)."""
        if name in self.errors:
            raise self.errors[name]
        profile = self.profiles.get(name)
        if profile is None and ":" not in name:
            matches = [p for key, p in self.profiles.items() if key.rsplit(":", 1)[-1] == name and ":" in key]
            profile = matches[0] if len(matches) == 1 else None
        if profile is None:
            names = ", ".join(p.name for p in self.available()) or "none"
            raise ProfileError(f"No agent profile named '{name}'. Available: {names}.")
        if profile.disabled:
            raise ProfileError(f"The agent profile '{name}' is disabled ({profile.origin}: disabled: true).")
        return profile


_PLUGIN_MODE = "a plugin's agent runs in the session's mode, as in Claude Code (a plugin may not raise its own powers)"


def _plugin_profiles(plugin: "Plugin", catalog: ProfileCatalog) -> None:
    """A plugin's agents, named ``plugin:agent``; the fields Claude Code ignores there are ignored here too."""
    assert plugin.content is not None
    for path in plugin.content.agents:
        try:
            profile = load_profile_file(path, "plugin")
        except ProfileError as error:
            catalog.errors[plugin.qualified(path.stem)] = error
            continue
        name = plugin.qualified(profile.name)
        notes = list(profile.ignored)
        mode = profile.permission_mode
        if mode is not None and MODE_STRICTNESS[mode] < MODE_STRICTNESS["default"]:
            notes.append(f"permissionMode '{mode}' only tightens here: {_PLUGIN_MODE}")
        prompt = profile.system_prompt.replace("${CLAUDE_PLUGIN_ROOT}", str(plugin.root)).replace(
            "${CLAUDE_PLUGIN_DATA}", str(plugin.data_dir))
        # mode_trusted False: its mode may tighten the session's, never loosen it.
        catalog.profiles[name] = replace(profile, name=name, mode_trusted=False, system_prompt=prompt,
                                         ignored=tuple(notes))


def load_profiles(project: Path, *, home: Path | None = None, untrusted_modes: Collection[str] | None = None,
                  plugins: Sequence["Plugin"] = ()) -> ProfileCatalog:
    """Built-in, plugin, user and project profiles merged by precedence (see the module docstring).

    ``untrusted_modes``: the project profile files whose permission mode may not loosen the
    session's (the settings' :attr:`~..project_settings.EffectiveSettings.untrusted_profile_modes`);
    None: no project profile's mode may. ``plugins``: the plugins that apply.
    """
    catalog = ProfileCatalog(profiles=builtin_profiles())
    for plugin in plugins:
        _plugin_profiles(plugin, catalog)
    for source, directory in profile_dirs(project, home):
        if not directory.is_dir():
            continue
        seen: dict[str, Path] = {}
        for path in profile_files(directory):
            try:
                profile = load_profile_file(path, source)
                if source in ("project", "claude-project"):
                    trusted = untrusted_modes is not None and str(path) not in untrusted_modes
                    profile = replace(profile, mode_trusted=trusted)
            except ProfileError as error:
                catalog.profiles.pop(path.stem, None)
                catalog.errors[path.stem] = error
                continue
            if profile.name in seen:
                catalog.profiles.pop(profile.name, None)
                catalog.errors[profile.name] = ProfileError(
                    f"{path}: field 'name': '{profile.name}' is already defined by {seen[profile.name]}")
                continue
            seen[profile.name] = path
            catalog.errors.pop(profile.name, None)
            catalog.profiles[profile.name] = profile
    return catalog
