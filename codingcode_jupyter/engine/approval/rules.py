"""Permission rules written `tool(pattern)`, in our names or Claude Code's, and how a call is judged.

Our rules:

* ``tool`` is a glob over display names (`execute_command`, `everything:*`).
* For ``execute_command`` the pattern is matched against EACH simple command (wrappers
  peeled, quotes removed); ``*`` matches any text, a trailing `` *`` (or ``:*``) also
  matches no arguments. An allow rule applies only when every simple command is covered,
  so `pytest -q; curl x` is never allowed by `execute_command(pytest *)`.
* For file tools (and any tool with a path argument) the pattern is a gitignore-style glob
  (``*`` within one directory, ``**`` across directories) against the resolved path:
  relative patterns against the path inside the project, ``/``, ``//`` or ``~`` patterns
  against the absolute path.
* For other tools it matches the main argument (fetch_url's url, web_search's query,
  dispatch_agent's agent) or, for MCP and custom tools, the arguments as compact JSON
  with sorted keys.
* ``domain:HOST`` (``fetch_url(domain:docs.python.org)``, ``*.example.com`` for subdomains)
  matches a tool that declares a URL argument by the URL's host.
* ``\\`` escapes a wildcard: "Always allow" writes exact rules this way.

Claude Code's rules (``Bash(npm run test:*)``, ``Read(./secrets/**)``, ``Edit(/src/**)``,
``WebFetch(domain:host)``, ``mcp__server__tool``), in any settings file, mean what they
mean there: the tool name picks the dialect (:mod:`..claude.names` maps it to our tools),
and Read/Edit paths follow Claude Code's four forms — ``//abs``, ``~/home``, ``/path`` from
the settings file's anchor (the project for project files, the configuration directory for
the person's own), ``path`` / ``./path`` from the project, where a bare name (``.env``)
matches at any depth and, in deny and ask rules, so does a one-directory pattern
(``secrets/**``). A deny or ask path rule matches when any path the call reaches matches,
the written one or the one its symlinks lead to; an allow rule only when all do.

The rule language itself (parsing, what a rule names) is :mod:`.rule_syntax`.

Higher priority first; at equal priority deny beats ask beats allow.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from ..domains import domain_allowed, url_host
from ..path_globs import path_regex
from ..tools.access import BUILTIN_ACCESS
from .paths import relative_to_project
from .program_traits import COMMAND_WRAPPERS as _SUBCOMMAND_WRAPPERS
from .rule_syntax import Action, Rule, escape_pattern, source_file
from .shell_words import quote_word
from .spellings import deny_spellings
from .subject import Subject

if TYPE_CHECKING:
    from .shell_parse import SimpleCommand

__all__ = ["RuleVerdict", "judge", "exact_rules", "nearest_allow", "rule_path"]

_SEVERITY = {"deny": 2, "ask": 1, "allow": 0}


@dataclass(frozen=True)
class RuleVerdict:
    """The rule that decided, and why."""

    action: Action
    rule: Rule
    reason: str


@lru_cache(maxsize=1024)
def _command_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == "*":
            # `pytest *` also covers a bare `pytest`.
            if i == len(pattern) - 1 and out and out[-1] == re.escape(" "):
                out[-1] = "(?: .*)?"
            else:
                out.append(".*")
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _tool_matches(rule: Rule, subject: Subject) -> bool:
    return any(fnmatch.fnmatchcase(subject.tool, tool) or fnmatch.fnmatchcase(subject.name, tool)
               for tool in rule.tools)


def _ourpath_regex(pattern: str) -> tuple[re.Pattern[str], bool]:
    """(regex, absolute?) of one of our path patterns: relative to the project, or `/`, `//`, `~` absolute."""
    if pattern.startswith("./"):
        return path_regex(pattern[2:].rstrip("/") or "/"), False  # `./~name`: a name in the project
    absolute = pattern.startswith("/") or pattern.startswith("~")
    if pattern.startswith("//"):
        pattern = pattern[1:]
    elif pattern.startswith("~"):
        # Paths are compared resolved, so `~` is the resolved home (a symlinked home still matches).
        pattern = escape_pattern(os.path.realpath(os.path.expanduser("~"))) + pattern[1:]
    return path_regex(pattern.rstrip("/") or "/"), absolute


def _our_path_matches(rule: Rule, subject: Subject) -> bool:
    regex, absolute = _ourpath_regex(rule.match_pattern or "")
    refs = [ref for ref in subject.paths if ref.resolved is not None]
    if not refs:
        return False
    hits = []
    for ref in refs:
        assert ref.resolved is not None
        target = str(ref.resolved) if absolute else relative_to_project(subject.project, ref.resolved)
        hits.append(target is not None and bool(regex.fullmatch(target)))
    # A deny or ask rule holds when any path the call reaches matches; an allow rule only when all do.
    return any(hits) if rule.action != "allow" else all(hits)


_ONE_DIRECTORY = re.compile(r"^[^/*?\[\]]+/\*\*$")


def _claude_base(rule: Rule, project: Path) -> tuple[str, str]:
    """(directory, pattern relative to it) of a Claude Code Read/Edit pattern."""
    pattern = rule.match_pattern or ""
    home = os.path.realpath(os.path.expanduser("~"))
    if pattern.startswith("//"):
        return "/", pattern[2:]
    if pattern == "~" or pattern.startswith("~/"):
        return home, pattern[2:]
    if pattern.startswith("/"):
        return os.path.realpath(rule.anchor or str(project)), pattern[1:]
    body = pattern[2:] if pattern.startswith("./") else pattern
    core = body.rstrip("/")
    # gitignore: a name without a slash matches at any depth; Claude Code reads a one-directory
    # pattern (`secrets/**`) the same way in deny and ask rules, anchored in allow rules.
    if "/" not in core or (rule.action != "allow" and _ONE_DIRECTORY.match(core)):
        if not core.startswith("**"):
            body = "**/" + body
    return str(project), body


def _claude_path_matches(rule: Rule, subject: Subject) -> bool:
    base, body = _claude_base(rule, subject.project)
    regex = path_regex(body.rstrip("/") or "**")
    refs = [ref for ref in subject.paths if ref.resolved is not None]
    if not refs:
        return False

    def covered(path: str) -> bool:
        rel = os.path.relpath(path, base)
        if rel == ".." or rel.startswith("../"):
            return False
        parts = [] if rel == "." else rel.split("/")
        # A pattern naming a directory covers everything under it (gitignore).
        return any(regex.fullmatch("/".join(parts[:n])) for n in range(len(parts), 0, -1))

    hits = []
    for ref in refs:
        written = os.path.normpath(os.path.join(str(subject.project), os.path.expanduser(ref.raw)))
        forms = {str(ref.resolved), written}
        if rule.action != "allow" and ref.access in ("tree", "list"):
            # A search rooted at a directory reads what is inside it: `secrets/**` covers searching `secrets`.
            forms |= {os.path.join(form, "\0child") for form in forms}
        hits.append(any(covered(form) for form in forms) if rule.action != "allow"
                    else all(covered(form) for form in forms))
    return any(hits) if rule.action != "allow" else all(hits)


def _matches_call(rule: Rule, subject: Subject) -> bool:
    """Does a non-command rule match this call?"""
    pattern = rule.match_pattern
    if pattern is None:
        return True
    if pattern.startswith("domain:"):
        host = url_host(subject.main or "") if subject.access.url is not None else None
        domain = pattern[len("domain:"):].strip()
        return host is not None and (domain == "*" or domain_allowed(host, [domain]))
    if rule.kind == "path":
        return subject.rules_match_paths and _claude_path_matches(rule, subject)
    if subject.rules_match_paths:
        return _our_path_matches(rule, subject)
    if subject.main is not None:
        return bool(_command_regex(pattern).fullmatch(subject.main))
    return False


def _allow_texts(command: SimpleCommand) -> set[str]:
    """What an allow rule is matched against: the command with wrappers peeled (`timeout`, `nice`);
    through a package runner (`npx`, `uvx`, `uv run`), only as written from the runner on.

    A runner's next word names a package it may fetch from a registry and run (`npx ls` runs the
    npm package `ls` when no local one has that name), so `Bash(ls:*)` must not allow it: an allow
    rule allows what it names and nothing else. `Bash(npx ls:*)` or `Bash(uv run:*)` say so.
    """
    if not any(wrapper.split()[0] in _SUBCOMMAND_WRAPPERS for wrapper in command.wrappers):
        return {command.rule_text()}
    written = command.full_argv
    for index, word in enumerate(written):
        sub = _SUBCOMMAND_WRAPPERS.get(os.path.basename(word))
        if sub is not None and (sub == "" or written[index + 1:index + 2] == [sub]):
            return {" ".join([*command.assignments, *map(quote_word, written[index:])])}
    return set()


_HARMLESS_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})


def _writes_outside(subject: Subject, command: SimpleCommand) -> bool:
    """True when a redirect of ``command`` writes a file outside the project (or one only known at run time)."""
    for redirect in command.redirects:
        if redirect.op not in _WRITE_OPS or redirect.target.isdigit() or redirect.target in _HARMLESS_SINKS:
            continue
        if redirect.dynamic or command.cwd is None:
            return True
        target = Path(os.path.realpath(os.path.join(command.cwd, os.path.expanduser(redirect.target))))
        if relative_to_project(subject.project, target) is None:
            return True
    return False


def judge(subject: Subject, rules: Iterable[Rule], *, trust_unresolved: bool = False) -> RuleVerdict | None:
    """The deciding rule for ``subject``, or None when no rule applies.

    An allow rule covers a command with parts known only at run time only when
    ``trust_unresolved`` (it will run in the sandbox, which holds the built-in rules).
    """
    candidates: list[tuple[int, int, Rule, str]] = []
    applicable = [rule for rule in rules if _tool_matches(rule, subject)]
    parsed = subject.command
    if parsed is not None:
        commands = subject.judged_commands
        coverage: list[int | None] = [None] * len(commands)
        allow_rules: list[Rule | None] = [None] * len(commands)
        for rule in applicable:
            hit_text = commands[0].text if commands else parsed.source
            if rule.match_pattern is None:
                matched = list(range(len(commands)))
            else:
                regex = _command_regex(rule.match_pattern)
                if rule.action == "allow":
                    # Allow looks at the peeled command (`timeout *` must not allow `timeout 5 curl x`)
                    # or a package runner's as written; never at a normalised spelling; and it never
                    # covers writing a file outside the project through a redirect.
                    matched = [i for i, c in enumerate(commands)
                               if any(regex.fullmatch(t) for t in _allow_texts(c)) and not _writes_outside(subject, c)]
                else:
                    # Deny and ask hold on every spelling of every command, `bash -c`/`eval` included.
                    hit = next((c for c in parsed.commands
                                if any(regex.fullmatch(t) for t in deny_spellings(c))), None)
                    matched = []
                    if hit is not None or regex.fullmatch(parsed.source.strip()):
                        matched = [-1]
                        hit_text = (hit.text or hit.rule_text()) if hit is not None else parsed.source
            if rule.action == "allow":
                for i in matched:
                    covered_by = coverage[i]
                    if covered_by is None or rule.priority > covered_by:
                        coverage[i], allow_rules[i] = rule.priority, rule
            elif matched:
                candidates.append((rule.priority, _SEVERITY[rule.action], rule, hit_text))
        covering = [(priority, rule) for priority, rule in zip(coverage, allow_rules, strict=True)
                    if priority is not None and rule is not None]
        if commands and len(covering) == len(commands) and (trust_unresolved or not parsed.unresolved):
            # The weakest rule of those covering a command decides (the first of equals, as min() picks).
            weakest_priority, weakest_rule = min(covering, key=lambda pair: pair[0])
            candidates.append((weakest_priority, 0, weakest_rule, parsed.source))
    else:
        for rule in applicable:
            if _matches_call(rule, subject):
                candidates.append((rule.priority, _SEVERITY[rule.action], rule, subject.main or subject.tool))
    candidates += _reach_candidates(subject, rules, applicable)
    if not candidates:
        return None
    priority, _, rule, what = max(candidates, key=lambda c: (c[0], c[1]))
    source = source_file(rule.source)
    verbs = {"deny": "denies", "ask": "asks before", "allow": "allows"}
    reason = f"rule `{rule.text}` ({source}) {verbs[rule.action]} `{' '.join(str(what).split())[:160]}`"
    return RuleVerdict(rule.action, rule, reason)


# What a rule's tools do to the paths they name: a Read rule's tools read, an Edit rule's write.
_READ_TOOLS = frozenset(name for name, access in BUILTIN_ACCESS.items()
                        if access.paths and all(arg.access != "write" for arg in access.paths))
_WRITE_TOOLS = frozenset(name for name, access in BUILTIN_ACCESS.items()
                         if any(arg.access == "write" for arg in access.paths))
_READS = ("read", "tree", "list", "unknown")
_WRITES = ("write", "unknown")


def _reach_candidates(subject: Subject, rules: Iterable[Rule], applicable: list[Rule]) -> list[tuple[int, int, Rule, str]]:
    """The person's deny and ask rules where the call reaches what they name by another tool: a
    Read or Edit path rule on any path a command or code reads or writes (`Read(./secrets/**)`
    holds for `cat secrets/prod.json`), a command rule on a command code runs
    (`Bash(git push:*)` holds for `subprocess.run(['git', 'push'])`). Allow rules never reach
    across tools: what they allow is what they name."""
    found: list[tuple[int, int, Rule, str]] = []
    for rule in rules:
        if rule.action == "allow" or rule in applicable or rule.match_pattern is None:
            continue
        tools = set(rule.tools)
        kinds = _READS if tools and tools <= _READ_TOOLS else _WRITES if tools & _WRITE_TOOLS else None
        if kinds is not None:
            reached = replace(subject, paths=[ref for ref in subject.paths if ref.access in kinds])
            matcher = _claude_path_matches if rule.kind == "path" else _our_path_matches
            if reached.paths and matcher(rule, reached):
                what = subject.command.source if subject.command is not None else subject.main or subject.tool
                found.append((rule.priority, _SEVERITY[rule.action], rule, what))
    commands = [inner for inner in subject.inner if inner.command is not None]
    if commands:
        command_rules = [r for r in rules if r.action != "allow"
                         and any(fnmatch.fnmatchcase("execute_command", tool) for tool in r.tools)]
        for inner in commands:
            verdict = judge(replace(inner, tool="execute_command", name="execute_command"), command_rules)
            if verdict is not None:
                found.append((verdict.rule.priority, _SEVERITY[verdict.action], verdict.rule,
                              inner.command.source if inner.command is not None else inner.tool))
    return found


def exact_rules(subject: Subject) -> list[str]:
    """Rules that match exactly this call and nothing broader (what "Always"/"Never" persist)."""
    tool = subject.tool
    if subject.is_command:
        texts = []
        for command in subject.judged_commands:
            # Through a package runner the rule names the runner too: the peeled text would not allow it.
            text = min(_allow_texts(command) or {command.rule_text()})
            if text and text not in texts:
                texts.append(text)
        return [f"{tool}({escape_pattern(text)})" for text in texts]
    if subject.access.url is not None:
        # A fetch is remembered by where it goes, not by its exact query.
        host = url_host(subject.main or "")
        return [f"{tool}(domain:{host})"] if host else []
    if subject.rules_match_paths:
        resolved = [ref.resolved for ref in subject.paths if ref.resolved is not None][:1]
        return [f"{tool}({rule_path(subject.project, path)})" for path in resolved]
    if subject.main is not None:
        return [f"{tool}({escape_pattern(subject.main)})"]
    return []




def rule_path(project: Path, path: Path) -> str:
    """``path`` as a saved rule writes it: relative to the project when inside it (the rule still
    holds when the project moves or is shared), else ``~/…`` under the home, else absolute."""
    rel = relative_to_project(project, path)
    if rel:
        # A first character our patterns read as an anchor keeps the name relative.
        return escape_pattern(f"./{rel}" if rel[0] in "/~" else rel)
    home = Path(os.path.realpath(os.path.expanduser("~")))
    if path != home and path.is_relative_to(home) and home != Path("/"):
        return "~/" + escape_pattern(path.relative_to(home).as_posix())
    return escape_pattern(str(path))


def _literal_words(pattern: str) -> list[str]:
    """The words of a command pattern before its first wildcard (what a call must start with)."""
    head = re.split(r"(?<!\\)[*?]", pattern, maxsplit=1)[0]
    return head.replace("\\", "").split()


def nearest_allow(subject: Subject, rules: Iterable[Rule]) -> str | None:
    """When no rule allows a call: the allow rule that comes nearest, and why it does not cover
    the call (shown on the card, so a person does not go looking for a typo); None if none is near."""
    allows = [rule for rule in rules if rule.action == "allow" and _tool_matches(rule, subject)
              and rule.match_pattern is not None]
    if not allows:
        return None
    def where(rule: Rule) -> str:
        return source_file(rule.source)

    parsed = subject.command
    if parsed is None:
        rule = allows[0]
        return f"nearest rule `{rule.text}` ({where(rule)}) does not match `{(subject.main or subject.tool)[:120]}`"
    commands = subject.judged_commands
    best: tuple[int, Rule, str] | None = None
    for rule in allows:
        regex = _command_regex(rule.match_pattern or "")
        covered = [c for c in commands if any(regex.fullmatch(t) for t in _allow_texts(c))]
        if covered and len(covered) == len(commands):
            if parsed.unresolved:
                return (f"rule `{rule.text}` ({where(rule)}) covers the command, but part of it is only known when "
                        f"it runs ({parsed.unresolved[0]}), so no allow rule can vouch for it")
            outside = next((c for c in covered if _writes_outside(subject, c)), None)
            if outside is not None:
                return f"rule `{rule.text}` ({where(rule)}) covers `{outside.text}`, but not its redirect writing outside the project"
            continue  # it covers the call: something other than the rules decided
        if covered:
            rest = next(c for c in commands if c not in covered)
            return (f"rule `{rule.text}` ({where(rule)}) covers `{covered[0].text}` but not `{rest.text}`; "
                    "an allow rule must cover every command of the line")
        spelled = next((c for c in commands if any(regex.fullmatch(t) for t in deny_spellings(c))), None)
        if spelled is not None:
            return (f"rule `{rule.text}` ({where(rule)}) matches `{spelled.text}` only as respelled; an allow rule "
                    "covers the command as written (an environment prefix, `git -C`, a path to the program are not "
                    "what it says)")
        literal = _literal_words(rule.match_pattern or "")
        for command in commands:
            words = command.rule_text().split()
            same = 0
            while same < min(len(words), len(literal)) and words[same] == literal[same]:
                same += 1
            if same and (best is None or same > best[0]):
                best = (same, rule, command.text or command.rule_text())
    if best is None:
        return None
    _, rule, text = best
    return f"nearest rule `{rule.text}` ({where(rule)}) expects `{rule.match_pattern}`, the command is `{text[:120]}`"


def sandbox_globs(rules: Iterable[Rule], project: Path, tools: tuple[str, ...]) -> list[str]:
    """The absolute path patterns the person's deny rules for ``tools`` name (``read_file``: what
    the sandbox hides; ``edit_file``/``write_file``: what it keeps read-only), read as the judge
    reads them, so a rule holds for what a command or code does that no judge saw. Rules that
    name no path (a whole tool) or reach no path (a command rule) have none."""
    globs: list[str] = []
    for rule in rules:
        if rule.action != "deny" or not rule.match_pattern or rule.match_pattern.startswith("domain:"):
            continue
        if not any(tool in rule.tools for tool in tools):
            continue
        if rule.kind == "path":
            base, body = _claude_base(rule, project)
            pattern = os.path.join(escape_pattern(base), body.rstrip("/") or "**")
        elif rule.style == "codingcode":
            raw = rule.match_pattern
            if raw.startswith("./"):
                pattern = os.path.join(escape_pattern(str(project)), raw[2:].rstrip("/") or "**")
            elif raw.startswith("//"):
                pattern = raw[1:]
            elif raw.startswith("~"):
                pattern = escape_pattern(os.path.realpath(os.path.expanduser("~"))) + raw[1:]
            elif raw.startswith("/"):
                pattern = raw
            else:
                pattern = os.path.join(escape_pattern(str(project)), raw)
            pattern = pattern.rstrip("/") or "/"
        else:
            continue
        globs.append(pattern)
    return list(dict.fromkeys(globs))
