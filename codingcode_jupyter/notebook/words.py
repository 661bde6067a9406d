"""What a person reads about a call: what will happen, why it is asked, who decided.

The engine's reasons are written for the model ("do not retry it — ask the user …") and
its layers have names ("confirm", "readonly"); none of that is shown as such. These
functions turn a request, an answer or an audit record into short plain sentences, with
paths relative to the project. They return plain text (Markdown-style backticks around
names); the HTML fronts escape it and turn the backticks into code.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any, Mapping

__all__ = [
    "LOCAL_SETTINGS",
    "relative",
    "home_short",
    "action",
    "why_asked",
    "consequences",
    "decision",
    "saved_rule",
    "rule_words",
    "rules_words",
    "rule_note",
    "plain",
    "outcome",
    "code_html",
    "plural",
]

# Where "Always allow" / "Never allow" write their rule, relative to the project.
LOCAL_SETTINGS = ".codingcode/settings.local.json"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def relative(text: str, project: Path | str | None, root: str = ".") -> str:
    """``text`` with the project's absolute path taken out of every path in it (the project
    itself named ``root``); paths elsewhere under the home start with ``~``."""
    if not project or not text:
        return text
    given = str(project).rstrip("/")
    real = os.path.realpath(given)
    # The longer prefix first: a real path may contain the given one (or the other way round).
    for prefix in sorted({given, real}, key=len, reverse=True):
        if prefix and prefix != "/":
            text = re.sub(re.escape(prefix) + r"(/|(?![\w.-]))", lambda m: "" if m.group(1) else root, text)
    return _home_tilde(text)


def _home_tilde(text: str) -> str:
    home = os.path.expanduser("~").rstrip("/")
    for prefix in sorted({home, os.path.realpath(home)}, key=len, reverse=True):
        if prefix and prefix != "/":
            text = re.sub(re.escape(prefix) + r"(?=/|(?![\w.-]))", "~", text)
    return text


def home_short(path: Path | str) -> str:
    """A path as a person reads it: under the home, with ``~``."""
    return _home_tilde(str(path))


def _tick(value: Any, limit: int = 80) -> str:
    """A value in backticks, on one line, shortened."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"`{text.replace('`', 'ˋ')}`"


def _diff_counts(preview: str) -> tuple[int, int, bool]:
    added = removed = 0
    created = False
    for line in preview.splitlines():
        if line.startswith("--- /dev/null"):
            created = True
        elif line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed, created


def _lines(value: Any) -> int:
    text = str(value or "")
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _where(project: Path | str | None, cwd: Any) -> str:
    name = Path(str(project)).name if project else "."
    if cwd and str(cwd) not in (".", "./"):
        cwd = relative(str(cwd), project)
        return _tick(cwd if str(cwd).startswith("/") else f"{name}/{str(cwd).strip('/')}/")
    return _tick(f"{name}/")


def action(tool: str, tool_input: Mapping[str, Any], *, key: str | None = None, preview: str = "",
           project: Path | str | None = None) -> str:
    """One sentence saying what the call will do: "create `a.py` (14 lines)", "run `pytest -q` in `demo/`"."""
    args = dict(tool_input or {})
    path = relative(str(args.get("path") or key or ""), project)
    if tool == "write_file":
        added, removed, created = _diff_counts(preview)
        if created or not preview:
            return f"create {_tick(path)} ({plural(_lines(args.get('content')), 'line')})"
        return f"overwrite {_tick(path)} (+{added} −{removed} lines)"
    if tool == "edit_file":
        added, removed, _ = _diff_counts(preview)
        return f"edit {_tick(path)} (+{added} −{removed} lines)" if preview else f"edit {_tick(path)}"
    if tool == "execute_command":
        return f"run {_tick(args.get('command', key or ''), 120)} in {_where(project, args.get('cwd'))}"
    if tool == "fetch_url":
        return f"fetch {_tick(args.get('url', key or ''), 120)}"
    if tool == "web_search":
        return f"search the web for {_tick(args.get('query', key or ''))}"
    if tool == "run_python":
        return f"run Python code in this kernel ({plural(_lines(args.get('code')), 'line')})"
    if tool == "insert_cell":
        return "insert a new cell into the notebook"
    if tool == "edit_notebook":
        changes = args.get("changes")
        return f"change the notebook ({plural(len(changes) if isinstance(changes, list) else 1, 'cell change')})"
    if tool == "run_cells":
        which = args.get("which") or "cell"
        target = {"cell": "cell", "above": "cells above cell", "all": "all cells"}.get(str(which), "cell")
        return f"run notebook {target}" + (f" {_tick(str(args.get('cell_id')))}" if which != "all" and args.get("cell_id") else "")
    if tool == "dispatch_agent":
        return f"start the sub-agent {_tick(args.get('agent', key or ''))}"
    if ":" in tool:
        server, name = tool.split(":", 1)
        what = f" with {_tick(relative(key, project))}" if key else ""
        return f"call {_tick(name)} on the MCP server {_tick(server)}{what}"
    what = f" on {_tick(relative(key, project))}" if key else ""
    return f"call {_tick(tool)}{what}"


