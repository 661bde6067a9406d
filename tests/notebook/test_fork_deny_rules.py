"""The person's Read deny rules hold in the confined copy of the kernel too: its Landlock plan is
the commands' (issue 45, item 4), so code no judge could read finds the named files unreadable."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from codingcode_jupyter.engine.deps import sandbox_settings
from codingcode_jupyter.engine.project_settings import ProjectSettings
from codingcode_jupyter.engine.sandbox import CommandSandbox
from codingcode_jupyter.notebook.kernel.fork import fork_unavailable, run_in_fork

SECRET = "FORK-DENY-SECRET-91d"
VISIBLE = "FORK-DENY-VISIBLE-91d"


@pytest.mark.parametrize("rules", [["Read(./secrets/**)", "Read(**/*.pem)"], []], ids=["denied", "control"])
def test_code_in_the_fork_cannot_read_what_a_deny_rule_names(tmp_path: Path, monkeypatch, rules: list[str]) -> None:
    reason = fork_unavailable()
    if reason:
        pytest.skip(reason)
    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": rules}}))
    (project / "secrets").mkdir()
    (project / "secrets" / "prod.json").write_text(SECRET)
    (project / "keys").mkdir()
    (project / "keys" / "a.pem").write_text(SECRET)
    (project / "keys" / "a.txt").write_text(VISIBLE)
    wanted = sandbox_settings(ProjectSettings(project).current(), project).model_copy(update={"backend": "landlock"})
    sandbox = CommandSandbox.create(project, wanted)
    plan = sandbox.compared_landlock_plan(sandbox.watch_host(landlock=True))
    # Names built at run time: no judge could tell what this reads.
    code = ("import os\nout = []\nfor d in sorted(os.listdir('.')):\n    if os.path.isdir(d):\n"
            "        for n in sorted(os.listdir(d)) if os.access(d, os.R_OK) else []:\n"
            "            try:\n                out.append(open(os.path.join(d, n)).read())\n"
            "            except OSError as e:\n                out.append(type(e).__name__)\n"
            "        try:\n            os.listdir(d)\n        except OSError as e:\n            out.append(type(e).__name__)\n"
            "print(out)")
    monkeypatch.chdir(project)
    result = asyncio.run(run_in_fork({}, None, code, timeout=30, keep=[], plan=plan, progress=lambda _line: None))
    asyncio.run(sandbox.aclose())
    assert result.confinement_error is None, result.confinement_error
    assert VISIBLE in result.stdout, result.stdout + result.stderr
    if rules:
        assert SECRET not in result.stdout, result.stdout
    else:
        assert result.stdout.count(SECRET) == 2, result.stdout  # the control: no rule, both are read
