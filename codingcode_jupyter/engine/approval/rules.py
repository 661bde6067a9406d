"""Permission rules written `tool(pattern)`, and how a call is judged against them.

* ``tool`` is a glob over display names (`execute_command`, `everything:*`).
* For ``execute_command`` the pattern is matched against EACH simple command (wrappers
  peeled, quotes removed); ``*`` matches any text, a trailing `` *`` also matches no
  arguments. An allow rule applies only when every simple command is covered, so
  `pytest -q; curl x` is never allowed by `execute_command(pytest *)`.
* For file tools (and any tool with a path argument) the pattern is a gitignore-style glob
  (``*`` within one directory, ``**`` across directories) against the resolved path:
  relative patterns against the path inside the project, ``/`` or ``~`` patterns against
  the absolute path.
* For other tools it matches the main argument (fetch_url's url, web_search's query,
  dispatch_agent's agent) or, for MCP and custom tools, the arguments as compact JSON
  with sorted keys.
* ``domain:HOST`` (``fetch_url(domain:docs.python.org)``, ``*.example.com`` for subdomains)
  matches a tool that declares a URL argument by the URL's host.
* ``\\`` escapes a wildcard: "Always allow" writes exact rules this way.

Higher priority first; at equal priority deny beats ask beats allow.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Literal

from ..domains import domain_allowed, url_host, validate_domain_patterns
from .paths import relative_to_project
from .subject import Subject

__all__ = ["Rule", "RuleError", "RuleVerdict", "parse_rule", "judge", "exact_rules", "escape_pattern", "Action",
           "SOURCE_PRIORITY"]

Action = Literal["allow", "deny", "ask"]
_SEVERITY = {"deny": 2, "ask": 1, "allow": 0}
SOURCE_PRIORITY = {"builtin": 1000, "session": 100, "local": 100, "project": 100}
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.:*?\-\[\]]+")


class RuleError(ValueError):
    """A rule string that cannot be understood."""


@dataclass(frozen=True)
class Rule:
    """One permission rule: which tool, which arguments, what to do, from where."""

    tool: str
    pattern: str | None
    action: Action
    source: str = "session"
    priority: int = 100

    @property
    def text(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


@dataclass(frozen=True)
class RuleVerdict:
    """The rule that decided, and why."""

    action: Action
    rule: Rule
    reason: str


def parse_rule(text: str, action: Action = "allow", source: str = "session", priority: int | None = None) -> Rule:
    """``tool`` or ``tool(pattern)`` as a :class:`Rule`; RuleError says what is wrong."""
    if not isinstance(text, str):
        raise RuleError(f"a rule must be a string like 'execute_command(pytest *)', got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise RuleError("empty rule; write a tool name, e.g. 'read_file' or 'execute_command(pytest *)'")
    pattern = None
    name = stripped
    if "(" in stripped:
        if not stripped.endswith(")"):
            raise RuleError(f"rule {text!r} opens '(' but does not end with ')'")
        name, pattern = stripped[: stripped.index("(")], stripped[stripped.index("(") + 1 : -1]
        if not pattern.strip():
            raise RuleError(f"rule {text!r} has an empty pattern; write the tool name alone to match every call")
    elif stripped.endswith(")"):
        raise RuleError(f"rule {text!r} closes ')' without opening '('")
    name = name.strip()
    if pattern is not None and pattern.startswith("domain:"):
        problems = validate_domain_patterns([pattern[len("domain:"):]])
        if problems:
            raise RuleError(f"rule {text!r}: domain {problems[0]}")
    if not _TOOL_NAME.fullmatch(name):
        raise RuleError(f"rule {text!r}: {name!r} is not a tool name or glob (letters, digits, _ - . : and * ?)")
    return Rule(tool=name, pattern=pattern, action=action, source=source,
                priority=SOURCE_PRIORITY.get(source, 100) if priority is None else priority)


def escape_pattern(text: str) -> str:
    """``text`` with wildcards escaped, so it matches only itself."""
    return re.sub(r"([\\*?\[])", r"\\\1", text)


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


@lru_cache(maxsize=1024)
def _path_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append(f"[{'^' + body[1:] if body.startswith('!') else body}]")
                i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _tool_matches(rule: Rule, subject: Subject) -> bool:
    return fnmatch.fnmatchcase(subject.tool, rule.tool) or fnmatch.fnmatchcase(subject.name, rule.tool)


def _path_matches(rule: Rule, subject: Subject) -> bool:
    pattern = rule.pattern or ""
    if pattern.startswith("./"):
        pattern = pattern[2:]
    absolute = pattern.startswith("/") or pattern.startswith("~")
    if absolute:
        pattern = escape_pattern(os.path.expanduser("~")) + pattern[1:] if pattern.startswith("~") else pattern
    regex = _path_regex(pattern.rstrip("/") or "/")
    refs = [ref for ref in subject.paths if ref.resolved is not None]
    if not refs:
        return False
    for ref in refs:
        target = str(ref.resolved) if absolute else relative_to_project(subject.project, ref.resolved)
        if target is None or not regex.fullmatch(target):
            return False
    return True


def _matches_call(rule: Rule, subject: Subject) -> bool:
    """Does a non-command rule match this call?"""
    if rule.pattern is None:
        return True
    if rule.pattern.startswith("domain:"):
        host = url_host(subject.main or "") if subject.access.url is not None else None
        return host is not None and domain_allowed(host, [rule.pattern[len("domain:"):]])
    if subject.rules_match_paths:
        return _path_matches(rule, subject)
    if subject.main is not None:
        return bool(_command_regex(rule.pattern).fullmatch(subject.main))
    return False


def _command_texts(command) -> set[str]:
    texts = {command.rule_text(), command.wrapped_text()}
    if command.argv:
        texts.add(" ".join([*command.assignments, command.name, *command.argv[1:]]))
    return texts


_HARMLESS_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})


def _writes_outside(subject: Subject, command) -> bool:
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
    if subject.is_command:
        commands = subject.judged_commands
        coverage: list[int | None] = [None] * len(commands)
        allow_rules: list[Rule | None] = [None] * len(commands)
        for rule in applicable:
            if rule.pattern is None:
                matched = list(range(len(commands)))
            else:
                regex = _command_regex(rule.pattern)
                if rule.action == "allow":
                    # Allow looks at the peeled command only: `timeout *` must not allow `timeout 5 curl x`;
                    # and it never covers writing a file outside the project through a redirect.
                    matched = [i for i, c in enumerate(commands) if regex.fullmatch(c.rule_text())
                               and not _writes_outside(subject, c)]
                else:
                    matched = [i for i, c in enumerate(commands) if any(regex.fullmatch(t) for t in _command_texts(c))]
                    if regex.fullmatch(subject.command.source.strip()):
                        matched = matched or list(range(len(commands)))
            if rule.action == "allow":
                for i in matched:
                    if coverage[i] is None or rule.priority > coverage[i]:
                        coverage[i], allow_rules[i] = rule.priority, rule
            elif matched:
                text = commands[matched[0]].text if commands else subject.command.source
                candidates.append((rule.priority, _SEVERITY[rule.action], rule, text))
        if commands and all(c is not None for c in coverage) and (trust_unresolved or not subject.command.unresolved):
            weakest = min(range(len(commands)), key=lambda i: coverage[i])
            candidates.append((coverage[weakest], 0, allow_rules[weakest], subject.command.source))
    else:
        for rule in applicable:
            if _matches_call(rule, subject):
                candidates.append((rule.priority, _SEVERITY[rule.action], rule, subject.main or subject.tool))
    if not candidates:
        return None
    priority, _, rule, what = max(candidates, key=lambda c: (c[0], c[1]))
    source = {"project": ".codingcode/settings.json", "local": ".codingcode/settings.local.json"}.get(rule.source, rule.source)
    verbs = {"deny": "denies", "ask": "asks before", "allow": "allows"}
    reason = f"rule `{rule.text}` ({source}) {verbs[rule.action]} `{' '.join(str(what).split())[:160]}`"
    return RuleVerdict(rule.action, rule, reason)


def exact_rules(subject: Subject) -> list[str]:
    """Rules that match exactly this call and nothing broader (what "Always"/"Never" persist)."""
    tool = subject.tool
    if subject.is_command:
        texts = []
        for command in subject.judged_commands:
            text = command.rule_text()
            if text and text not in texts:
                texts.append(text)
        return [f"{tool}({escape_pattern(text)})" for text in texts]
    if subject.access.url is not None:
        # A fetch is remembered by where it goes, not by its exact query.
        host = url_host(subject.main or "")
        return [f"{tool}(domain:{host})"] if host else []
    if subject.rules_match_paths:
        resolved = [str(ref.resolved) for ref in subject.paths if ref.resolved is not None][:1]
        return [f"{tool}({escape_pattern(path)})" for path in resolved]
    if subject.main is not None:
        return [f"{tool}({escape_pattern(subject.main)})"]
    return []