_PROTECTED = re.compile(r"may change (.+?) \(")


def why_asked(layer: str, rule: str | None, reason: str, project: Path | str | None = None) -> str:
    """Why a person is asked, without layer names."""
    reason = relative(reason or "", project)
    if layer == "sandbox":
        return "The command sandbox is not available, so this command would run without its protection."
    if layer == "hooks":
        name = (rule or "").removeprefix("hook:") or "a hook"
        return f"The hook {_tick(name)} asks you to decide" + (f": {reason}" if reason and not reason.endswith("asks") else ".")
    if rule == "builtin:unresolved":
        problems = reason.removeprefix("Cannot be judged before it runs: ")
        return f"Part of it cannot be checked before it runs ({problems}), so you decide."
    if rule == "builtin:protected":
        found = _PROTECTED.search(reason)
        what = found.group(1) if found else "a protected file"
        return f"It may change {what}, which is always asked about."
    if rule and rule.startswith("builtin:"):
        detail = re.sub(r"^Built-in rule \S+: ", "", reason)
        return f"A built-in safety rule asks about this: {detail.rstrip('.')}."
    if layer == "rules" and rule:
        return f"Your settings ask before this (rule {_tick(rule)})."
    if layer == "outside":
        return "It reads outside the project, and what it reads goes to the model."
    return "Nothing in your settings allows this yet, so you decide."


def _rules(rules: list[str] | None) -> str:
    return ", ".join(_tick(r, 200) for r in (rules or []) if r)


# What a saved rule lets the agent do, in words: the one place a rule is worded for a person (cards,
# the dropdown of broader rules, the row after the click, the terminal). The rule's syntax is what
# lands in the settings file; it is shown only as a note after the words (``rule_note``).
_RULE = re.compile(r"([^()]+?)(?:\((.*)\))?", re.S)
_VERBS = {"write_file": "write", "edit_file": "edit", "read_file": "read", "search_files": "search",
          "fetch_url": "fetch", "web_search": "search the web for"}
_ANY = {"write_file": "write any file", "edit_file": "edit any file", "read_file": "read any file",
        "search_files": "search any files", "execute_command": "run any command", "fetch_url": "fetch any address",
        "web_search": "search the web for anything", "run_python": "run any Python code in this kernel"}


def rule_words(rule: str) -> str:
    """``write_file(notes/a.txt)`` as "write `notes/a.txt`", ``write_file(src/**)`` as "write files under
    `src/`", ``execute_command(pytest *)`` as "run `pytest` commands"."""
    found = _RULE.fullmatch(rule.strip())
    if found is None:
        return _tick(rule, 200)
    tool, pattern = found.group(1), found.group(2)
    if ":" in tool and pattern is None:
        server, name = tool.split(":", 1)
        return f"call {_tick(name)} on the MCP server {_tick(server)} (any arguments)"
    if pattern is None or pattern in ("*", "**"):
        return _ANY.get(tool, f"use {_tick(tool)} (any arguments)")
    pattern = re.sub(r"\\(.)", r"\1", pattern)  # the rule's escapes of * ? [ are not part of the name
    if pattern.startswith("domain:"):
        return f"fetch from {_tick(pattern.removeprefix('domain:'))}"
    if tool == "execute_command":
        if pattern.endswith(" *"):
            return f"run {_tick(pattern[:-2], 120)} commands"
        return f"run {_tick(pattern, 120)}"
    verb = _VERBS.get(tool)
    if pattern.endswith("/**") and verb:
        return f"{verb} files under {_tick(pattern[:-3] + '/')}"
    what = _tick(pattern, 120)
    return f"{verb} {what}" if verb else f"call {_tick(tool)} on {what}"


def rules_words(rules: list[str] | None) -> str:
    """Several rules saved together (one per command of a chain), in words."""
    return " and ".join(rule_words(r) for r in (rules or []) if r)


def rule_note(rules: list[str] | None) -> str:
    """The rules exactly as the settings file gets them, as a note after their words: "(rule `x`)".
    :func:`code_html` shows the note small, so the words come first."""
    kept = [r for r in (rules or []) if r]
    return f"({'rule' if len(kept) == 1 else 'rules'} {_rules(kept)})" if kept else ""


def plain(text: str) -> str:
    """Text of this module without its backticks, for places that show no code (a dropdown's options)."""
    return text.replace("`", "")


