"""No sandbox at all: read-only commands are not asked because of it; everything else still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode_jupyter.__main__ import check_permission
from codingcode_jupyter.engine.sandbox import CommandSandbox
from codingcode_jupyter.engine.settings import SandboxSettings


@pytest.mark.parametrize("mode", ["bypass", "default", "acceptEdits"])
@pytest.mark.parametrize("command", ["ls -la", "git status", "wc -l README.md", "grep -rn TODO src"])
async def test_read_only_commands_are_not_asked_for_a_missing_sandbox(tmp_path: Path, mode: str, command: str) -> None:
    (tmp_path / "README.md").write_text("x\n")
    result = await check_permission(tmp_path, "execute_command", {"command": command}, mode, "off")
    assert result["decision"] == "allow" and result["layer"] != "sandbox", result


@pytest.mark.parametrize("command", ["touch made.txt", "pytest -q", "python build.py"])
async def test_other_commands_are_still_asked_in_bypass(tmp_path: Path, command: str) -> None:
    result = await check_permission(tmp_path, "execute_command", {"command": command}, "bypass", "off")
    assert result["decision"] == "ask" and result["layer"] == "sandbox", result
    # Control: with the sandbox there, bypass runs them.
    on = await check_permission(tmp_path, "execute_command", {"command": command}, "bypass", "on")
    assert on["decision"] == "allow", on


def test_landlock_with_an_allowlist_does_not_vouch_for_the_network(tmp_path: Path) -> None:
    with_list = SandboxSettings.model_validate({"network": {"allowedDomains": ["example.com"]}})
    landlock = CommandSandbox(tmp_path, with_list, bwrap=None, unavailable_reason=None, backend="landlock")
    assert not landlock.network_exact
    assert CommandSandbox(tmp_path, SandboxSettings(), bwrap=None, unavailable_reason=None,
                          backend="landlock").network_exact  # no TCP at all: exact
    assert CommandSandbox(tmp_path, with_list, bwrap="bwrap", unavailable_reason=None).network_exact
