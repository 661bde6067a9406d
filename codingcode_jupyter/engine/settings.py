"""Settings files, ours and Claude Code's, read into one schema.

Ours: the person's own ``~/.codingcode/settings.json`` ("user"), the project's
``.codingcode/settings.json`` ("project", shared, committed) and
``.codingcode/settings.local.json`` ("local", personal, where "Always allow" writes).
Claude Code's, read beside them: ``~/.claude/settings.json`` ("claude-user"),
``.claude/settings.json`` ("claude-project") and ``.claude/settings.local.json``
("claude-local"). From the least to the most specific: claude-user, user, claude-project,
project, claude-local, local — at each level our file is the more specific one. Above them all,
the organisation's managed files (Claude Code's ``/etc/claude-code/managed-settings.json``,
"claude-managed", then ours, ``/etc/codingcode/managed-settings.json``, "managed"): see :mod:`.managed`.

Field names follow Claude Code's (camelCase on disk). A key we do not use is not an error:
it is left out and listed with the reason (:class:`IgnoredSetting`), so a real Claude Code
file loads and the person sees what did not carry over. A value that is wrong (``"defaultMode":
"allowEdits"``) or a rule that cannot be read is left out with a warning naming the file, the
key and what was expected (shown with the next cell, in ``%agent status`` and ``%agent
doctor``): the rest of the file applies, its deny and ask rules above all. What cannot be read
at all is an error (:class:`SettingsError`, naming the file and the entry): broken JSON, and an
unknown key that is a near miss of one of ours (``permisions``) — a typo must not drop the
rules it holds.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .hooks.events import HOOK_EVENTS

__all__ = [
    "PermissionMode",
    "MODES",
    "AutoModeSettings",
    "MODE_STRICTNESS",
    "MODE_ALIASES",
    "stricter_mode",
    "Dialect",
    "HOOK_EVENTS",
    "PermissionsSettings",
    "HookCommand",
    "RUNNABLE_HOOK_TYPES",
    "HookMatcher",
    "HooksSettings",
    "SandboxFilesystem",
    "SandboxNetwork",
    "SandboxSettings",
    "WebSearchSettings",
    "Settings",
    "SettingsError",
    "IgnoredSetting",
    "SettingsFile",
    "SettingsSource",
    "settings_sources",
    "settings_paths",
    "read_settings_file",
    "read_hooks_value",
    "load_settings_file",
    "load_settings",
]

PermissionMode = Literal["default", "acceptEdits", "plan", "bypass", "auto"]
# The modes, in the order they are offered (`%agent mode`, `--mode`): the one list, read from the type.
MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)
Dialect = Literal["codingcode", "claude"]

# Higher is stricter. auto is looser than acceptEdits (it allows in-project edits too, and a reviewer
# answers what would be asked) and stricter than bypass (what the reviewer does not allow reaches the person).
MODE_STRICTNESS: dict[str, int] = {"bypass": 0, "auto": 1, "acceptEdits": 2, "default": 3, "plan": 4}
if set(MODE_STRICTNESS) != set(MODES):
    raise RuntimeError(f"MODE_STRICTNESS ranks {sorted(MODE_STRICTNESS)}, the modes are {MODES}")
# Claude Code's spellings of our modes (accepted in every file).
MODE_ALIASES: dict[str, PermissionMode] = {"bypassPermissions": "bypass", "manual": "default"}
# Claude Code's modes we do not have, and what applies instead: `default` asks a person where
# dontAsk would deny without asking (never the looser `auto`: a reviewer must not answer what the
# person wanted refused).
_UNSUPPORTED_MODES = {
    "dontAsk": "Claude Code's dontAsk mode (deny whatever would ask) is not available here; default applies, "
               "which asks you instead",
}




def stricter_mode(current: PermissionMode, requested: PermissionMode | None) -> PermissionMode:
    """The stricter of two permission modes (``requested`` None keeps ``current``)."""
    if requested is None or MODE_STRICTNESS[requested] <= MODE_STRICTNESS[current]:
        return current
    return requested


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PermissionsSettings(_Model):
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    defaultMode: PermissionMode | None = None
    # Directories outside the project that read-only tools may read without asking (Claude
    # Code's key): absolute, `~/...`, or relative to the project.
    additionalDirectories: list[str] = Field(default_factory=list)
    # Claude Code's lock on bypass mode; it only tightens, so it applies from any file.
    disableBypassPermissionsMode: Literal["disable"] | None = None
    # Its lock on auto mode (the reviewer); it only tightens too.
    disableAutoMode: Literal["disable"] | None = None


# The hook types that run here (Claude Code's agent and mcp_tool hooks do not).
RUNNABLE_HOOK_TYPES = frozenset({"command", "http", "prompt"})


class HookCommand(_Model):
    # `command`, `http` and `prompt` hooks run here; `agent` and `mcp_tool` hooks are kept so a
    # PreToolUse hook that cannot run fails closed (the call is asked) instead of vanishing.
    type: Literal["command", "http", "prompt", "agent", "mcp_tool"] = "command"
    command: str = ""
    # Seconds; None: the file's default (ours 30, Claude Code's 60).
    timeout: float | None = Field(default=None, gt=0)
    # http: where the event is POSTed, the headers (`$VAR` only from allowedEnvVars), the variables they may name.
    url: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    allowedEnvVars: list[str] = Field(default_factory=list)
    # prompt: what a model is asked (`$ARGUMENTS` is the event as JSON), and which model.
    prompt: str = ""
    model: str | None = None


class HookMatcher(_Model):
    # Ours: `|`-separated globs over tool names (ours or Claude Code's). Claude Code's:
    # exact names, `|` lists, else a regular expression. "" or "*" matches every tool.
    matcher: str = "*"
    hooks: list[HookCommand]


class HooksSettings(_Model):
    PreToolUse: list[HookMatcher] = Field(default_factory=list)
    PostToolUse: list[HookMatcher] = Field(default_factory=list)
    PostToolUseFailure: list[HookMatcher] = Field(default_factory=list)
    UserPromptSubmit: list[HookMatcher] = Field(default_factory=list)
    Stop: list[HookMatcher] = Field(default_factory=list)
    SubagentStop: list[HookMatcher] = Field(default_factory=list)
    SessionStart: list[HookMatcher] = Field(default_factory=list)
    SessionEnd: list[HookMatcher] = Field(default_factory=list)
    PreCompact: list[HookMatcher] = Field(default_factory=list)
    Notification: list[HookMatcher] = Field(default_factory=list)
    PermissionRequest: list[HookMatcher] = Field(default_factory=list)
    SubagentStart: list[HookMatcher] = Field(default_factory=list)
    Setup: list[HookMatcher] = Field(default_factory=list)
    # Observers of every approval decision and outcome (they see each audit record).
    ApprovalPost: list[HookMatcher] = Field(default_factory=list)


# The fields above are the hook events, one each (typed attributes for the code that reads them).
if tuple(HooksSettings.model_fields) != HOOK_EVENTS:
    raise RuntimeError(f"HooksSettings fields {tuple(HooksSettings.model_fields)} differ from HookEvent {HOOK_EVENTS}")


class SandboxFilesystem(_Model):
    allowWrite: list[str] = Field(default_factory=list)
    # Directories of the home (or elsewhere) a sandboxed command may read besides the built-in
    # allowlist of caches and toolchains (sandbox/home.py); ~/.codingcode is refused.
    allowRead: list[str] = Field(default_factory=list)
    denyRead: list[str] = Field(default_factory=list)
    denyWrite: list[str] = Field(default_factory=list)


class SandboxNetwork(_Model):
    allowedDomains: list[str] | None = None
    # Refused even where an allowed pattern covers them (`*.github.com` but not `gist.github.com`);
    # every `domain:` deny rule (WebFetch(domain:…)) joins it.
    deniedDomains: list[str] | None = None


class SandboxPreview(_Model):
    # A command's Preview runs it in a throwaway copy of the project when bubblewrap cannot overlay
    # it (Landlock, bubblewrap before 0.9): a project with more files or bytes than this is not
    # copied, and the card says so.
    maxFiles: int = Field(default=50_000, ge=0)
    maxMB: int = Field(default=1024, ge=0)


class SandboxSettings(_Model):
    enabled: bool = True
    # "auto": bubblewrap where it can build its namespaces, else Landlock; or one of them only.
    backend: Literal["auto", "bwrap", "landlock"] = "auto"
    failIfUnavailable: bool = False
    filesystem: SandboxFilesystem = Field(default_factory=SandboxFilesystem)
    network: SandboxNetwork = Field(default_factory=SandboxNetwork)
    # With the sandbox available, a command no rule asks about or denies runs without a card in
    # default mode (it can only write the project and reach the allowed domains).
    autoAllow: bool = False
    # Code the agent runs in the kernel (run_python) runs in a confined fork of the kernel, with the
    # sandbox commands get; false: in the kernel itself, judged and asked (what a fork cannot carry
    # always runs there).
    confineKernelCode: bool = True
    # Under Landlock, commands start from a launcher the kernel keeps warm (one fork per command);
    # false: each starts its own launcher, an interpreter start and the plan's rules applied each time.
    warmLauncher: bool = True
    preview: SandboxPreview = Field(default_factory=SandboxPreview)
    # Environment variables passed to sandboxed commands besides the built-in allowlist, by
    # name ("NAME", or "PREFIX*"); their values are the kernel's. No value is ever set here, so
    # a shared settings file never holds a secret.
    env: list[str] = Field(default_factory=list)
    # Before each command, the project's walk learns which directories changed from inotify (on a
    # local filesystem) instead of a stat of each; false: the stat of each, every time.
    watchDirectories: bool = True


class UndoSettings(_Model):
    # What `%agent undo` may keep of the person's variables per turn: deep copies, taken before the
    # agent's code runs in the kernel, of the values it could change, up to this many megabytes
    # (values beyond it are named as not restorable). 0: no copies (new names are still removed).
    namespaceMemoryMB: int = Field(default=256, ge=0, le=1_000_000)


class WebSearchSettings(_Model):
    # "anthropic": the API's server-side web search tool; "brave" / "searxng" / "http": a
    # configured search API; None: web_search answers that it is not configured.
    backend: Literal["anthropic", "brave", "searxng", "http"] | None = None
    url: str | None = None
    apiKeyEnv: str | None = None


class AutoModeSettings(_Model):
    """The reviewer of auto mode: its model, how long it may take, and the person's own guidance.

    ``allow`` and ``block`` are plain-language lines (as Cursor's allow/block instructions):
    what the person wants let through and what they want to be asked about. A block line can
    only make the reviewer hand a call back; an allow line is read from the person's own files
    (user and local settings) only, never from a project's shared file.
    """

    model: str | None = None
    timeout: float = Field(default=10.0, gt=0)
    allow: list[str] = Field(default_factory=list)
    block: list[str] = Field(default_factory=list)


class Settings(_Model):
    autoMode: AutoModeSettings = Field(default_factory=lambda: AutoModeSettings())
    permissions: PermissionsSettings = Field(default_factory=PermissionsSettings)
    defaultMode: PermissionMode | None = None
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    undo: UndoSettings = Field(default_factory=UndoSettings)
    webSearch: WebSearchSettings = Field(default_factory=WebSearchSettings)
    model: str | None = None
    contextWindow: int | None = None
    env: dict[str, str] = Field(default_factory=dict)
    # Seconds a turn's request waits for MCP servers still starting (mcp.startup); None: Claude
    # Code's MCP_TIMEOUT if set, else 5; 0 sends the request at once.
    mcpStartupWaitSeconds: float | None = Field(default=None, ge=0, le=600)
    # Projects the person trusts wholesale (paths or globs); read from their user settings only.
    trustedProjects: list[str] = Field(default_factory=list)
    # Claude Code's plugins: "name@marketplace" -> on (true, or a list of versions) or off (false);
    # and the marketplaces known by name (their `source`), read by plugins.catalog.
    enabledPlugins: dict[str, bool | list[str]] = Field(default_factory=dict)
    extraKnownMarketplaces: dict[str, Any] = Field(default_factory=dict)
    # A command that prints the API key (run again after a 401); read from the person's own and
    # the managed files only (:mod:`.managed`): a project's file must not run a command for the key.
    apiKeyHelper: str | None = None
    # The models that may be used (Claude Code's names: family aliases, prefixes, ids) and those
    # that may not; every file's list narrows, none widens (:mod:`.managed`).
    availableModels: list[str] | None = None
    deniedModels: list[str] = Field(default_factory=list)
    # Read from the managed files only (:mod:`.managed`): only their rules, only their hooks apply.
    allowManagedPermissionRulesOnly: bool | None = None
    allowManagedHooksOnly: bool | None = None
    # The organisation's restrictions on marketplaces (source objects, as in extraKnownMarketplaces, or
    # hostPattern/pathPattern ones); read from the managed files only (:mod:`.managed`, :mod:`.plugins.catalog`).
    strictKnownMarketplaces: list[Any] | None = None
    blockedMarketplaces: list[Any] | None = None
    # Which MCP servers may start ({"serverName"}, {"serverCommand"}, {"serverUrl"} entries, as
    # Claude Code reads them: :mod:`.mcp.policy`). Every file's lists add up; unset allows all,
    # [] allows none. allowManagedMcpServersOnly is read from the managed files only, and keeps
    # their allowlist alone (:mod:`.managed`).
    allowedMcpServers: list[Any] | None = None
    deniedMcpServers: list[Any] = Field(default_factory=list)
    allowManagedMcpServersOnly: bool | None = None
    # Kept for files written before unknown keys were tolerated everywhere; never read.
    extra: dict[str, Any] = Field(default_factory=dict)


class SettingsError(ValueError):
    """A settings file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class IgnoredSetting:
    """A key of a settings file that has no effect here, and why."""

    path: Path
    key: str
    reason: str

    def describe(self) -> str:
        return f"{self.path}: {self.key} — {self.reason}"


@dataclass(frozen=True)
class SettingsFile:
    """One settings file as read: what applies, what was left out and why, and warnings."""

    settings: Settings
    ignored: tuple[IgnoredSetting, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class SettingsSource:
    """Where one settings file lives: its source name, path, who wrote its format, its level."""

    source: str
    path: Path
    dialect: Dialect
    # "user": the person's own (always applies); "project": comes with the project (screened for trust);
    # "managed": the organisation's policy (always applies, outranks the others: :mod:`.managed`).
    level: Literal["user", "project", "managed"]


def settings_sources(project: Path) -> list[SettingsSource]:
    """Every settings file of ``project``, least specific first (see the module docstring)."""
    from .claude.files import claude_dir, project_claude_dir
    from .managed_paths import FILE_NAME, claude_managed_dir, drop_in_files, managed_dir
    from .user_dir import user_dir

    ours, theirs = Path(project) / ".codingcode", project_claude_dir(project)
    return [
        SettingsSource("claude-user", claude_dir() / "settings.json", "claude", "user"),
        SettingsSource("user", user_dir() / "settings.json", "codingcode", "user"),
        SettingsSource("claude-project", theirs / "settings.json", "claude", "project"),
        SettingsSource("project", ours / "settings.json", "codingcode", "project"),
        SettingsSource("claude-local", theirs / "settings.local.json", "claude", "project"),
        SettingsSource("local", ours / "settings.local.json", "codingcode", "project"),
        # The organisation's policy, above every other file (:mod:`.managed`), each file's drop-ins after it.
        SettingsSource("claude-managed", claude_managed_dir() / FILE_NAME, "claude", "managed"),
        *(SettingsSource(f"claude-managed.d/{path.name}", path, "claude", "managed")
          for path in drop_in_files(claude_managed_dir())),
        SettingsSource("managed", managed_dir() / FILE_NAME, "codingcode", "managed"),
        *(SettingsSource(f"managed.d/{path.name}", path, "codingcode", "managed") for path in drop_in_files(managed_dir())),
    ]


def settings_paths(project: Path) -> list[tuple[str, Path]]:
    """(source, path) of every settings file, in increasing precedence."""
    return [(s.source, s.path) for s in settings_sources(project)]


# -- keys we know but do not use --------------------------------------------------------------

_CLAUDE_ONLY = "a Claude Code setting codingcode does not use"
# Why a key of Claude Code's has no effect here, where there is more to say than _CLAUDE_ONLY.
_REASONS: dict[str, str] = {
    "$schema": "a JSON schema reference for editors",
    "statusLine": "the notebook shows status in %agent status, not a status line",
    "enableAllProjectMcpServers": "a project's .mcp.json servers start once you trust the project (%agent trust)",
    "enabledMcpjsonServers": "a project's .mcp.json servers start once you trust the project (%agent trust)",
    "disabledMcpjsonServers": "remove the server from .mcp.json (or do not trust the project) to keep it from starting",
    "managedMcpServers": "not read here: give every user the servers in managed-mcp.json (which allows no others)",
    "allowAllClaudeAiMcps": "codingcode does not fetch claude.ai connectors",
    "disableAllHooks": "hooks stay on here; remove the ones you do not want",
    "outputStyle": "answers are rendered as Markdown in the cell",
    "includeCoAuthoredBy": "codingcode does not write commits itself",
    "cleanupPeriodDays": "sessions stay in .codingcode/sessions until you remove them",
    "autoMode.soft_deny": "write these lines in autoMode.block (the reviewer hands such calls back to you)",
    "autoMode.hard_deny": "write deny rules for these (permissions.deny): only a rule is certain to refuse",
    "autoMode.environment": "write what the reviewer should know in autoMode.allow or autoMode.block",
    "sandbox.autoAllowBashIfSandboxed": "sandboxed commands follow the permission mode and the rules here",
    "sandbox.excludedCommands": "every command runs in the sandbox here",
    "sandbox.allowUnsandboxedCommands": "a command the sandbox cannot run is asked about here",
    "sandbox.enableWeakerNestedSandbox": "the sandbox here has one strength",
    "sandbox.ignoreViolations": _CLAUDE_ONLY,
    "sandbox.network.allowUnixSockets": "the sandbox refuses Unix sockets (a Docker or systemd socket is an escape)",
    "sandbox.network.allowAllUnixSockets": "the sandbox refuses Unix sockets (a Docker or systemd socket is an escape)",
    "sandbox.network.allowLocalBinding": _CLAUDE_ONLY,
    "sandbox.network.httpProxyPort": "the sandbox runs its own proxy",
    "sandbox.network.socksProxyPort": "the sandbox runs its own proxy",
}
# Claude Code's events we do not have: known names, never taken for a misspelling of ours.
_CLAUDE_EVENTS = frozenset({
    "PermissionDenied", "PostToolBatch", "PostCompact", "UserPromptExpansion", "TeammateIdle", "TaskCreated",
    "TaskCompleted", "ConfigChange", "Elicitation", "ElicitationResult", "WorktreeCreate", "WorktreeRemove",
    "InstructionsLoaded", "CwdChanged", "FileChanged", "StopFailure"})
_HOOK_KEYS = {"statusMessage": "the cell shows which hooks ran in %agent doctor",
              "shell": "hook commands run with bash here (Claude Code's default shell for hooks)",
              "once": _CLAUDE_ONLY, "async": "hooks run to completion here"}
# Claude Code's default is a sandbox that is off; written in its file it says nothing about ours.
_SANDBOX_OFF = ("Claude Code's sandbox is off unless enabled, so this says nothing about codingcode's sandbox; "
                "set sandbox.enabled in .codingcode/settings.json to turn it off here")


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds, directly or as the items of a list (else None)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is list:
        (item,) = get_args(annotation) or (None,)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item
    return None


class _Screen:
    """Takes out of raw JSON what the schema does not have, recording why."""

    def __init__(self, path: Path, dialect: Dialect) -> None:
        self.path, self.dialect = path, dialect
        self.ignored: list[IgnoredSetting] = []
        self.warnings: list[str] = []

    def ignore(self, key: str, reason: str) -> None:
        self.ignored.append(IgnoredSetting(self.path, key, reason))

    def walk(self, raw: dict[str, Any], model: type[BaseModel], where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        fields = model.model_fields
        for key, value in raw.items():
            dotted = f"{where}.{key}" if where else key
            if key not in fields:
                self._unknown(key, dotted, model, value)
                continue
            inner = _model_of(fields[key].annotation)
            if inner is not None and isinstance(value, dict) and fields[key].annotation is inner:
                assert inner is not None
                out[key] = self.walk(value, inner, dotted)
            elif inner is not None and isinstance(value, list):
                out[key] = [self.walk(item, inner, f"{dotted}.{index}") if isinstance(item, dict) else item
                            for index, item in enumerate(value)]
            else:
                out[key] = value
        return out

    def _unknown(self, key: str, dotted: str, model: type[BaseModel], value: Any) -> None:
        generic = dotted.split(".")
        reason_key = ".".join(part for part in generic if not part.isdigit())
        if model is HooksSettings and (key in _CLAUDE_EVENTS or not difflib.get_close_matches(
                key, list(model.model_fields), n=1, cutoff=0.85)):
            count = len(value) if isinstance(value, list) else 0
            self.ignore(dotted, f"codingcode has no {key} event ({count} hook group(s) never run)")
            return
        if model is HookCommand and key in _HOOK_KEYS:
            self.ignore(dotted, _HOOK_KEYS[key])
            return
        if reason_key in _REASONS:
            self.ignore(dotted, _REASONS[reason_key])
            return
        close = difflib.get_close_matches(key, list(model.model_fields), n=1, cutoff=0.85)
        if close:
            raise SettingsError(f"{self.path}: entry '{dotted}': unknown key; did you mean '{close[0]}'? "
                                "(a misspelt key must not drop what it holds silently)")
        self.ignore(dotted, _CLAUDE_ONLY if self.dialect == "claude" else "not a setting codingcode knows")


def _mode(value: Any, dotted: str, screen: _Screen) -> Any:
    if isinstance(value, str) and value in MODE_ALIASES:
        return MODE_ALIASES[value]
    if isinstance(value, str) and value in _UNSUPPORTED_MODES:
        screen.ignore(dotted, _UNSUPPORTED_MODES[value])
        return "default"
    return value


def _rules(data: dict[str, Any], screen: _Screen) -> None:
    """Every rule parsed now; one that cannot be read is left out with a warning (the others apply)."""
    from .approval.rule_syntax import RuleError, parse_rule

    permissions = data.get("permissions")
    if not isinstance(permissions, dict):
        return
    for action in ("deny", "ask", "allow"):
        entries = permissions.get(action)
        if not isinstance(entries, list):
            continue
        kept = []
        for index, text in enumerate(entries):
            try:
                rule = parse_rule(text, action)
            except RuleError as error:
                # Left out loudly: one unreadable rule must not take the file's other deny rules with it.
                effect = "it protects nothing until fixed" if action != "allow" else "it allows nothing"
                screen.warnings.append(f"{screen.path}: permissions.{action}.{index} is left out ({effect}): {error}")
                continue
            if rule.missing and action == "allow":
                screen.warnings.append(f"{screen.path}: permissions.allow.{index} `{text}` allows nothing here: "
                                       f"{rule.missing}")
            kept.append(text)
        permissions[action] = kept


def _hook_types(data: dict[str, Any], screen: _Screen) -> None:
    hooks = data.get("hooks")
    for event, groups in (hooks.items() if isinstance(hooks, dict) else []):
        for i, group in enumerate(groups if isinstance(groups, list) else []):
            for j, hook in enumerate(group.get("hooks") or [] if isinstance(group, dict) else []):
                kind = hook.get("type", "command") if isinstance(hook, dict) else "command"
                if kind not in RUNNABLE_HOOK_TYPES:
                    effect = ("asks before every call it matches (a check that cannot run fails closed)"
                              if event == "PreToolUse" else "never runs")
                    screen.ignore(f"hooks.{event}.{i}.hooks.{j}",
                                  f"command, http and prompt hooks run here; this {kind} hook {effect}")


def _hook_shapes(raw: dict[str, Any], screen: _Screen) -> dict[str, Any]:
    """``raw`` without the hooks written in a shape Claude Code does not read either (an event holding one
    object, a group that is a hook itself), each said in one line naming the key and the shape wanted."""
    hooks = raw.get("hooks")
    if not isinstance(hooks, dict):
        return raw
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if isinstance(groups, dict):
            screen.warnings.append(f"{screen.path}: hooks.{event} is one object; Claude Code reads a list of groups "
                                   '[{"matcher": ..., "hooks": [{"type": "command", "command": ...}]}]; left out')
            continue
        if isinstance(groups, list):
            for index, group in enumerate(groups):
                if isinstance(group, dict) and "hooks" not in group and ("command" in group or "type" in group):
                    screen.warnings.append(f"{screen.path}: hooks.{event}.{index} is a hook where a group is wanted "
                                           '({"matcher": ..., "hooks": [this hook]}); left out')
            groups = [g for g in groups if not (isinstance(g, dict) and "hooks" not in g
                                                 and ("command" in g or "type" in g))]
        kept[event] = groups
    return {**raw, "hooks": kept}


def _screen(raw: dict[str, Any], path: Path, dialect: Dialect) -> tuple[dict[str, Any], _Screen]:
    screen = _Screen(path, dialect)
    data = screen.walk(_hook_shapes(raw, screen), Settings, "")
    permissions = data.get("permissions")
    if isinstance(permissions, dict) and "defaultMode" in permissions:
        permissions["defaultMode"] = _mode(permissions["defaultMode"], "permissions.defaultMode", screen)
    if "defaultMode" in data:
        data["defaultMode"] = _mode(data["defaultMode"], "defaultMode", screen)
    sandbox = data.get("sandbox")
    if dialect == "claude" and isinstance(sandbox, dict) and sandbox.get("enabled") is False:
        sandbox.pop("enabled")
        screen.ignore("sandbox.enabled", _SANDBOX_OFF)
    _hook_types(data, screen)
    _rules(data, screen)
    return data, screen


def read_settings_file(path: Path, dialect: Dialect = "codingcode") -> SettingsFile:
    """One settings file, validated, with what it holds that does not apply here (see the module docstring)."""
    if not path.exists():
        return SettingsFile(Settings())
    from .config_files import read_config_text

    try:
        raw = json.loads(read_config_text(path) or "{}")
    except json.JSONDecodeError as error:
        raise SettingsError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}") from None
    except UnicodeDecodeError as error:
        raise SettingsError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise SettingsError(f"{path}: cannot be read: {error.strerror or error}") from None
    if not isinstance(raw, dict):
        raise SettingsError(f"{path}: the top level must be a JSON object")
    data, screen = _screen(raw, path, dialect)
    settings = _validate_leniently(data, screen)
    return SettingsFile(settings, tuple(screen.ignored), tuple(screen.warnings))


def read_hooks_value(raw: dict[str, Any], path: Path) -> SettingsFile:
    """A plugin's hooks (``hooks/hooks.json``'s ``hooks``, or plugin.json's), read as the ``hooks`` of one of
    Claude Code's settings files: what cannot apply is left out with the reason, the rest applies."""
    data, screen = _screen({"hooks": raw}, path, "claude")
    return SettingsFile(_validate_leniently(data, screen), tuple(screen.ignored), tuple(screen.warnings))


def _drop(data: Any, loc: tuple[Any, ...]) -> Any:
    """Remove the entry at ``loc`` from ``data`` (nested dicts and lists); returns its value."""
    parent = data
    for part in loc[:-1]:
        parent = parent[part]
    return parent.pop(loc[-1])


def _validate_leniently(data: dict[str, Any], screen: _Screen) -> Settings:
    """The settings with each invalid value left out and reported (file, key, what was expected).

    One wrong value (``"defaultMode": "allowEdits"``) must not switch the whole file off: the
    rest of it applies, its deny and ask rules above all. Each round drops the entries pydantic
    names and validates again; an entry that cannot be dropped is an error.
    """
    for _ in range(64):
        try:
            return Settings.model_validate(data)
        except ValidationError as error:
            problems = error.errors(include_url=False)
        dropped = False
        for problem in problems:
            loc = tuple(problem["loc"])
            # A union's branches add their type to the location; cut back to the data's own path.
            while loc and not _has_path(data, loc):
                loc = loc[:-1]
            if not loc:
                continue
            where = ".".join(str(part) for part in loc)
            try:
                value = _drop(data, loc)
            except (KeyError, IndexError, TypeError):
                continue
            dropped = True
            shown = json.dumps(value)[:80] if not isinstance(value, (dict, list)) else type(value).__name__
            screen.warnings.append(f"{screen.path}: {where} = {shown} is not valid ({problem['msg']}); "
                                   "this key is ignored, the rest of the file applies")
        if not dropped:
            first = problems[0]
            where = ".".join(str(p) for p in first["loc"])
            raise SettingsError(f"{screen.path}: entry '{where}': {first['msg']}")
    raise SettingsError(f"{screen.path}: too many invalid values")


def _has_path(data: Any, loc: tuple[Any, ...]) -> bool:
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return False
    return True


def load_settings_file(path: Path, dialect: Dialect = "codingcode") -> Settings:
    """The settings of one file (what does not apply left out; see :func:`read_settings_file`)."""
    return read_settings_file(path, dialect).settings


def load_settings(project: Path) -> dict[str, Settings]:
    """Each settings file of the project by source, validated."""
    return {s.source: load_settings_file(s.path, s.dialect) for s in settings_sources(project)}
