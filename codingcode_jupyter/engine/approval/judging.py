"""One call as the layers judge it (:class:`Judging`), and the facts several layers look at, worked
out once (:class:`Facts`) or by the functions below: what of the call leaves the machine, what a
project's untrusted rules would allow, what cannot be judged before it runs.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..domains import domain_allowed, url_host
from ..hooks import pre_tool_use as hooks_module
from ..project_settings import EffectiveSettings, directory_root
from ..secret_files import credential_store
from ..settings import PermissionMode
from ..tools.base import ToolCall
from ..trust.items import TrustItem
from .display import has_invisible
from .paths import relative_to_project
from .readonly_commands import read_only_command
from .rule_syntax import Rule, RuleError, parse_rule
from .rules import judge
from .subject import Subject
from .types import Verdict

if TYPE_CHECKING:
    from ..tools.base import ToolContext

__all__ = ["Facts", "Judging", "untrusted_allow", "unlisted_egress", "credential_read", "outside_read",
           "untrusted_directory", "unresolved", "PERSONAL_SOURCES"]


@dataclass
class Facts:
    """What several layers need to know about a subject, worked out once."""

    subject: Subject
    domains: tuple[str, ...]
    read_roots: tuple[Path, ...]
    # The command will run in the sandbox: what reads only when confined counts as reading.
    sandboxed: bool = False

    @cached_property
    def reads_only(self) -> str | None:
        """The read-only command table's description of a command that only reads, or None."""
        return read_only_command(self.subject, confined=self.sandboxed) if self.subject.command is not None else None

    @cached_property
    def read_only(self) -> bool:
        return self.subject.read_only or self.reads_only is not None

    @cached_property
    def egress(self) -> str | None:
        """Why a read-only call is not read-only enough to run unasked: what it reads or sends leaves."""
        return (unlisted_egress(self.subject, self.domains) or credential_read(self.subject)
                or outside_read(self.subject, self.read_roots))


@dataclass
class Judging:
    """One call as the layers judge it, and the strictest verdict so far."""

    call: ToolCall
    ctx: "ToolContext"
    subject: Subject
    settings: EffectiveSettings
    mode: PermissionMode
    rules: list[Rule]
    sandboxed: bool
    python_hooks: list[hooks_module.PythonHook]
    read_roots: tuple[Path, ...]
    # Judge a hook's modified input afresh with the layers before the hooks (set by the pipeline).
    rejudge: Callable[[dict[str, Any]], Awaitable[None]]
    verdict: Verdict | None = None
    trail: list[Verdict] = field(default_factory=list)

    @cached_property
    def facts(self) -> Facts:
        return Facts(self.subject, self.settings.allowed_domains, self.read_roots, self.sandboxed)

    def reset(self, subject: Subject, sandboxed: bool) -> None:
        """Judge ``subject`` instead (a hook changed the input): what was said about the old one no longer counts."""
        self.subject, self.sandboxed, self.verdict = subject, sandboxed, None
        self.__dict__.pop("facts", None)

    @property
    def undecided(self) -> bool:
        return self.verdict is None

# -- the facts the layers look at ----------------------------------------------------------------


def untrusted_allow(subject: Subject, settings: EffectiveSettings) -> Rule | None:
    """An allow rule of the project's that would allow this call but is ignored until trusted."""
    ignored = []
    for item in settings.ignored:
        if item.kind == "allow":
            try:
                ignored.append(parse_rule(item.detail["rule"], "allow", item.source))
            except RuleError:
                continue
    verdict = judge(subject, ignored) if ignored else None
    return verdict.rule if verdict is not None and verdict.action == "allow" else None


