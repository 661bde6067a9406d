"""``%agent doctor``: what was read from which file, what did not carry over and why, what is in force.

For a person moving from Claude Code: every settings file (ours and Claude Code's) with what
it set; every key that has no effect here with the reason; what waits for trust; each rule
in force with its file and the tools of ours it applies to; each hook with the events it
runs for and the format it is read in; the agent files, the instruction files and their
imports, and ``.mcp.json``. Built from the engine's own readers, so it says what the session
does, not what a second parser thinks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from .project_settings import ProjectSettings, SettingsLayer
from .settings import Settings, SettingsError, SettingsSource

if TYPE_CHECKING:
    from .approval.rule_syntax import Rule
    from .project_settings import EffectiveSettings
    from .sandbox import CommandSandbox

__all__ = ["DoctorReport", "doctor_report", "read_despite_broken", "MEANWHILE"]

# What applies while a settings file is broken, said where the broken files are listed.
MEANWHILE = ("nothing runs: each %%agent cell stops at its start with the first of these errors (a broken file may "
             "hold deny rules, so none is skipped by accident); %agent status and %agent doctor still answer. "
             "Fix or remove the files and the next cell runs. Below: what the other files say.")

_DIALECT = {"claude": "Claude Code's format", "codingcode": "codingcode's format"}


@dataclass
class DoctorReport:
    """The sections of the report, each a list of lines."""

    broken: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    policy: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    mcp: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)
    sandbox: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def render(self) -> str:
        sections = [("Files read", self.files), ("Managed policy (what it overrides)", self.policy),
                    ("No effect here", self.ignored),
                    ("Waiting for trust (%agent trust)", self.untrusted), ("Rules in force", self.rules),
                    ("Hooks", self.hooks), ("Agent files", self.agents), ("Instructions", self.instructions),
                    (".mcp.json", self.mcp), ("Plugins (%agent plugins)", self.plugins), ("Command sandbox", self.sandbox),
                    ("Warnings", self.warnings)]
        out = []
        if self.broken:  # that moment is what the person came for: first, every broken file and what holds meanwhile
            sections = [("Broken settings files", self.broken), ("In force meanwhile", [MEANWHILE]), *sections]
        for title, lines in sections:
            out.append(title)
            out.extend(f"  {line}" for line in (lines or ["(none)"]))
        return "\n".join(out)


def _counts(layer: SettingsLayer) -> str:
    settings = layer.settings
    parts = []
    rules = sum(len(getattr(settings.permissions, a)) for a in ("allow", "deny", "ask"))
    if rules:
        parts.append(f"{rules} rule(s)")
    hooks = sum(len(group.hooks) for event in type(settings.hooks).model_fields for group in getattr(settings.hooks, event))
    if hooks:
        parts.append(f"{hooks} hook(s)")
    if settings.env:
        parts.append(f"env {', '.join(sorted(settings.env))}")
    if settings.model:
        parts.append(f"model {settings.model}")
    mode = settings.permissions.defaultMode or settings.defaultMode
    if mode:
        parts.append(f"mode {mode}")
    if settings.permissions.disableBypassPermissionsMode:
        parts.append("bypass mode disabled")
    if settings.permissions.disableAutoMode:
        parts.append("auto mode disabled")
    return ", ".join(parts) or "nothing that applies here"


def _rule_line(rule: "Rule", source_path: str) -> str:
    where = f"{rule.action:5}  {rule.text}  ({source_path})"
    if rule.missing:
        return f"{where} — applies to nothing: {rule.missing}"
    tools = ", ".join(rule.tools)
    return where if tools == rule.tool else f"{where} → {tools}"


def _files(effective: "EffectiveSettings", report: DoctorReport) -> None:
    for layer in effective.layers:
        state = "read" if layer.exists else "not there"
        if any(problem.startswith(f"{layer.path}:") for problem in report.broken):
            report.files.append(f"{layer.source:14} {layer.path} ({_DIALECT[layer.dialect]}) broken, left out (above)")
            continue
        what = f": {_counts(layer)}" if layer.exists else ""
        report.files.append(f"{layer.source:14} {layer.path} ({_DIALECT[layer.dialect]}) {state}{what}")
    report.ignored.extend(entry.describe() for entry in effective.ignored_settings)


def _rules(effective: "EffectiveSettings", session_rules: Iterable["Rule"], report: DoctorReport) -> None:
    from .approval.builtin_rules import BUILTIN_RULES

    report.rules.extend(f"{rule.action:5}  {rule.text}  (built-in)" for rule in BUILTIN_RULES)
    report.rules.extend(_rule_line(rule, "this session") for rule in session_rules)
    order = {"deny": 0, "ask": 1, "allow": 2}
    for rule in sorted(effective.rules, key=lambda r: order[r.action]):
        report.rules.append(_rule_line(rule, effective.source_path(rule.source)))
    mode = effective.default_mode
    if mode is not None:
        report.rules.append(f"mode   {mode}  ({effective.source_path(effective.default_mode_source or '')})")
    if effective.bypass_disabled:
        report.rules.append(f"bypass mode is off (permissions.disableBypassPermissionsMode in {effective.bypass_disabled})")
    if effective.auto_disabled:
        report.rules.append(f"auto mode is off (permissions.disableAutoMode in {effective.auto_disabled})")


def _hooks(effective: "EffectiveSettings", report: DoctorReport) -> None:
    for hook in effective.hooks:
        matcher = hook.matcher if hook.matcher not in ("", "*") else "every call"
        line = f"{hook.event}: {matcher} → {hook.label} ({hook.path}, {_DIALECT[hook.dialect]}, timeout {hook.timeout:g} s)"
        if hook.problem is not None:
            effect = "asks before every call instead" if hook.event == "PreToolUse" else "never runs"
            line += f" — cannot run: {hook.problem}; {effect}"
        report.hooks.append(line)
    for item in effective.ignored:
        if item.kind == "hook":
            report.hooks.append(f"{item.summary} ({item.path}) — not run until you trust the project")


def _agents(project: Path, effective: "EffectiveSettings", report: DoctorReport) -> None:
    from .agents.profiles import ProfileError, load_profile_file, profile_dirs, profile_files

    untrusted = effective.untrusted_profile_modes
    for source, directory in profile_dirs(project):
        for path in profile_files(directory):
            try:
                profile = load_profile_file(path, source)
            except ProfileError as error:
                report.agents.append(f"{path}: not usable — {error}")
                continue
            facts = [f"profile {profile.name}"]
            if profile.tools is not None:
                facts.append(f"tools {', '.join(profile.tools) or '(none)'}")
            if profile.disallowed_tools:
                facts.append(f"never {', '.join(profile.disallowed_tools)}")
            if profile.model:
                facts.append(f"model {profile.model}")
            if profile.max_steps:
                facts.append(f"max {profile.max_steps} steps")
            if profile.permission_mode:
                held = " (tightens only, until trusted)" if str(path) in untrusted else ""
                facts.append(f"mode {profile.permission_mode}{held}")
            report.agents.append(f"{path} ({source}): {'; '.join(facts)}")
            report.agents.extend(f"    {path.name}: {note}" for note in profile.ignored)


def _instructions(project: Path, report: DoctorReport) -> None:
    from .prompts import loaded_instructions

    for info in loaded_instructions(project):
        report.instructions.append(f"{info.path}: {info.describe()}")
        report.instructions.extend(f"    imports {path}" for path in info.imports)
        report.instructions.extend(f"    {why}" for why in info.refused)


def _mcp(project: Path, effective: "EffectiveSettings", report: DoctorReport) -> None:
    from .mcp.config import McpConfigError, read_mcp_config, read_mcp_file

    untrusted = effective.untrusted_servers
    policy = effective.mcp_policy
    report.mcp.extend(policy.notes)
    for path in policy.managed_files:
        try:
            managed = read_mcp_file(path, project)
        except McpConfigError as error:
            report.mcp.append(str(error))
            continue
        for name, server in managed.servers.items():
            why = policy.refusal(name, server, from_managed_file=True, uses_variables=name in managed.uses_variables)
            report.mcp.append(f"{name} ({getattr(server, 'type', 'stdio')}, {path})"
                              + (f" — not started: {why}" if why else ": provided by your organisation"))
    try:
        config = read_mcp_config(project)
    except McpConfigError as error:
        report.mcp.append(str(error))
        return
    for name, server in config.servers.items():
        kind = getattr(server, "type", "stdio")
        why = policy.refusal(name, server)
        if why:
            report.mcp.append(f"{name} ({kind}) — not started: {why}")
            continue
        held = " — does not start until you trust the project" if name in untrusted else ""
        report.mcp.append(f"{name} ({kind}): its tools are {name}:TOOL here, mcp__{name}__TOOL in rules and hooks{held}")
    report.mcp.extend(config.errors.values())
    report.mcp.extend(config.notes)


def doctor_report(project: Path, effective: "EffectiveSettings", session_rules: Iterable["Rule"] = (),
                  sandbox: "CommandSandbox | None" = None, broken: Iterable[str] = ()) -> DoctorReport:
    """Everything the person's files configure for ``project``, and what of it applies (see the module docstring);
    ``broken``: the files that cannot be read (:func:`read_despite_broken`), listed first."""
    report = DoctorReport(broken=list(broken))
    project = Path(project)
    _files(effective, report)
    report.policy.extend(effective.policy.lines())
    report.untrusted.extend(f"{item.summary} ({item.path})" for item in effective.ignored)
    if effective.trusted_by:
        report.untrusted.append(f"nothing: the project is trusted as a whole ({effective.trusted_by})")
    _rules(effective, session_rules, report)
    _hooks(effective, report)
    _agents(project, effective, report)
    _instructions(project, report)
    _mcp(project, effective, report)
    from .plugins.report import marketplace_lines, plugin_lines

    report.plugins.extend(plugin_lines(effective.plugins, effective.untrusted_plugins))
    report.plugins.extend(marketplace_lines(effective.plugins))
    if sandbox is not None:
        from .sandbox.report import sandbox_report

        # The backend in force, why that one, what it confines and what it does not cover.
        report.sandbox.extend(sandbox_report(sandbox).lines())
    report.warnings.extend(effective.warnings)
    return report


@dataclass
class _Lenient(ProjectSettings):
    """The project's settings read as a session reads them, except that a file that cannot be read is
    left out (as if empty) and named, instead of stopping the reading at the first one."""

    broken: dict[Path, str] = field(default_factory=dict, init=False)

    def _take_preloaded(self) -> bool:
        return False  # what the background loading read is the next session's, not the doctor's

    def _read(self, source: SettingsSource) -> tuple[SettingsLayer, list[str]]:
        if source.path not in self.broken:
            try:
                return super()._read(source)
            except SettingsError as error:
                self.broken[source.path] = _located(str(error), source.path)
        return SettingsLayer(source.source, source.path, Settings(), source.dialect, source.level), []


def read_despite_broken(project: Path) -> tuple["EffectiveSettings", list[str]]:
    """What the readable settings files of ``project`` say, and every broken file with why (line and column
    where there is one): what ``%agent doctor`` shows while a file is broken."""
    settings = _Lenient(Path(project))
    for _ in range(16):  # each round leaves out one more file whose entries fail only once merged
        try:
            return settings.current(), list(settings.broken.values())
        except SettingsError as error:
            culprit = next((layer for layer in settings.paths() if str(error).startswith(f"{layer[1]}:")), None)
            if culprit is None or culprit[1] in settings.broken:
                raise
            settings.broken[culprit[1]] = _located(str(error), culprit[1])
            settings._current = None
    raise SettingsError("the settings files could not be read")


_ENTRY = re.compile(r"entry '([^']+)'")


def _located(message: str, path: Path) -> str:
    """``message`` with the line and column of the entry it names, when it names one and does not say them."""
    found = _ENTRY.search(message)
    if found is None or "(line " in message:
        return message
    key = found.group(1).split(".")[-1]
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return message
    at = re.search(r'"' + re.escape(key) + r'"\s*:', text) if not key.isdigit() else None
    if at is None:
        return message
    line = text.count("\n", 0, at.start()) + 1
    column = at.start() - (text.rfind("\n", 0, at.start()) + 1) + 1
    return message[:found.end()] + f" (line {line}, column {column})" + message[found.end():]
