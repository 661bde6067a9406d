"""The rule tables' own examples: checked before the first judgement, and a broken one stops
every judgement by name (the check moved from import time to first use, so this must hold)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval import builtin_rules, readonly_commands
from codingcode_jupyter.engine.approval.examples import CheckedOnce
from codingcode_jupyter.engine.approval.subject import build_subject
from codingcode_jupyter.engine.tools.builtin import builtin_tools

TOOLS = {tool.name: tool for tool in builtin_tools()}


def _subject(command: str, project: Path):
    return build_subject(TOOLS["execute_command"], {"command": command}, project)


def test_a_builtin_rule_whose_example_no_longer_matches_stops_the_first_judgement_by_name(monkeypatch, tmp_path):
    rule = builtin_rules.BUILTIN_RULES[0]
    broken = dataclasses.replace(rule, must_match=(("execute_command", {"command": "ls"}),))
    monkeypatch.setattr(builtin_rules, "BUILTIN_RULES", (broken, *builtin_rules.BUILTIN_RULES[1:]))
    monkeypatch.setattr(builtin_rules, "examples_checked", CheckedOnce(builtin_rules._check_examples))
    for _ in range(2):  # not only once: nothing is judged until the table is sound
        with pytest.raises(builtin_rules.BuiltinRuleError, match=rule.name):
            builtin_rules.check_builtin(_subject("ls", tmp_path))


def test_a_read_only_entry_whose_example_writes_stops_the_first_judgement_by_name(monkeypatch, tmp_path):
    entry = readonly_commands.READ_ONLY_PROGRAMS[0]
    broken = dataclasses.replace(entry, must=(*entry.must, f"{entry.name} x > out.txt"))
    monkeypatch.setattr(readonly_commands, "READ_ONLY_PROGRAMS", (broken, *readonly_commands.READ_ONLY_PROGRAMS[1:]))
    monkeypatch.setattr(readonly_commands, "examples_checked", CheckedOnce(readonly_commands._check_examples))
    with pytest.raises(readonly_commands.ReadOnlyTableError, match=entry.name):
        readonly_commands.read_only_command(_subject("ls", tmp_path))


def test_the_sound_tables_pass_their_check_and_judge():
    # The positive control of the two above, in a fresh interpreter where nothing was checked yet.
    code = ("import json\nfrom pathlib import Path\n"
            "from codingcode_jupyter.engine.approval import builtin_rules as b, readonly_commands as r\n"
            "from codingcode_jupyter.engine.approval.subject import build_subject\n"
            "from codingcode_jupyter.engine.tools.builtin import builtin_tools\n"
            "t = {x.name: x for x in builtin_tools()}['execute_command']\n"
            "s = build_subject(t, {'command': 'sudo ls'}, Path('/tmp'))\n"
            "before = [b.examples_checked.done, r.examples_checked.done]\n"
            "hits = [h.action for h in b.check_builtin(s)]\n"
            "print(json.dumps([before, [b.examples_checked.done], hits, r.read_only_command(s)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [[False, False], [True], ["deny"], None]
