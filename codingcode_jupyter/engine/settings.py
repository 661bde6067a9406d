"""Settings files: the person's own `~/.codingcode/settings.json` ("user"), the project's
`.codingcode/settings.json` (shared, committed) and `.codingcode/settings.local.json`
(personal, where "Always allow" writes).

Field names follow Claude Code's settings files (camelCase on disk). A broken file is a
:class:`SettingsError` naming the file and the entry; nothing is silently ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "PermissionMode",
    "MODE_STRICTNESS",
    "stricter_mode",
    "PermissionsSettings",
    "HookCommand",
    "HookMatcher",
    "HooksSettings",
    "SandboxFilesystem",
    "SandboxNetwork",
    "SandboxSettings",
    "WebSearchSettings",
    "Settings",
    "SettingsError",
    "settings_paths",
    "load_settings_file",
    "load_settings",
]

PermissionMode = Literal["default", "acceptEdits", "plan", "bypass"]

# Higher is stricter. A profile may tighten the session's mode, never loosen it: a profile
# file comes with the project (maybe a cloned, untrusted one) and must not switch approval off.
MODE_STRICTNESS: dict[str, int] = {"bypass": 0, "acceptEdits": 1, "default": 2, "plan": 3}


def stricter_mode(current: PermissionMode, requested: PermissionMode | None) -> PermissionMode:
    """The stricter of two permission modes (``requested`` None keeps ``current``)."""
    if requested is None or MODE_STRICTNESS[requested] <= MODE_STRICTNESS[current]:
        return current
    return requested


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _valid_rule(text: str) -> str:
    # Imported here: the rule grammar lives with the approval pipeline, which imports settings.
    from .approval.rules import RuleError, parse_rule

    try:
        parse_rule(text)
    except RuleError as error:
        raise ValueError(str(error)) from None
    return text


RuleText = Annotated[str, AfterValidator(_valid_rule)]


class PermissionsSettings(_Model):
    allow: list[RuleText] = Field(default_factory=list)
    deny: list[RuleText] = Field(default_factory=list)
    ask: list[RuleText] = Field(default_factory=list)
    defaultMode: PermissionMode | None = None


class HookCommand(_Model):
    type: Literal["command"] = "command"
    command: str
    timeout: float = 30.0


class HookMatcher(_Model):
    # A glob over tool display names; "" or "*" matches every tool.
    matcher: str = "*"
    hooks: list[HookCommand]


class HooksSettings(_Model):
    PreToolUse: list[HookMatcher] = Field(default_factory=list)
    PostToolUse: list[HookMatcher] = Field(default_factory=list)
    # Observers of every approval decision and outcome (they see each audit record).
    ApprovalPost: list[HookMatcher] = Field(default_factory=list)


class SandboxFilesystem(_Model):
    allowWrite: list[str] = Field(default_factory=list)
    denyRead: list[str] = Field(default_factory=list)
    denyWrite: list[str] = Field(default_factory=list)


class SandboxNetwork(_Model):
    allowedDomains: list[str] | None = None


class SandboxSettings(_Model):
    enabled: bool = True
    failIfUnavailable: bool = False
    filesystem: SandboxFilesystem = Field(default_factory=SandboxFilesystem)
    network: SandboxNetwork = Field(default_factory=SandboxNetwork)
    # With the sandbox available, a command no rule asks about or denies runs without a card in
    # default mode (it can only write the project and reach the allowed domains).
    autoAllow: bool = False
    # Environment variables passed to sandboxed commands besides the built-in allowlist, by
    # name ("NAME", or "PREFIX*"); their values are the kernel's. No value is ever set here, so
    # a shared settings file never holds a secret.
    env: list[str] = Field(default_factory=list)


class WebSearchSettings(_Model):
    # "anthropic": the API's server-side web search tool; "brave" / "searxng" / "http": a
    # configured search API; None: web_search answers that it is not configured.
    backend: Literal["anthropic", "brave", "searxng", "http"] | None = None
    url: str | None = None
    apiKeyEnv: str | None = None


class Settings(_Model):
    permissions: PermissionsSettings = Field(default_factory=PermissionsSettings)
    defaultMode: PermissionMode | None = None
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    webSearch: WebSearchSettings = Field(default_factory=WebSearchSettings)
    model: str | None = None
    contextWindow: int | None = None
    env: dict[str, str] = Field(default_factory=dict)
    # Projects the person trusts wholesale (paths or globs); read from their user settings only.
    trustedProjects: list[str] = Field(default_factory=list)
    # Keys Claude Code writes that we do not use yet are tolerated under this name only.
    extra: dict[str, Any] = Field(default_factory=dict)


class SettingsError(ValueError):
    """A settings file that cannot be used; the message names the file and the entry."""


def settings_paths(project: Path) -> list[tuple[str, Path]]:
    """(source, path) in increasing precedence: the person's own, the project's, the local file."""
    from .user_dir import user_dir

    base = Path(project) / ".codingcode"
    return [("user", user_dir() / "settings.json"), ("project", base / "settings.json"),
            ("local", base / "settings.local.json")]


def load_settings_file(path: Path) -> Settings:
    if not path.exists():
        return Settings()
    try:
        raw = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as error:
        raise SettingsError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}") from None
    if not isinstance(raw, dict):
        raise SettingsError(f"{path}: the top level must be a JSON object")
    try:
        return Settings.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SettingsError(f"{path}: entry '{where}': {first['msg']}") from None


def load_settings(project: Path) -> dict[str, Settings]:
    """Each settings file of the project by source ("user", "project", "local"), validated."""
    return {source: load_settings_file(path) for source, path in settings_paths(project)}