def consequences(allow_choices: list[list[str]] | None, deny_choices: list[list[str]] | None = None,
                 forced: bool = False, chosen: list[str] | None = None) -> str:
    """What "Always allow" and "Never allow" will do, before the click (``chosen``: the allow rules picked)."""
    allow = chosen or (allow_choices[0] if allow_choices else None)
    deny = deny_choices[0] if deny_choices else None
    if forced:
        first = "Always allow allows it this once (a built-in rule always asks about it)"
    elif allow:
        first = (f"Always allow lets the agent {rules_words(allow)} from now on without asking, saved in "
                 f"`{LOCAL_SETTINGS}` {rule_note(allow)}")
    else:
        first = "Always allow allows it this once (no rule fits this call)"
    second = (f"Never allow refuses it now and whenever it asks to {rules_words(deny)} again {rule_note(deny)}" if deny
              else "Never allow denies it this once")
    return f"{first}; {second}."


def saved_rule(answer: str | None, saved: list[str] | None, forced: bool = False, reason: str = "") -> str:
    """After "Always allow" / "Never allow": what the saved rule does from now on, and where ("" for the other answers)."""
    if answer not in ("always", "never"):
        return ""
    if "could not save the rule" in (reason or ""):
        return "the rule could not be saved"
    if answer == "always" and forced:
        return "allowed once; no rule saved (a built-in rule always asks about it)"
    if not saved:
        return "no rule saved (none fits this call)"
    if answer == "always":
        return f"from now on it may {rules_words(saved)} without asking {rule_note(saved)}, saved in `{LOCAL_SETTINGS}`"
    return f"from now on it is refused whenever it asks to {rules_words(saved)} {rule_note(saved)}, saved in `{LOCAL_SETTINGS}`"


def decision(record: Mapping[str, Any] | None, *, answer: str | None = None, waited: float | None = None) -> str:
    """Who decided and why, from an audit decision record: "allowed by you", "denied by rule `x`"."""
    if not record:
        return ""
    kind = str(record.get("decision") or record.get("kind") or "")
    by = str(record.get("by") or "")
    rule = record.get("rule") or ""
    layer = str(record.get("layer") or "")
    verb = "allowed" if kind == "allow" else "denied"
    wait = f" after {waited:.0f} s" if waited is not None and waited >= 1 else ""
    if by == "user":
        if answer == "always":
            return f"always allowed by you{wait}"
        if answer == "never":
            return f"never allowed by you{wait}"
        return f"{verb} by you{wait}"
    if by == "interrupted":
        return "interrupted while waiting for an answer"
    if by == "timeout":
        return "denied: nobody answered in time" + (f" ({waited:.0f} s)" if waited else "")
    if by == "nobody":
        return "denied: nobody was there to answer"
    if by == "policy":
        return f"denied by the policy (--approval-policy {record.get('policy') or 'rules'}: nobody is asked)"
    if by == "readonly":
        return "allowed: it changes nothing"
    if by == "reviewer":
        # The reason already reads "allowed by the reviewer: <its one line>".
        reason = str(record.get("reason") or "")
        return reason if reason.startswith("allowed by the reviewer") else f"{verb} by the reviewer"
    if by == "in_place":
        return "sent for your review on the cells"
    if by == "no_change":
        return "nothing to do: already as asked"
    if by == "rule":
        if str(rule).startswith("builtin:"):
            return f"{verb} by the built-in rule {_tick(str(rule).removeprefix('builtin:'))}"
        return f"{verb} by the rule {_tick(rule, 120)}"
    if by == "mode":
        mode = str(record.get("mode") or "")
        if kind == "deny" and mode == "plan":
            return "denied: plan mode runs only tools that read"
        return f"{verb} by {_tick(mode) if mode else 'the permission'} mode"
    if by == "hook":
        return f"{verb} by the hook {_tick(str(rule).removeprefix('hook:') or 'hook')}"
    if by == "sandbox":
        # The sandbox layer allows only under sandbox.autoAllow, and denies only when it cannot start.
        if kind == "allow":
            return "ran in the sandbox (auto-allowed)"
        return "denied: the command sandbox is not available"
    if by == "settings":
        return "denied: a settings file could not be read"
    if by == "error":
        return "denied: the question could not be shown"
    if layer == "readonly":
        return "allowed: it changes nothing"
    return verb if kind in ("allow", "deny") else kind


_OUTCOMES = {"ok": "done", "error": "failed", "denied": "not run", "interrupted": "interrupted", "running": "running",
             "waiting": "waiting for you"}


def outcome(status: str) -> str:
    """A call's status in words."""
    return _OUTCOMES.get(status, status)


_TICKED = re.compile(r"`([^`]+)`")
# A rule_note: the settings file's syntax, shown small after the words it follows.
_NOTE = re.compile(r"\((rules?) ((?:`[^`]+`(?:, )?)+)\)")


def code_html(text: str) -> str:
    """Plain text from this module as HTML: escaped, with backticked names as <code> and rule notes small."""
    from .widgets._text import reveal

    escaped = html.escape(reveal(text), quote=True)
    escaped = _NOTE.sub(lambda m: f'<small class="cc-rule" title="as saved in the settings file">({m.group(1)} '
                                  f"{m.group(2)})</small>", escaped)
    return _TICKED.sub(lambda m: f"<code>{m.group(1)}</code>", escaped)
