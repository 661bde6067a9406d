"""Allow rules that last one turn: a slash command's or a loaded skill's ``allowed-tools``.

They join the approval pipeline's session rules with a source ``turn:...`` and the session
takes them out when the turn ends (:func:`end_turn`). A project's command or skill allows
tools only once the person trusted the project (its trust item, kind ``toolGrant``); until
then nothing is added and the person is told, so the calls are asked about as usual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

__all__ = ["grant_for_turn", "end_turn", "TURN_SOURCE"]

TURN_SOURCE = "turn:"


def _untrusted(approver: Any, path: Path) -> bool:
    settings = getattr(approver, "settings", None)
    if settings is None:
        return True
    try:
        ignored = settings.current().ignored
    except ValueError:
        return True
    return any(item.kind == "toolGrant" and Path(item.path) == Path(path) for item in ignored)


def grant_for_turn(approver: Any, rules: tuple[str, ...], label: str, path: Path, *, project_file: bool,
                   notify: Callable[[str], None] | None = None) -> list[str]:
    """Add ``rules`` (``allowed-tools``) as allow rules for this turn; returns those added."""
    from .approval.rule_syntax import RuleError, parse_rule

    session_rules = getattr(approver, "session_rules", None)
    if session_rules is None or not rules:
        return []
    if project_file and _untrusted(approver, path):
        if notify is not None:
            notify(f"{label}: its allowed-tools ({', '.join(rules)}) do nothing until you trust this project "
                   "(%agent trust); its calls are asked about as usual.")
        return []
    added = []
    for text in rules:
        try:
            rule = parse_rule(text, "allow", f"{TURN_SOURCE}{label} ({path})")
        except RuleError as error:
            if notify is not None:
                notify(f"{label}: allowed-tools entry {text!r} is left out: {error}")
            continue
        session_rules.append(rule)
        added.append(text)
    return added


def end_turn(approver: Any) -> None:
    """Take out every rule a turn added."""
    session_rules = getattr(approver, "session_rules", None)
    if session_rules is not None:
        session_rules[:] = [rule for rule in session_rules if not str(rule.source).startswith(TURN_SOURCE)]
