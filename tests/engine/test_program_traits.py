"""The program table: one row per program, the sets the judge reads computed from it."""

from __future__ import annotations

import ast
from pathlib import Path

from codingcode_jupyter.engine.approval import program_traits
from codingcode_jupyter.engine.approval.candidates import allow_candidates
from codingcode_jupyter.engine.approval.subject import build_subject
from codingcode_jupyter.engine.tools.builtin import builtin_tools

SOURCE = Path(program_traits.__file__).read_text(encoding="utf-8")


def duplicated_rows(source: str) -> list[str]:
    """Program names written twice in the PROGRAMS literal (a dict literal keeps the last silently)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "PROGRAMS":
            assert isinstance(node.value, ast.Dict)
            keys = [key.value for key in node.value.keys if isinstance(key, ast.Constant)]
            return sorted({key for key in keys if keys.count(key) > 1})
    raise AssertionError("no PROGRAMS table")


def test_every_program_is_one_row():
    assert duplicated_rows(SOURCE) == []
    # Positive control: a second `uv` row is noticed.
    assert duplicated_rows(SOURCE.replace("    'uv': P(", "    'uv': P('printer'),\n    'uv': P(", 1)) == ["uv"]


def test_the_sets_are_read_from_the_rows():
    t = program_traits
    assert {"sudo", "doas", "pkexec"} <= t.PRIVILEGE <= t.SPECULATIVE_NAMES
    assert {"rm", "shutdown"} <= t.SPECULATIVE_NAMES - t.PRIVILEGE
    assert t.COMMAND_WRAPPERS["uv"] == "run" and t.COMMAND_WRAPPERS["npx"] == ""
    assert ("uv", "run") in t.NESTED_SUBCOMMANDS and ("npm", "run") in t.NESTED_SUBCOMMANDS
    assert t.SHELLS <= t.NO_WILDCARD and "bash" in t.SHELLS and "python3" in t.INTERPRETERS
    assert "echo" in t.PRINTERS <= t.NEVER_RUN_ARGS


def test_a_script_runner_keeps_the_script_in_the_offered_rule(tmp_path):
    """`npm run test` is offered `npm run test *`, never `npm run *` (which would run any script)."""
    shell = next(tool for tool in builtin_tools() if tool.name == "execute_command")
    offered = [rule for choice in allow_candidates(build_subject(shell, {"command": "npm run test"}, tmp_path))
               for rule in choice]
    assert "execute_command(npm run test *)" in offered and "execute_command(npm run *)" not in offered
    git = [rule for choice in allow_candidates(build_subject(shell, {"command": "git diff HEAD"}, tmp_path))
           for rule in choice]
    assert "execute_command(git diff *)" in git
