"""``%agent SUBCOMMAND``: inspect and steer the agent (status, mode, rules, audit, undo, ...).

Each subcommand is a method ``cmd_<name>(words)`` returning text (or something displayable);
the ones that talk to MCP servers or a model are coroutines, awaited by the line magic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from IPython.core.error import UsageError
from IPython.display import Pretty

from . import words
from .agent_cell import AgentCellRunner
from .sessions import SessionRegistry

__all__ = ["Subcommands", "COMMANDS", "mode_arg", "nearest", "unknown_subcommand"]

# The one table of subcommands: dispatch (Subcommands.handler) and help (help_text) both read it; each
# `cmd_<name>` method's docstring opens with its help line, "%agent NAME ARGS — what it does".
COMMANDS = ("status", "mode", "project", "reset", "sessions", "resume", "rules", "audit", "tools", "mcp", "trust", "fix",
            "undo", "compact", "login", "doctor", "help", "commands", "skills", "plugins", "setup")


def mode_arg(value: str) -> str:
    from ..engine.settings import MODES  # the engine's list, loaded when a mode is given, not at %load_ext

    if value not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)}, not {value!r}")
    return value


@dataclass
class Subcommands:
    """The ``%agent`` subcommands of one shell."""

    shell: Any
    registry: SessionRegistry
    runner: AgentCellRunner
    # Runs a `%%agent` request (``%agent fix`` uses it): (line, body, expand references).
    run_request: Callable[..., Any]

    def handler(self, name: str) -> Callable[[list[str]], Any] | None:
        return getattr(self, f"cmd_{name}", None) if name in COMMANDS else None

    def cmd_help(self, rest: list[str]) -> str:
        """%agent help [COMMAND] — one line per subcommand, or the whole help of one"""
        if len(rest) > 1:
            raise UsageError("usage: %agent help [COMMAND]")
        if rest:
            if rest[0] not in COMMANDS:
                raise UsageError(unknown_subcommand(rest[0]))
            return command_help(rest[0], full=True)
        return help_text()

    def cmd_status(self, rest: list[str]) -> str:
        """%agent status — session, project, model, mode, tokens, cost, sandbox, what was read"""
        from ..engine.settings import SettingsError

        try:
            self._session_unless_broken()
            return self._status()
        except SettingsError:
            return self._status_broken()

    def _session_unless_broken(self) -> Any:
        """The notebook's session; SettingsError when it cannot open because a settings file is broken
        (opening says that as a UsageError, as a cell does)."""
        from ..engine.doctor import read_despite_broken
        from ..engine.settings import SettingsError

        try:
            return self.registry.current_session()
        except UsageError:
            _, broken = read_despite_broken(self.registry.current or self.registry.project())
            if broken:
                raise SettingsError(broken[0]) from None
            raise

    def _status_broken(self) -> str:
        """Status while a settings file is broken: every broken file and what holds meanwhile."""
        from ..engine.doctor import read_despite_broken

        project = self.registry.current or self.registry.project()
        _, broken = read_despite_broken(project)
        session = self.registry.sessions.get(project)
        rows = [*([("session", session.id)] if session is not None else []),
                ("project", words.home_short(project)),
                *[("broken", words.relative(problem, project, "the project")) for problem in broken],
                ("meanwhile", "nothing runs: each %%agent cell stops at its start until the file"
                 f"{'s are' if len(broken) != 1 else ' is'} fixed or removed (%agent doctor: the full report)")]
        return columns(rows)

    def _status(self) -> str:
        from ..engine.context.session_window import context_status
        from ..engine.models import resolve_model_name
        from ..engine.models.providers import describe_provider
        from ..engine.prompts import loaded_instructions
        from .kernel.working_dir import notebook_dir_line

        session = self.registry.current_session()
        model = session.last_model or resolve_model_name(self.registry.config.model or session.default_model())[0]
        usage = session.usage
        choice = session.mode_choice()
        turns = f"{session.turns} turn{'s' if session.turns != 1 else ''}"
        where = "set with --project or %agent project" if self.registry.current else "the working directory"
        mode = choice.mode if choice.source == "the default" else f"{choice.mode}  (set by {choice.source})"
        reviewer = session.deps.reviewer
        effective = session.settings.current()
        rows: list[tuple[str, str]] = [
            ("session", f"{session.id}  ({turns})"),
            ("project", f"{words.home_short(session.project)}  ({where})"),
            *[("notebook", line) for line in filter(None, [notebook_dir_line(session.project)])],
            ("model", str(model)),
            *([("provider", describe_provider(str(model)))] if model != "demo" else []),
            ("mode", mode),
            *([("", reviewer.describe())]
              if choice.mode == "auto" or reviewer.allowed or reviewer.handed_back or reviewer.failed else []),
            ("tokens", f"{usage.total_input:,} in (cache read {usage.cache_read_input_tokens:,}) / {usage.output_tokens:,} out"),
            ("cost", f"${session.cost:.4f}"),
            ("sandbox", session.sandbox().describe()
             + ("; commands it runs are auto-allowed (sandbox.autoAllow)" if effective.merged.sandbox.autoAllow
                else "; auto-allow off")),
            *([("", session.deps.unconfined.describe())] if session.deps is not None
              and session.sandbox().enabled and not session.sandbox().active
              and not session.sandbox().fail_if_unavailable else []),
            ("domains", ", ".join(effective.allowed_domains) or "none allowed (fetch_url asks)"),
            ("reads", "the project" + "".join(f", {words.home_short(root)}" for root in effective.read_roots(session.project))
             + " (elsewhere asked; permissions.additionalDirectories)"),
            ("context", context_status(session).describe().removeprefix("context: ")),
            ("instructions", ", ".join(f.describe() for f in loaded_instructions(session.project))
             or "none (AGENTS.md, CLAUDE.md)"),
        ]
        servers = session.mcp.status()
        if any(s.state != "refused" for s in servers):
            rows.append(("mcp", ", ".join(f"{s.name} ({s.state})" for s in servers if s.state != "refused")))
        rows += [("mcp", f"{s.name} not started: {s.error}") for s in servers if s.state == "refused"]
        if effective.trusted_by is not None:
            rows.append(("trust", f"trusted as a whole ({effective.trusted_by})"))
        elif effective.ignored:
            rows.append(("trust", f"{len(effective.ignored)} item(s) of the project's files ignored until you trust it "
                         "(%agent trust)"))
        rows += [("policy", line) for line in effective.policy.lines()]
        rows += [("warning", warning) for warning in effective.warnings]
        rows += [("ignored", ignored.describe()) for ignored in effective.ignored_settings]
        if effective.ignored_settings:
            rows.append(("", "(%agent doctor shows everything read, and what applies)"))
        # Only the project row names the project itself; every other path is shown relative to it.
        return columns([(label, value if label == "project" else words.relative(value, session.project, "the project"))
                        for label, value in rows])

    def cmd_doctor(self, rest: list[str]) -> str:
        """%agent doctor — what was read from which file, what was ignored and why

        What was read from which file (ours and Claude Code's), what was ignored and why, what is in force.
        """
        from ..engine.doctor import doctor_report, read_despite_broken
        from ..engine.settings import SettingsError

        if rest:
            raise UsageError("usage: %agent doctor")
        project = self.registry.current or self.registry.project()
        broken: list[str] = []
        try:
            session = self._session_unless_broken()
            effective = session.settings.current()
            rules, sandbox = list(session.pipeline.session_rules), session.sandbox()
            project = session.project
        except SettingsError:
            # That moment is the doctor's: every broken file, what holds meanwhile, and what the others say.
            effective, broken = read_despite_broken(project)
            opened = self.registry.sessions.get(project)
            rules, sandbox = (list(opened.pipeline.session_rules) if opened is not None else []), None
        report = doctor_report(project, effective, rules, sandbox=sandbox, broken=broken).render()
        return wrapped(words.relative(report, project, "the project"))

    async def cmd_compact(self, rest: list[str]) -> str:
        """%agent compact — summarise older turns now to free context

        Shorten what is sent to the model now (the transcript on disk keeps everything).
        """
        from ..engine.context.session_window import compact

        report = await compact(self.registry.current_session(), force=True)
        return report.describe()

    def cmd_mode(self, rest: list[str]) -> str:
        """%agent mode [NAME] — show the permission mode and the others, or set one"""
        from ..engine.settings import MODES

        session = self.registry.current_session()
        if len(rest) != 1:
            choice = session.mode_choice()
            return f"mode is {choice.mode} (from {choice.source}); change it with %agent mode {'|'.join(MODES)}"
        from ..engine.modes import forbidden_mode
        from ..engine.settings import SettingsError

        wanted = mode_arg(rest[0])
        try:
            why = forbidden_mode(session.settings.current(), wanted)  # type: ignore[arg-type]
        except SettingsError as error:
            raise UsageError(str(error)) from None
        if why is not None:
            # One line, and the mode stays as it was.
            return f"The mode stays {session.mode_choice().mode}: {why}."
        session.mode = wanted  # type: ignore[assignment]
        if session.mode == "auto":
            # Setting auto again is how the person resumes a reviewer that handed back too often.
            paused = session.deps.reviewer.paused
            session.deps.reviewer.resume()
            if paused:
                return f"mode set to auto (the reviewer answers again; it had paused: {paused})"
        return f"mode set to {rest[0]}"

    def cmd_project(self, rest: list[str]) -> str:
        """%agent project [DIR] — show or change the notebook's project (what cells without --project act on)

        Show or change the notebook's project (what cells and subcommands without --project act on).
        """
        if len(rest) > 1:
            raise UsageError("usage: %agent project [DIR]")
        if rest:
            self.registry.current = self.registry.project(rest[0])
            return f"project is now {self.registry.current}"
        return f"project is {self.registry.project()}" + ("" if self.registry.current else " (the working directory)")

    def cmd_reset(self, rest: list[str]) -> str:
        """%agent reset — start a new session"""
        session = self.registry.session(self.registry.project(), new=True)
        return f"new session {session.id}"

    def cmd_sessions(self, rest: list[str]) -> str:
        """%agent sessions [--project DIR | --all] — saved sessions of this project (or of every project found)"""
        from ..engine.session import list_sessions

        flags = _options(rest, "usage: %agent sessions [--project DIR | --all]", values=("--project",), switches=("--all",))
        if "--all" in flags and "--project" in flags:
            raise UsageError("usage: %agent sessions [--project DIR | --all]")
        projects = self.registry.known_projects() if "--all" in flags else [self.registry.project(flags.get("--project"))]
        if not projects:
            return "no saved sessions found (looked in this kernel's projects and two levels below the working directory)"
        blocks = []
        for project in projects:
            infos = list_sessions(project)
            current = self.registry.sessions.get(project)
            rows = [["", "id", "created", "turns", "model", "first request"]]
            for info in infos:
                mark = "*" if current is not None and current.id == info.id else ""
                rows.append([mark, info.id, info.created[:19].replace("T", " "), str(info.turns), info.model,
                             " ".join(info.first_prompt.split())[:60]])
            title = f"{project}" + ("" if infos else ": no saved sessions")
            blocks.append(title + ("\n" + table(rows, right={3}) if infos else ""))
        hint = f"\nresume one with %agent resume ID --project {projects[0]}" if "--all" in flags else ""
        return "\n\n".join(blocks) + hint

    def cmd_resume(self, rest: list[str]) -> str:
        """%agent resume ID [--project DIR] — continue a saved session"""
        usage = "usage: %agent resume ID [--project DIR]   (see %agent sessions)"
        flags = _options(rest, usage, values=("--project",), positional=1)
        project = self.registry.project(flags.get("--project"))
        session = self.registry.open(project, session_id=flags["_"][0], resume=True)
        self.registry.replace(project, session)
        return f"resumed {session.id} in {project}: {session.turns} turns, {len(session.conversation.messages)} messages"

    def cmd_rules(self, rest: list[str]) -> str:
        """%agent rules — the approval rules in force and where each comes from"""
        from ..engine.approval.pipeline import effective_rules
        from ..engine.settings import SettingsError

        session = self.registry.current_session()
        try:
            rows = effective_rules(session.settings.current(), session.pipeline.session_rules)
        except SettingsError as error:
            raise UsageError(str(error)) from None
        table_rows = [["action", "source", "priority", "rule"],
                      *([action, source, str(priority), text] for text, action, source, priority in rows)]
        for item in session.settings.current().ignored:
            if item.kind == "allow":
                table_rows.append(["allow", item.source, "ignored", f"{item.detail['rule']}  (until you trust the project)"])
        return words.relative(table(table_rows, right={2}), session.project)

    def cmd_audit(self, rest: list[str]) -> str:
        """%agent audit [N] — the last N decisions with their outcome (default 20)

        The last N decisions (each with its outcome), in words, in aligned columns.
        """
        from ..engine.approval.audit import AuditLog
        from .record import audit_row_words

        try:
            count = int(rest[0]) if rest else 20
        except ValueError:
            raise UsageError("usage: %agent audit [N]") from None
        if count <= 0 or len(rest) > 1:
            raise UsageError("usage: %agent audit [N]   (N a positive number)")
        project = self.registry.project()
        records = merge_outcomes(AuditLog(project).read(None))[-count:]
        if not records:
            return f"no audit records in {project / '.codingcode' / 'audit.jsonl'}"
        rows = [["time", "call", "decision", "outcome"]]
        for record in records:
            what, said, came = audit_row_words(record, project)
            rows.append([str(record.get("ts", ""))[:19].replace("T", " "), what, said.replace("`", ""), came])
        return table(rows, wrap={1: 40, 2: 48, 3: 60})

    def cmd_tools(self, rest: list[str]) -> str:
        """%agent tools — the tools the agent sees"""
        session = self.registry.current_session()
        rows = [["tool", "source", "notes"]]
        for tool, status in session.resolver.visible():
            flags = ", ".join(f for f in ("read-only" if tool.read_only else "", status if status != "offered" else "") if f)
            rows.append([tool.display_name or tool.name, tool.source, flags])
        for server in session.mcp.status():
            if server.state != "running":  # its tools are not in the list yet (or any more)
                rows.append([f"({server.name}:*)", "mcp", f"server {server.state.replace('_', ' ')}"])
        return table(rows) if len(rows) > 1 else "no tools"

    def cmd_commands(self, rest: list[str]) -> str:
        """%agent commands — slash commands (a request starting /name args), with descriptions"""
        from ..engine.commands import load_commands
        from ..engine.project_settings import active_plugins

        project = self.registry.project(None)
        catalog = load_commands(project, plugins=active_plugins(project))
        rows = [["command", "description", "from"]]
        for command in catalog.listed():
            where = (f"plugin {command.plugin}" if command.plugin else command.source
                     + (f":{command.namespace}" if command.namespace else ""))
            where += " (skill)" if command.kind == "skill" else ""
            rows.append([command.usage(), command.description[:80], where])
        lines = [table(rows) if len(rows) > 1 else
                 "no slash commands (.claude/commands/*.md, ~/.claude/commands, .codingcode/commands)"]
        lines += [f"/{alias} is /{name}" for alias, name in sorted(catalog.aliases.items())]
        lines += [f"not loaded: {error}" for error in catalog.errors]
        lines += [f"{command.path}: {note}" for command in catalog.listed() for note in command.notes]
        return "\n".join(lines)

    def cmd_skills(self, rest: list[str]) -> str:
        """%agent skills — skills the model may load, with descriptions"""
        from ..engine.project_settings import active_plugins
        from ..engine.skills import load_skills

        project = self.registry.project(None)
        catalog = load_skills(project, plugins=active_plugins(project))
        rows = [["skill", "description", "from"]]
        for skill in catalog.listed():
            where = f"plugin {skill.plugin}" if skill.plugin else skill.source
            rows.append([skill.name, skill.description[:80], f"{where} ({len(skill.files())} files)"])
        for skill in catalog.shadowed:
            rows.append([skill.name, skill.description[:80], f"{skill.source}, not used: yours has its name"])
        lines = [table(rows) if len(rows) > 1 else "no skills (.claude/skills/NAME/SKILL.md, ~/.claude/skills, .codingcode/skills)"]
        lines += catalog.notices
        lines += [f"not loaded: {error}" for error in catalog.errors]
        lines += [f"{skill.path}: {note}" for skill in catalog.listed() for note in skill.notes]
        return "\n".join(lines)

    async def cmd_plugins(self, rest: list[str]) -> str:
        """%agent plugins [enable|disable|update ...] — Claude Code plugins: what each adds, switch one on or off

        %agent plugins enable|disable NAME@MARKETPLACE [--scope user|project|local], %agent plugins update [NAME].
        Each plugin the settings name (Claude Code's enabledPlugins), whether it is on, what it adds or
        why not, and the marketplaces known; enable or disable one (in your own settings by default,
        or the project's shared or local file), or fetch git marketplaces and plugins again.
        """
        from ..engine.plugins.report import marketplace_lines, plugin_lines

        session = self.registry.current_session()
        usage = "usage: %agent plugins [enable|disable NAME@MARKETPLACE [--scope user|project|local] | update [NAME]]"
        command, args = (rest[0], rest[1:]) if rest else ("", [])
        if command in ("enable", "disable"):
            options = _options(args, usage, values=("--scope",), positional=1)
            return await self._plugin_switch(session, options["_"][0], command == "enable",
                                             options.get("--scope", "user"), usage)
        if command == "update" and len(args) <= 1:
            problems = await session.fetch_plugins(update=True, only=args[0] if args else None)
            return "\n".join(problems) or "Fetched the git marketplaces and plugins again."
        if command:
            raise UsageError(usage)
        await session.fetch_plugins()
        effective = session.settings.current()
        lines = plugin_lines(effective.plugins, effective.untrusted_plugins) or [
            "no plugins (enabledPlugins in a settings file; %agent plugins enable NAME@MARKETPLACE)"]
        return wrapped("\n".join([*lines, *marketplace_lines(effective.plugins)]))

    async def _plugin_switch(self, session: Any, key: str, on: bool, scope: str, usage: str) -> str:
        from ..engine.approval.amend import PLUGIN_SCOPES, persist_plugin
        from ..engine.plugins.catalog import KEY_FORM
        from ..engine.settings import SettingsError

        if not KEY_FORM.match(key) or scope not in PLUGIN_SCOPES:
            raise UsageError(usage)
        try:
            path = persist_plugin(session.project, key, on, scope)
        except (OSError, SettingsError) as error:
            raise UsageError(str(error)) from None
        if on:
            await session.fetch_plugins(only=key)
            # The person asked for this plugin by name: it needs no further trust (as a rule saved from a card).
            mine = [item for item in session.pending_trust() if item.kind == "plugin" and item.detail["plugin"] == key]
            session.trust(mine)
        session.mcp.refresh_plugins()
        plugin = session.settings.current().plugins.get(key)
        if plugin is not None and plugin.enabled != on:
            # A more specific file (the project's local one, the organisation's) decides: saying "off"
            # here would be a setting silently outweighed.
            return (f"{key} stays {'on' if plugin.enabled else 'off'}: enabledPlugins in {plugin.enabled_in} "
                    f"decides over {path}, where it is now {'on' if on else 'off'}.")
        state = f"; {plugin.problem}" if plugin is not None and plugin.problem else ""
        return f"{key} is {'on' if on else 'off'} (enabledPlugins in {path}){state}."

    async def cmd_setup(self, rest: list[str]) -> str:
        """%agent setup [init|maintenance] — run the Setup hooks (Claude Code's claude --init / --maintenance)"""
        if len(rest) > 1 or (rest and rest[0] not in ("init", "maintenance")):
            raise UsageError("usage: %agent setup [init|maintenance]")
        session = self.registry.current_session()
        outcome = await session.setup(rest[0] if rest else "init")
        if not outcome.ran:
            return "No Setup hooks (hooks.Setup in a settings file or a plugin's hooks.json)."
        lines = [f"ran {len(outcome.ran)} Setup hook(s)", *outcome.notices]
        if outcome.context:
            lines.append("what they said goes with your next request")
        return "\n".join(lines)

    async def cmd_mcp(self, rest: list[str]) -> str:
        """%agent mcp [ACTION NAME] — the MCP servers; add, remove, restart, tools, log, login one

        %agent mcp add NAME ENTRY | remove NAME | restart NAME | tools NAME | log NAME [N] | login NAME [ADDRESS]
        """
        from ..engine.mcp.config import McpConfigError, parse_typed_entry
        from ..engine.mcp.oauth import LoginError

        mcp = self.registry.current_session().mcp
        command, args = (rest[0], rest[1:]) if rest else ("", [])
        try:
            if command == "add":
                if len(args) < 2:
                    raise UsageError('usage: %agent mcp add NAME {"command": "...", "args": [...]}   (or a URL, '
                                     "or a command line)")
                return mcp.describe_status(await mcp.add(args[0], parse_typed_entry(args[1])))
            if command == "remove" and len(args) == 1:
                return f"removed {args[0]}" if await mcp.remove(args[0]) else f"no server named {args[0]!r}"
            if command == "restart" and len(args) == 1:
                return mcp.describe_status(await mcp.restart(args[0]))
            if command == "tools" and len(args) == 1:
                return mcp.describe_tools(args[0])
            if command == "log" and len(args) in (1, 2):
                return mcp.describe_log(args[0], int(args[1]) if len(args) == 2 and args[1].isdigit() else 50)
            if command == "login" and len(args) == 2:
                mcp.complete_login(args[0], args[1])
                return f"login to {args[0]} completed; it starts now (see %agent mcp)"
            if command == "login" and len(args) == 1:
                return mcp.describe_status(await mcp.restart(args[0]))
        except (McpConfigError, LoginError, KeyError, TypeError) as error:
            raise UsageError(str(error).strip("'\"")) from None
        if command:
            raise UsageError("usage: %agent mcp [add NAME ENTRY | remove NAME | restart NAME | tools NAME | log NAME [N] "
                             "| login NAME [ADDRESS]]")
        await mcp.start_now()  # a person who asks to see the servers wants them running (a no-op once started)
        return mcp.describe()

    async def cmd_trust(self, rest: list[str]) -> str:
        """%agent trust [--revoke] — what the project's files ask for that loosens the agent; asks again

        What the project's files ask for and whether it applies; asks again (``--revoke`` forgets).
        """
        from .widgets.trust import trust_lines

        if rest not in ([], ["--revoke"]):
            raise UsageError("usage: %agent trust [--revoke]")
        session = self.registry.current_session()
        if rest == ["--revoke"]:
            session.revoke_trust()
            return "Forgot your trust in this project: what its files ask for is ignored until you trust it again."
        effective = session.settings.current()
        if effective.trusted_by is not None:
            return f"This project is trusted as a whole ({effective.trusted_by})."
        ignored = list(effective.ignored)
        trusted = [item for item in effective.items if item not in ignored]
        lines = [f"trusted: {len(trusted)} item(s)", *trust_lines(trusted, session.project)] if trusted else []
        if not ignored:
            return "\n".join(lines or ["This project's files ask for nothing that loosens the agent."])
        session.declined.difference_update(item.fingerprint for item in ignored)  # asked again
        view = self.runner.make_view(session, None)
        view.display()
        try:
            answer = await self.runner.review_trust(session, view)
        finally:
            view.finish()
        if answer == "trust":
            return f"Trusted {len(ignored)} item(s)."
        return "\n".join([*lines, f"ignored until trusted: {len(ignored)} item(s)", *trust_lines(ignored, session.project)])

    async def cmd_fix(self, rest: list[str]) -> None:
        """%agent fix [NOTE] — ask the agent to fix the last failing cell"""
        from .references import NoErrorToFix, fix_prompt

        try:
            prompt = fix_prompt(self.shell, " ".join(rest))
        except NoErrorToFix as error:
            raise UsageError(str(error)) from None
        # The failing cell's own braces are code, not references.
        await self.run_request("", prompt, expand=True)

    async def cmd_undo(self, rest: list[str]) -> str:
        """%agent undo [--turn N] [--dry-run] [--yes] — show what the last turn changed, ask, then restore it

        Shows the files the turn changed and their diff, then asks before restoring (buttons in a notebook,
        a y/N prompt in a terminal; where nobody can answer, nothing is restored). It acts on this notebook's
        session: after a restart, the newest session started from this notebook, never another notebook's.
        --turn N: that turn of the session; --dry-run: only show; --yes: restore without asking (scripts);
        --force: restore files changed since; --outside: files outside the project too.
        """
        from IPython.display import display

        from ..engine.checkpoints import KERNEL_VARIABLES, CheckpointError, CheckpointStore, TurnCheckpoint
        from .live.edits import turn_edits, undo_cell_edits
        from .undo_view import KernelNames, ask_restore, plan_html

        usage = "usage: %agent undo [--turn N] [--dry-run] [--yes] [--force] [--outside]"
        args = list(rest)
        turn: int | None = None
        if "--turn" in args:
            at = args.index("--turn")
            if at + 1 >= len(args) or not args[at + 1].isdigit():
                raise UsageError(usage)
            turn = int(args[at + 1])
            del args[at:at + 2]
        flags = set(args)
        unknown = flags - {"--dry-run", "--yes", "--force", "--outside"}
        if unknown:
            raise UsageError(f"{usage} (unknown: {' '.join(sorted(unknown))})")
        project = self.registry.project()
        session = self.registry.sessions.get(project)
        kept = session.deps.checkpoints if session is not None else None
        store = kept if kept is not None else CheckpointStore(project)
        names = KernelNames(self.shell)
        try:
            session_id = session.id if session is not None else self._notebook_session(project, store)
            if turn is not None and session_id is None:
                raise CheckpointError("--turn N needs this project's session (run a cell, or %agent resume ID)")
            chosen: TurnCheckpoint | None
            if turn is not None and session_id is not None:
                try:
                    chosen = store.turn(session_id, turn)
                except CheckpointError:
                    chosen = names.checkpoint(session_id, turn)  # it changed only variables
                    if chosen is None:
                        raise
            else:
                chosen = store.latest(session_id) if session_id is not None else None
                # A turn whose code changed only variables has no file checkpoint, or an older one.
                newer = names.newer_than(session_id, chosen) if session_id is not None else None
                chosen = newer or chosen
                if chosen is None and session_id is not None:
                    raise CheckpointError("Nothing to undo in this notebook's session: no turn of it changed a file "
                                          "or a variable (or every change was undone). %agent sessions lists the "
                                          "others; %agent resume ID, then %agent undo, undoes one of them.")
            plan = store.plan_undo(chosen, allow_outside="--outside" in flags)
        except CheckpointError as error:
            raise UsageError(words.relative(str(error), project)) from None
        variables = names.plan(plan.checkpoint.session_id, plan.checkpoint.turn_id)
        if variables is not None or names.available:
            plan.limits = [limit for limit in plan.limits if limit != KERNEL_VARIABLES]
        cells = turn_edits(store, plan.checkpoint.session_id, plan.checkpoint.turn_id)
        files = [words.relative(item.path, project) for item in plan.files if item.action != "unchanged"]
        if files or variables is not None or cells is None:  # a turn that changed cells alone is not "0 files"
            shown = words.relative(plan.render(), project) + ("\n\n" + variables.render() if variables is not None else "")
            display({"text/plain": shown, "text/html": plan_html(plan, project, variables)}, raw=True)
        if cells is not None:
            display(Pretty(f"Undo {plan.checkpoint.label}: the notebook cells it changed: " + "; ".join(cells.described)))
        what = _restoring(files, cells, variables=variables)
        if "--dry-run" in flags:
            return f"Dry run: nothing was changed. `%agent undo` asks, then restores {what}."
        if "--yes" not in flags:
            answer = await ask_restore(self.shell, f"Restore {what} as before the turn?",
                                       frontend_wait=self.runner.config.frontend_wait)
            if answer == "no":
                return "Nothing was restored."
            if answer == "nobody":
                return ("Nothing was restored: nobody could answer the question here (no widget view, no stdin). "
                        "`%agent undo --yes` restores without asking.")
        if variables is not None and variables.conflicts and "--force" not in flags:
            changed_names = ", ".join(item.name for item in variables.conflicts)
            raise UsageError(f"Undo stopped, nothing was changed: {changed_names} changed after the turn; undoing would "
                             "lose those later changes. `%agent undo --force` restores anyway.")
        restored: list[dict[str, Any]] = []

        def put_back() -> list[dict[str, Any]]:
            restored.extend(names.restore(variables) if variables is not None else [])
            return restored

        try:
            store.undo(plan, force="--force" in flags, allow_outside="--outside" in flags, names=put_back)
        except CheckpointError as error:
            raise UsageError(words.relative(str(error), project)) from None
        back = [item["name"] for item in restored if item["action"] == "restore"]
        removed = [item["name"] for item in restored if item["action"] == "remove"]
        lost = [item["name"] for item in restored if item["action"] == "not_restorable"]
        in_words = (f"variables restored: {', '.join(back) or 'none'}; removed: {', '.join(removed) or 'none'}"
                    + (f"; not restorable: {', '.join(lost)}" if lost else "")) if restored else ""
        if session is not None and session.id == plan.checkpoint.session_id:
            note = f"(Note: the user undid your changes of turn {plan.checkpoint.turn_id}."
            if files or cells is not None:
                note = note[:-1] + (f"; these are back as they were before it: {_restoring(files, cells, names=True)}. "
                                    "Read them again before changing them.")
            if restored:
                note += (f" The notebook's variables are back too: restored {', '.join(back) or 'none'}; removed "
                         f"{', '.join(removed) or 'none'}" + (f"; not restorable: {', '.join(lost)}" if lost else "") + ".")
            self.runner.undo_notes.setdefault(session.id, []).append(note + ")")
        undone = f"Undid {plan.checkpoint.label}"
        done = [*([f"restored {_restoring(files, None)}"] if files else []), *([in_words] if restored else [])]
        undone += (": " + "; ".join(done) + "; recorded in the audit log.") if done else "."
        if cells is not None:
            undone += " " + await undo_cell_edits(self.shell, store, cells)
        return undone

    def _notebook_session(self, project: Any, store: Any) -> str | None:
        """After a restart (no session open here): the newest session started from this notebook that has
        something to undo; None when the kernel does not know its notebook (a terminal: the project's newest)."""
        from ..engine.session import list_sessions

        notebook = self.registry.notebook()
        if not notebook:
            return None
        mine = [info.id for info in list_sessions(project) if info.notebook == notebook]
        for session_id in mine:  # newest first
            if store.latest(session_id) is not None:
                return session_id
        raise _nothing_here(notebook, project)

    def cmd_login(self, rest: list[str]) -> Any:
        """%agent login [--keyring] — set the API key for this kernel (never shown in the notebook)

        Ask for the API key without it ever reaching the notebook's output.
        """
        from .login import login

        if rest not in ([], ["--keyring"]):
            raise UsageError("usage: %agent login [--keyring]")
        return login(self.shell, keyring="--keyring" in rest)


def _restoring(files: list[str], cells: Any, *, names: bool = False, variables: Any = None) -> str:
    """What an undo restores, in words: "app.py", "3 files and 2 notebook cells", "2 notebook cells",
    "app.py and 2 variables"."""
    parts = []
    if files:
        parts.append(", ".join(files) if names or len(files) == 1 else f"{len(files)} files")
    changed = len(variables.names) if variables is not None else 0
    if changed:
        parts.append(f"{changed} variable{'s' if changed != 1 else ''}")
    count = len(cells.inverse) if cells is not None else 0
    if count:
        parts.append("notebook cells " + ", ".join(cells.described) if names
                     else f"{count} notebook cell{'s' if count != 1 else ''}")
    return " and ".join(parts) or "nothing"


def _nothing_here(notebook: str, project: Any) -> Exception:
    from ..engine.checkpoints import CheckpointError

    return CheckpointError(f"Nothing to undo from this notebook ({words.relative(notebook, project)}): no session started "
                           "here changed a file that is not undone yet. Other notebooks' sessions are left alone; "
                           "%agent sessions lists them, and %agent resume ID, then %agent undo, undoes one.")


def nearest(word: str, names: "list[str] | tuple[str, ...]") -> str | None:
    """The name ``word`` was most likely meant to be (a typo, a prefix), None when none is close."""
    import difflib

    prefixed = [name for name in names if len(word.strip("-")) >= 2 and name.lstrip("-").startswith(word.lstrip("-"))]
    if len(prefixed) == 1:
        return prefixed[0]
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_subcommand(word: str) -> str:
    """What `%agent WORD` says when WORD is no subcommand: the nearest one, and where they are all listed."""
    close = nearest(word, COMMANDS)
    hint = f" Did you mean %agent {close}?" if close else ""
    return f"%agent has no subcommand {word!r}.{hint} The subcommands: {', '.join(COMMANDS)} (%agent help says what each does)."


def _help_line(name: str) -> tuple[str, str, str]:
    """(usage, summary, the rest of the docstring) of one subcommand, from its method's docstring."""
    import inspect

    doc = inspect.getdoc(getattr(Subcommands, f"cmd_{name}", None)) or ""
    first, _, rest = doc.partition("\n")
    usage, dash, summary = first.partition(" — ")
    if not dash:
        usage, summary = f"%agent {name}", first
    return usage.strip(), summary.strip().rstrip("."), rest.strip()


def command_help(name: str, *, full: bool = False) -> str:
    usage, summary, rest = _help_line(name)
    return f"{usage}\n  {summary}" + (f"\n\n{rest}" if full and rest else "")


def help_text() -> str:
    """One line per subcommand (their usage aligned, the summary after it), from the table that dispatches them."""
    rows = [_help_line(name)[:2] for name in COMMANDS]
    width = min(max(len(usage) for usage, _ in rows), 42)
    lines = ["%%agent runs a request (see %%agent?); %agent COMMAND inspects and steers the agent:", ""]
    for usage, summary in rows:
        if len(usage) > width:  # a long usage takes its own line rather than pushing every summary right
            lines += [usage, " " * (width + 2) + summary]
        else:
            lines.append(f"{usage.ljust(width)}  {summary}")
    lines += ["", "%agent help COMMAND shows one in full."]
    return "\n".join(lines)


def merge_outcomes(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Decision records with their outcome (and a review's answers) folded in (one row a call); other
    records as they are."""
    from .record import fold_review

    out: list[dict[str, Any]] = []
    by_call: dict[str, dict[str, Any]] = {}
    for record in records:
        call = str(record.get("tool_use_id") or "")
        if record.get("event") == "outcome" and call in by_call:
            by_call[call]["outcome"] = record.get("outcome", "")
            continue
        if record.get("event") == "review":
            if call in by_call:
                fold_review([by_call[call]], record)  # each change and its answer, on the call's row
            continue
        row = dict(record)
        out.append(row)
        if call and record.get("event") == "decision":
            by_call[call] = row
    return out


def table(rows: list[list[str]], *, right: frozenset[int] | set[int] = frozenset(), wrap: dict[int, int] | None = None) -> str:
    """Rows as aligned plain-text columns; a long cell of a ``wrap`` column wraps at word boundaries."""
    import textwrap

    wrap = wrap or {}
    cells = [[textwrap.wrap(str(c), wrap[i], break_long_words=False, break_on_hyphens=False) or [""]
              if i in wrap else [str(c)] for i, c in enumerate(row)] for row in rows]
    widths = [max(len(line) for row in cells for line in row[i]) for i in range(len(rows[0]))]
    out = []
    for row in cells:
        for index in range(max(len(cell) for cell in row)):
            parts = []
            for i, cell in enumerate(row):
                text = cell[index] if index < len(cell) else ""
                parts.append(text.rjust(widths[i]) if i in right else text.ljust(widths[i]))
            out.append("  ".join(parts).rstrip())
    return "\n".join(out)


# Output areas wrap a long line wherever it reaches the edge, mid-word; lines are kept shorter than
# a notebook's usual width and wrapped at spaces under their own column instead.
WIDTH = 100


def columns(rows: list[tuple[str, str]], width: int = WIDTH) -> str:
    """``label  value`` rows: the values in one column after the longest label, a long value wrapped
    at spaces under that column (a word longer than the line stays whole)."""
    import textwrap

    indent = max(len(label) for label, _ in rows) + 2
    out = []
    for label, value in rows:
        lines = textwrap.wrap(value, max(width - indent, 30), break_long_words=False, break_on_hyphens=False) or [""]
        out.append(label.ljust(indent) + lines[0])
        out += [" " * indent + line for line in lines[1:]]
    return "\n".join(line.rstrip() for line in out)


def wrapped(text: str, width: int = WIDTH) -> str:
    """Each line of ``text`` wrapped at spaces to ``width``, continued under its first word after its indent."""
    import textwrap

    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip()
        lead = len(line) - len(body)
        out += textwrap.wrap(body, max(width - lead, 30), initial_indent=" " * lead, subsequent_indent=" " * (lead + 2),
                             break_long_words=False, break_on_hyphens=False)
    return "\n".join(out)


def _options(rest: list[str], usage: str, *, values: tuple[str, ...] = (), switches: tuple[str, ...] = (),
             positional: int = 0) -> dict[str, Any]:
    """``--name VALUE`` and ``--switch`` options of a subcommand, the other words under ``"_"``."""
    found: dict[str, Any] = {"_": []}
    words = list(rest)
    while words:
        word = words.pop(0)
        if word in values:
            if not words:
                raise UsageError(usage)
            found[word] = words.pop(0)
        elif word in switches:
            found[word] = True
        elif word.startswith("--"):
            raise UsageError(usage)
        else:
            found["_"].append(word)
    if len(found["_"]) != positional:
        raise UsageError(usage)
    return found