def unlisted_egress(subject: Subject, domains: tuple[str, ...]) -> str | None:
    """Why a call that sends a request is asked: its host is not on the allowed domains (None: it is).
    A web search is always one: its query leaves the machine, and may carry what was read. So is a
    URL a command names that code runs in the kernel (`!curl https://x`): no proxy keeps it to the
    allowed domains."""
    if subject.tool == "web_search":
        return (f"web_search sends its query {subject.input.get('query')!r} to a search service "
                "(what the query carries leaves the machine)")
    if subject.access.url is None:
        return _kernel_command_egress(subject, domains) if subject.access.code is not None else None
    host = url_host(subject.main or "")
    if host is not None and domain_allowed(host, domains):
        return None
    return (f"{subject.tool} would send a request to {host or 'an unknown host'}, which is not an allowed domain "
            "(what the URL carries leaves the machine)")


def _kernel_command_egress(subject: Subject, domains: tuple[str, ...]) -> str | None:
    """The first URL to a host nobody allowed that a command run from the kernel's code names."""
    for inner in subject.inner:
        for command in inner.command.commands if inner.command is not None else []:
            for word in command.argv[1:]:
                url = _URL.search(word) if "://" in word else None
                if url is None or url.group(0).lower().startswith("file:"):
                    continue
                host = url_host(url.group(0))
                if host is not None and not domain_allowed(host, domains):
                    return (f"`{_clip(command.text or ' '.join(command.argv))}` runs in the kernel, unsandboxed, and "
                            f"sends a request to {host}, which is not an allowed domain (what it sends leaves the "
                            "machine)")
    return None


_URL = re.compile(r"(?i)[a-z][a-z0-9+.-]*://\S+")


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def credential_read(subject: Subject) -> str | None:
    """Why a read is asked: it reaches a credential store of the home (what it reads goes to the model)."""
    for ref in subject.paths:
        store = credential_store(ref.resolved) if ref.resolved is not None else None
        if store is not None:
            return (f"{ref.via} `{ref.raw}` reads {store}, a credential store, which the sandbox hides from commands; "
                    "what is read is sent to the model")
    return None


def outside_read(subject: Subject, roots: tuple[Path, ...]) -> str | None:
    """Why a read-only tool's read is asked: it reaches outside the project and every directory
    the person added (``additionalDirectories``), and what it reads is sent to the model.

    Commands are left to the read-only command table, which already requires their paths inside.
    """
    if subject.command is not None:
        return None
    for ref in subject.paths:
        path = ref.resolved
        if path is None or relative_to_project(subject.project, path) is not None:
            continue
        if any(path.is_relative_to(root) for root in roots):
            continue
        return (f"{ref.via} `{ref.raw}` reads outside the project ({path}); what is read is sent to the model "
                "(permissions.additionalDirectories lists directories read without asking)")
    return None


def untrusted_directory(subject: Subject, settings: EffectiveSettings, roots: tuple[Path, ...]) -> TrustItem | None:
    """The project's ``additionalDirectories`` entry, ignored until trusted, that would let this read run unasked."""
    for item in settings.ignored:
        if item.kind != "directory":
            continue
        if outside_read(subject, (*roots, directory_root(item.detail["value"], subject.project))) is None:
            return item
    return None


# Settings that are the person's own: their home directory's files, and the session's rules (typed
# by the person). A project's files are not: a cloned repository may ship them.
PERSONAL_SOURCES = frozenset({"user", "claude-user", "session"})


def _allowed_outright(rules: list[Rule], subject: Subject) -> Rule | None:
    """The person's own allow rule naming the tool with no pattern (`run_python`), if any: with one,
    code the judge cannot prove is the person's choice, not a card."""
    for rule in rules:
        if (rule.action == "allow" and rule.pattern is None and rule.source in PERSONAL_SOURCES
                and not rule.missing and any(fnmatch.fnmatchcase(subject.tool, tool) for tool in rule.tools)):
            return rule
    return None


def unresolved(subject: Subject) -> list[str]:
    """What about the call cannot be known before it runs: run-time values, arbitrary code, hidden characters."""
    problems: list[str] = []
    for command in [subject.command, *(inner.command for inner in subject.inner)]:
        if command is not None:
            problems.extend(command.unresolved)
            if has_invisible(command.source):
                problems.append("the command holds invisible Unicode characters")
    if subject.code is not None:
        problems.extend(subject.code.unresolved)
    return list(dict.fromkeys(problems))
