"""The person's deny rules as the sandbox holds them (issue 45, item 4): a Read deny rule's paths are
hidden and an Edit deny rule's kept read-only, in both backends, for what no judge saw — a command
allowed for another reason, a name made later, a hard link. Each attack has its control beside it:
the same action on a path no rule names works.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode_jupyter.engine.deps import sandbox_settings
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.sandbox import CommandSandbox, landlock
from tests.engine.sandbox_helpers import BWRAP_PROBLEM, SECRET, run

VISIBLE = "VISIBLE-DENY-CONTROL-5e1"

BACKENDS = [
    pytest.param("bwrap", marks=pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bubblewrap: {BWRAP_PROBLEM}")),
    pytest.param("landlock", marks=pytest.mark.skipif(landlock.landlock_abi() < 1, reason="no Landlock")),
]


def _furnish(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": [
        "Read(./secrets/**)", "Read(**/*.pem)", "Edit(./config/prod.yaml)"]}}))
    (project / ".codingcode").mkdir()
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["read_file(data/private-*.csv)"]}}))
    (project / "secrets").mkdir()
    (project / "secrets" / "prod.json").write_text(SECRET)
    (project / "certs").mkdir()
    (project / "certs" / "server.pem").write_text(SECRET)
    (project / "certs" / "server.crt").write_text(VISIBLE)
    (project / "data").mkdir()
    (project / "data" / "private-users.csv").write_text(SECRET)
    (project / "data" / "public.csv").write_text(VISIBLE)
    (project / "config").mkdir()
    (project / "config" / "prod.yaml").write_text("mode: prod\n")
    (project / "config" / "dev.yaml").write_text("mode: dev\n")


def _sandbox(project: Path, home: Path, backend: str) -> CommandSandbox:
    effective = ProjectSettings(project).current()
    wanted = sandbox_settings(effective, project).model_copy(update={"backend": backend})
    sandbox = CommandSandbox.create(project, wanted, home=home)
    assert sandbox.active and sandbox.backend == backend, sandbox.unavailable_reason
    return sandbox


def test_the_rules_become_the_sandboxs_paths(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    _furnish(project)
    wanted = sandbox_settings(ProjectSettings(project).current(), project)
    real = str(project.resolve())
    assert f"{real}/**/secrets/**" in wanted.filesystem.denyRead or f"{real}/secrets/**" in wanted.filesystem.denyRead
    assert f"{real}/**/*.pem" in wanted.filesystem.denyRead
    assert f"{real}/data/private-*.csv" in wanted.filesystem.denyRead
    assert any(entry.endswith("config/prod.yaml") for entry in wanted.filesystem.denyWrite)
    assert not any("dev.yaml" in entry for entry in wanted.filesystem.denyWrite)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_what_a_read_deny_rule_names_is_hidden_from_every_command(project: Path, home: Path, backend: str,
                                                                      monkeypatch) -> None:
    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    _furnish(project)
    sandbox = _sandbox(project, home, backend)
    try:
        result = await run(sandbox, "cat secrets/prod.json certs/server.pem data/private-users.csv; grep -rs BEGIN . ; "
                                    "cat certs/server.crt data/public.csv")
        assert SECRET not in result.out, result
        assert result.out.count(VISIBLE) == 2, result  # the control: their neighbours are read
        # Made after the sandbox was: hidden from the next command on; a hard link of a secret too.
        (project / "certs" / "later.pem").write_text(SECRET)
        await run(sandbox, "ln secrets/prod.json linked.txt 2>/dev/null; ln certs/server.pem certs/alias.txt 2>/dev/null; true")
        (project / "data" / "private-more.csv").write_text(SECRET)
        later = await run(sandbox, "cat certs/later.pem data/private-more.csv certs/alias.txt linked.txt; cat certs/server.crt")
        assert SECRET not in later.out and VISIBLE in later.out, later
    finally:
        await sandbox.aclose()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_what_an_edit_deny_rule_names_stays_as_it_was(project: Path, home: Path, backend: str, monkeypatch) -> None:
    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    _furnish(project)
    sandbox = _sandbox(project, home, backend)
    try:
        await run(sandbox, "echo 'mode: owned' > config/prod.yaml; echo 'mode: edited' > config/dev.yaml")
    finally:
        await sandbox.aclose()
    assert (project / "config" / "prod.yaml").read_text() == "mode: prod\n"
    assert (project / "config" / "dev.yaml").read_text() == "mode: edited\n"  # the control


@pytest.mark.parametrize("backend", BACKENDS)
async def test_without_the_rules_the_same_commands_read_everything(project: Path, home: Path, backend: str,
                                                                 monkeypatch) -> None:
    """The positive control of the file: the furnishing is readable when no rule names it."""
    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    _furnish(project)
    (project / ".claude" / "settings.json").write_text("{}")
    (project / ".codingcode" / "settings.json").write_text("{}")
    sandbox = _sandbox(project, home, backend)
    try:
        result = await run(sandbox, "cat secrets/prod.json certs/server.pem data/private-users.csv")
    finally:
        await sandbox.aclose()
    assert result.out.count(SECRET) == 3, result
