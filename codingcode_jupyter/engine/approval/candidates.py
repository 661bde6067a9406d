"""The rules "Always allow" and "Never allow" can save for a call, from the narrowest to the broadest.

Derived from the parsed call: the exact command, its program and subcommand with a wildcard
(`pytest *`, `npm run test *`, `git diff *`); a whole MCP tool; a fetch domain; a path glob
for file tools (`edit_file(src/**)`). An allow rule broader than the exact call is offered
only where it is safe to generalise: never for commands with substitutions or parts known
only at run time, chained or piped commands, programs that run other code (shells,
interpreters, wrappers such as `sudo`, `env`, `xargs`), programs that reach the network or
delete, and never for anything a built-in rule touches. "Never allow" may always generalise:
a broader deny only denies more.
"""

from __future__ import annotations

import posixpath

from ..domains import url_host
from .builtin_rules import check_builtin
from .paths import protected_reason, relative_to_project
from .program_traits import NAMES_SUBCOMMAND, NESTED_SUBCOMMANDS, NO_WILDCARD
from .rule_syntax import escape_pattern
from .rules import exact_rules
from .shell_parse import SimpleCommand
from .subject import Subject

__all__ = ["allow_candidates", "deny_candidates"]

# Programs whose first operand names what they do (`git diff *`), those that nest one level more
# (`npm run test *`, `uv run pytest *`) and those never generalised: rows of the program table.
_SUBCOMMANDS = NAMES_SUBCOMMAND
_SCRIPT_RUNNERS = NESTED_SUBCOMMANDS
_NO_WILDCARD = NO_WILDCARD


def _single(subject: Subject) -> SimpleCommand | None:
    """The one plain command of the call, when it is one; None for anything composite or unknown."""
    command = subject.command
    if command is None or command.unresolved or len(subject.judged_commands) != 1:
        return None
    simple = subject.judged_commands[0]
    if simple.substituted or simple.piped_stdin or simple.upstream or simple.container or simple.redirects \
            or any(simple.dynamic) or simple.dynamic_tail or simple.wrappers or simple.assignments:
        return None
    return simple if simple.argv else None


def _prefix(simple: SimpleCommand) -> list[str]:
    """The words a generalised rule keeps: the program, and its subcommand (and script) where it has one."""
    argv = simple.argv
    words = [argv[0]]
    if argv[0] in _SUBCOMMANDS and len(argv) > 1 and not argv[1].startswith("-"):
        words.append(argv[1])
        if (argv[0], argv[1]) in _SCRIPT_RUNNERS and len(argv) > 2 and not argv[2].startswith("-"):
            words.append(argv[2])
    return words


def _command_wildcards(subject: Subject, *, for_deny: bool) -> list[str]:
    simple = _single(subject)
    if simple is None:
        return []
    program = posixpath.basename(simple.argv[0])
    if not for_deny and (program in _NO_WILDCARD or simple.argv[0] != program):
        return []
    words = _prefix(simple)
    out = []
    for size in range(len(words), 0, -1):
        rule = f"{subject.tool}({' '.join(escape_pattern(w) for w in words[:size])} *)"
        if rule not in out:
            out.append(rule)
        if not for_deny:
            break  # allow: program + subcommand at most, never the bare program of a subcommand tool
    return out


def _path_globs(subject: Subject) -> list[str]:
    refs = [ref for ref in subject.paths if ref.resolved is not None]
    if len(refs) != 1:
        return []
    ref = refs[0]
    assert ref.resolved is not None
    rel = relative_to_project(subject.project, ref.resolved)
    if not rel or "/" not in rel or protected_reason(subject.project, ref.resolved):
        return []
    top = rel.split("/", 1)[0]
    return [f"{subject.tool}({escape_pattern(top)}/**)"]


def _broader(subject: Subject, *, for_deny: bool) -> list[str]:
    if subject.command is not None:
        return _command_wildcards(subject, for_deny=for_deny)
    if subject.access.url is not None:
        return []  # the exact rule is the domain already
    if subject.rules_match_paths:
        return _path_globs(subject)
    if subject.source == "mcp":
        return [subject.tool]  # the whole tool, any arguments
    return []


def allow_candidates(subject: Subject) -> list[list[str]]:
    """The rule sets "Always allow" may save, narrowest first: the exact rules of the call (one per
    simple command), then each broader single rule."""
    exact = exact_rules(subject)
    if not exact:
        return []
    if check_builtin(subject):
        return [exact]  # a built-in rule has a say here: nothing broader
    return [exact] + [[rule] for rule in _broader(subject, for_deny=False) if rule not in exact]


def deny_candidates(subject: Subject) -> list[list[str]]:
    """The rule sets "Never allow" may save, narrowest first."""
    exact = exact_rules(subject)
    if not exact:
        return []
    broader = _broader(subject, for_deny=True)
    if subject.access.url is not None:
        host = url_host(subject.main or "")
        broader = [f"{subject.tool}(domain:{host})"] if host else []
    return [exact] + [[rule] for rule in broader if rule not in exact]
