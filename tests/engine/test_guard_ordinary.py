"""Ordinary work runs unasked (issue 33): the other side of the guard's attack corpus.

The developer commands (tests/data/attacks/developer.yaml) and the run_python snippets of data
work (tests/data/attacks/snippets.yaml) are judged by the real approval pipeline in the guard's
target project: each must be allowed in bypass mode, and in default mode once a rule of the
project's settings allows the tool. For run_python that is the allowlist's precision: a project's
rule allows only code the judge proves harmless, so a snippet it cannot follow fails here.
The attacks the same judge must stop are in test_guard_corpus.py.
"""

from __future__ import annotations

import json

import pytest

from tests.data.attacks.corpus import developer_commands, make_guard_home, make_guard_project, ordinary_snippets
from tests.engine.test_guard_corpus import judge

COMMANDS = developer_commands()
SNIPPETS = ordinary_snippets()


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    root = tmp_path_factory.mktemp("ordinary")
    home, project = make_guard_home(root), make_guard_project(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        # Code run in the kernel starts in the kernel's working directory: here, the project's.
        patch.chdir(project)
        yield project, home


def test_there_is_enough_ordinary_work() -> None:
    assert len(COMMANDS) >= 50 and len(SNIPPETS) >= 30


def _with_rule(project, rule: str):
    settings = project / ".codingcode" / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": [rule]}}))
    return settings


@pytest.mark.parametrize("mode", ["bypass", "rule"])
async def test_ordinary_commands_run_unasked(target, mode: str) -> None:
    project, home = target
    settings = _with_rule(project, "execute_command") if mode == "rule" else None
    try:
        asked = []
        for command in COMMANDS:
            verdict = await judge(project, home, "execute_command", {"command": command},
                                  "bypass" if mode == "bypass" else "default")
            if str(verdict.kind) != "allow":
                asked.append(f"{command!r}: {verdict.kind} by {verdict.layer} — {verdict.reason[:160]}")
        assert not asked, f"{len(asked)} ordinary commands not allowed:\n" + "\n".join(asked)
    finally:
        if settings is not None:
            settings.write_text("{}\n")


@pytest.mark.parametrize("mode", ["bypass", "rule"])
async def test_ordinary_snippets_run_unasked(target, mode: str) -> None:
    project, home = target
    settings = _with_rule(project, "run_python") if mode == "rule" else None
    try:
        asked = []
        for code in SNIPPETS:
            verdict = await judge(project, home, "run_python", {"code": code}, "bypass" if mode == "bypass" else "default")
            if str(verdict.kind) != "allow":
                asked.append(f"{code!r}: {verdict.kind} by {verdict.layer} — {verdict.reason[:200]}")
        assert not asked, f"{len(asked)} ordinary snippets not allowed:\n" + "\n".join(asked)
    finally:
        if settings is not None:
            settings.write_text("{}\n")


async def test_without_a_rule_default_mode_asks(target) -> None:
    """Control: the allow above comes from the mode or the rule, not from a judge that allows everything."""
    project, home = target
    command = await judge(project, home, "execute_command", {"command": "rm -rf build/"}, "default")
    snippet = await judge(project, home, "run_python", {"code": SNIPPETS[0]}, "default")
    assert str(command.kind) == "ask" and str(snippet.kind) == "ask", (command.reason, snippet.reason)
